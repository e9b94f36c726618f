/**
 * What the status bar, the background panel and `/bg` show about jobs: plain functions of the
 * manager's snapshot (`manager.jobs()`, frozen records) and the session's usage, so a render
 * and a test read the same text.
 */
import type { JobActivityView } from '../main/session/job-activity.js';
import type { JobRecord } from '../main/ledger/ledger.js';
import type { PoolSnapshot } from '../main/limits/budget-pool.js';
import { formatUsd } from '../shared/budget.js';
import { costOf, type ModelTable } from '../shared/models.js';
import { totalUsage, type UsageByModel } from '../shared/usage.js';
import { escapeForTerminal, oneLine, seconds } from '../main/views/terminal-lines.js';
import { elapsedMs, sleepingUntil } from '../main/views/job-view.js';
import { transcriptLines } from '../main/views/transcript-lines.js';
import type { TranscriptPage } from '../main/jobs/transcripts.js';

type Job = Readonly<JobRecord>;

/** The seed's live count: "⚙ 2 background agents running · 1 queued". */
export function countText(jobs: readonly Job[]): string {
  const running = jobs.filter((j) => j.state === 'running').length;
  const queued = jobs.filter((j) => j.state === 'queued').length;
  if (running === 0 && queued === 0) return '⚙ no background agents running';
  const head = `⚙ ${running} background agent${running === 1 ? '' : 's'} running`;
  return queued > 0 ? `${head} · ${queued} queued` : head;
}

/**
 * The agent waves (the session's own jobs spawned in one turn) still waiting for their
 * follow-up: "wave 1: 2 of 3 left". A user's job belongs to no wave.
 */
export function wavesText(jobs: readonly Job[]): string | undefined {
  const waves = new Map<number, { total: number; left: number }>();
  for (const job of jobs) {
    if (job.wave === null || job.parentJobId !== undefined || job.role === 'user') continue;
    const wave = waves.get(job.wave) ?? { total: 0, left: 0 };
    wave.total++;
    if (job.state !== 'ended') wave.left++;
    waves.set(job.wave, wave);
  }
  const waiting = [...waves].filter(([, w]) => w.left > 0).map(([n, w]) => `wave ${n}: ${w.left} of ${w.total} left`);
  return waiting.length > 0 ? waiting.join(', ') : undefined;
}

export function compactTokens(n: number): string {
  return n >= 1_000_000 ? `${(n / 1_000_000).toFixed(1)}M` : n >= 1_000 ? `${(n / 1_000).toFixed(1)}k` : String(n);
}

/** The session budget left, short enough for the status bar: `budget left $0.40/$2.00 · 199.3k/200.0k tokens`. */
export function poolText(pool: PoolSnapshot | undefined): string | undefined {
  if (!pool) return undefined;
  const parts: string[] = [];
  if (pool.maxCostUsd !== undefined) parts.push(`${formatUsd(pool.remainingUsd ?? 0)}/${formatUsd(pool.maxCostUsd)}`);
  if (pool.maxTokens !== undefined) parts.push(`${compactTokens(pool.remainingTokens ?? 0)}/${compactTokens(pool.maxTokens)} tokens`);
  return `budget left ${parts.join(' · ')}`;
}

/** Tokens by role bucket (`primary`, `primary:subagent`, `user:subagent`, …), then the priced cost. */
export function usageText(byBucket: Record<string, UsageByModel>, models: ModelTable): string {
  const buckets = Object.entries(byBucket).filter(([, m]) => totalUsage(m).totalTokens > 0);
  if (buckets.length === 0) return 'tokens: none yet';
  const parts = buckets.map(([bucket, m]) => `${bucket} ${compactTokens(totalUsage(m).totalTokens)}`);
  const cost = buckets.reduce((sum, [, m]) => sum + costOf(models, m).usd, 0);
  const priced = buckets.some(([, m]) => costOf(models, m).unpriced.length < Object.keys(m).length);
  return `tokens ${parts.join(' · ')}${priced ? ` · $${cost.toFixed(4)}` : ''}`;
}

export function elapsedText(job: Job, now: number): string {
  if (job.startedAt === undefined) return job.state === 'ended' ? '-' : 'waiting';
  return seconds(elapsedMs(job, now));
}

export function statusText(job: Job): string {
  if (job.state !== 'ended') {
    if (job.awaitingApproval?.length) return 'awaiting-approval';
    if (job.waitingForChildren) return 'waiting-children';
    const wakes = sleepingUntil(job);
    return wakes !== null ? `sleeping until ${new Date(wakes).toISOString().slice(11, 19)}` : job.state;
  }
  const status = job.status ?? 'ended';
  // A guess cancelled (or set aside) as not needed: shown, never delivered.
  return job.speculative === 'dropped' ? `${status} (speculative)` : status;
}

