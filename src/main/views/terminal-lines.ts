/**
 * What the CLI and the chat print about jobs and usage, as terminal lines: a finished job in one
 * line, token and cost lines, and the escaping every line of a model's text goes through
 * (terminal-text.ts). The JSON of a job is job-view.ts.
 */
import type { JobRecord } from '../ledger/ledger.js';
import { totalUsage, type UsageByModel } from '../../shared/usage.js';
import { formatUsd } from '../../shared/budget.js';
import { costOf, type ModelTable } from '../../shared/models.js';
import { describePool, type PoolSnapshot } from '../limits/budget-pool.js';
import { escapeForTerminal } from '../../shared/terminal-text.js';
import type { PendingApproval } from '../../shared/approvals.js';

export function seconds(ms: number | undefined): string {
  return ms === undefined ? '?' : `${(ms / 1000).toFixed(1)}s`;
}

/** A finished job as one terminal line (model text escaped); an unfinished one (`jobs show`) says its state. */
export function jobLine(job: JobRecord): string {
  if (job.state !== 'ended') return `… ${job.id}${job.agent ? ` [${escapeForTerminal(job.agent)}]` : ''} "${escapeForTerminal(job.label)}" ${job.state}`;
  const mark = job.status === 'ok' ? '✓' : job.status === 'partial' ? '◐' : job.status === 'cancelled' ? '⊘' : '✗';
  const took = job.startedAt !== undefined && job.endedAt !== undefined ? seconds(job.endedAt - job.startedAt) : '-';
  const tokens = totalUsage(job.usage).totalTokens;
  const why = job.error && job.status !== 'ok' && job.status !== 'partial' ? ` — ${oneLine(job.error.message, 160)}` : '';
  const who = job.agent ? ` [${escapeForTerminal(job.agent)}]` : '';
  const over = job.budgetExceeded ? ` — budget ${job.budgetExceeded} ran out` : '';
  // The label and the error are a model's text: escaped, so they cannot drive the terminal.
  return `${mark} ${job.id}${who} "${escapeForTerminal(job.label)}" ${job.status} in ${took}, ${tokens} tokens${over}${why}`;
}

/** A call waiting for an approval as one terminal line: whose, what, and how long is left to answer (model text escaped). */
export function approvalLine(pending: PendingApproval, now = Date.now()): string {
  const left = Math.max(0, pending.expiresAt - now);
  return `? ${pending.jobId} "${escapeForTerminal(pending.label)}" awaits approval: ${escapeForTerminal(pending.tool)} (${oneLine(pending.summary, 160)}), call ${escapeForTerminal(pending.callId)}, ${seconds(left)} left`;
}

/** Token totals by bucket and model, one line each. */
export function usageLines(byBucket: Record<string, UsageByModel>): string[] {
  const lines: string[] = [];
  for (const [bucket, byModel] of Object.entries(byBucket)) {
    for (const [model, u] of Object.entries(byModel)) {
      lines.push(
        `  ${bucket.padEnd(20)} ${model.padEnd(24)} ${String(u.requests).padStart(5)} requests ${String(u.promptTokens).padStart(9)} in ${String(u.completionTokens).padStart(8)} out`,
      );
    }
  }
  return lines;
}

/**
 * The totals' cost line: dollars of the priced models, and the models counted in tokens only
 * (no price in `models`); with a session pool, what is left of it. Empty when there is nothing to say.
 */
export function costLines(models: ModelTable, byBucket: Record<string, UsageByModel>, pool?: PoolSnapshot): string[] {
  const all: UsageByModel = {};
  for (const byModel of Object.values(byBucket)) {
    for (const [model, u] of Object.entries(byModel)) {
      const had = all[model];
      all[model] = had
        ? {
            promptTokens: had.promptTokens + u.promptTokens,
            completionTokens: had.completionTokens + u.completionTokens,
            totalTokens: had.totalTokens + u.totalTokens,
            requests: had.requests + u.requests,
          }
        : { ...u };
    }
  }
  const cost = costOf(models, all);
  const lines: string[] = [];
  if (Object.keys(all).length > 0) {
    const unpriced = cost.unpriced.length ? `; no price in "models" (tokens only): ${cost.unpriced.join(', ')}` : '';
    lines.push(`cost: ${formatUsd(cost.usd)}${unpriced}`);
  }
  if (pool) lines.push(`${describePool(pool)}; spent ${formatUsd(pool.spentUsd)}, ${pool.spentTokens} tokens`);
  return lines;
}

export { escapeForTerminal, escapeLinesForTerminal, jsonForTerminal } from '../../shared/terminal-text.js';

/**
 * A short, escaped, quoted preview of untrusted input for a one-line message: at most
 * `maxChars` characters of the input (before escaping), with an ellipsis and the full length
 * when cut.
 */
export function preview(text: string, maxChars = 60): string {
  // Array.from: cut between code points, never inside a surrogate pair.
  const chars = Array.from(text);
  const head = chars.length > maxChars ? chars.slice(0, maxChars).join('') : text;
  const cut = chars.length > maxChars ? `… (${chars.length} chars)` : '';
  return `"${escapeForTerminal(head).replace(/"/g, '\\"')}"${cut}`;
}

/** One line of a message built from untrusted text: escaped and capped. */
export function oneLine(text: string, maxChars = 300): string {
  const flat = escapeForTerminal(text.replace(/\s*\n\s*/g, '; '));
  return flat.length > maxChars ? `${flat.slice(0, maxChars - 1)}…` : flat;
}