/** Jobs in tree order: each session job, then its children (depth-first), oldest first. */
export function treeOrder(jobs: readonly Job[]): Job[] {
  const byParent = new Map<string | undefined, Job[]>();
  const ids = new Set(jobs.map((j) => j.id));
  for (const job of [...jobs].sort((a, b) => a.queuedAt - b.queuedAt)) {
    // A child whose parent record is gone (retention) is shown at the top level.
    const parent = job.parentJobId !== undefined && ids.has(job.parentJobId) ? job.parentJobId : undefined;
    const list = byParent.get(parent) ?? [];
    list.push(job);
    byParent.set(parent, list);
  }
  const out: Job[] = [];
  const visit = (parent: string | undefined) => {
    for (const job of byParent.get(parent) ?? []) {
      out.push(job);
      visit(job.id);
    }
  };
  visit(undefined);
  return out;
}

/** One panel row: tree indent, id, name or label, agent, status, elapsed, current tool. */
export function panelRow(job: Job, activity: JobActivityView | undefined, now: number): string {
  const indent = '  '.repeat(Math.max(0, (job.depth ?? 1) - 1));
  const title = job.name ? escapeForTerminal(job.name) : `"${oneLine(job.label, 40)}"`;
  const agent = job.agent ? ` [${escapeForTerminal(job.agent)}]` : job.role === 'user' ? ' [user]' : '';
  const tool = job.state === 'running' ? activity?.toolCalls.at(-1)?.name : undefined;
  return `${indent}${job.parentJobId ? '└ ' : ''}${job.id} ${title}${agent}  ${statusText(job)}  ${elapsedText(job, now)}${tool ? `  ▸ ${escapeForTerminal(tool)}` : ''}`;
}

/** `/bg list`: id, status, elapsed, label; nested jobs under their parent. */
export function listLines(jobs: readonly Job[], now: number): string[] {
  if (jobs.length === 0) return ['no background jobs yet'];
  return treeOrder(jobs).map((job) => {
    const indent = '  '.repeat(Math.max(0, (job.depth ?? 1) - 1));
    const who = job.role === 'user' ? ' (you)' : '';
    return `${indent}${job.id.padEnd(8)} ${statusText(job).padEnd(10)} ${elapsedText(job, now).padStart(7)}  "${oneLine(job.label, 60)}"${who}${job.name ? ` name=${escapeForTerminal(job.name)}` : ''}`;
  });
}

/** A job's detail (`/bg show`, the panel's detail view): its fields, last tool calls and full result. */
export function detailLines(job: Job, activity: JobActivityView | undefined, now: number): string[] {
  const lines = [
    `${job.id}${job.name ? ` (${escapeForTerminal(job.name)})` : ''} "${oneLine(job.label, 80)}"`,
    `  role ${job.role}${job.agent ? `, agent ${escapeForTerminal(job.agent)}` : ', fork of the parent'}${job.parentJobId ? `, child of ${job.parentJobId} (depth ${job.depth ?? 2})` : ''}${job.wave !== null ? `, wave ${job.wave}` : ''}`,
    `  ${statusText(job)}, ${elapsedText(job, now)}, ${totalUsage(job.usage).totalTokens} tokens, ${job.iterations} model calls${job.deliveredInTurn !== undefined ? `, delivered into turn ${job.deliveredInTurn}` : ''}`,
    `  task: ${oneLine(job.task, 300)}`,
  ];
  for (const call of activity?.toolCalls ?? []) lines.push(`  ▸ ${escapeForTerminal(call.name)}(${oneLine(call.args, 80)})`);
  if (job.error && job.status !== 'ok') lines.push(`  error ${job.error.code}: ${oneLine(job.error.message, 300)}`);
  if (job.state !== 'ended') {
    if (activity?.text) lines.push('  latest text:', ...indentBlock(activity.text));
  } else if (job.resultDropped) {
    lines.push('  (result dropped by retention after delivery)');
  } else {
    lines.push('  result:', ...indentBlock(job.resultText ?? ''));
  }
  return lines;
}

/** The steps under a job's detail (the panel's detail view): its transcript, escaped (transcript-lines.ts). */
export function transcriptDetailLines(page: TranscriptPage | undefined): string[] {
  if (!page || page.total === 0) return ['  transcript: no steps kept'];
  const left = page.omitted > 0 ? `, ${page.omitted} left out by the cap` : '';
  return [`  transcript: ${page.total} step(s)${left}`, ...transcriptLines(page.steps, { maxBodyLines: 6, indent: '      ' }).map((line) => `  ${line}`)];
}

function indentBlock(text: string): string[] {
  return text.split(/\r?\n/).map((line) => `    ${escapeForTerminal(line)}`);
}
