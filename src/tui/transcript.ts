/**
 * The chat's transcript lines: what each session and manager event looks like as one final
 * line (tool calls folded to one line each). Every piece of model or job text is escaped here,
 * so nothing a model wrote can move the cursor or recolour the terminal.
 */
import type { JobRecord } from '../main/ledger/ledger.js';
import { escapeForTerminal, jobLine, oneLine } from '../main/views/terminal-lines.js';
import type { JobColorState } from './state-colors.js';

export type EntryKind = 'info' | 'user' | 'answer' | 'tool' | 'job' | 'delivered' | 'alert' | 'notice' | 'error' | 'command';

/** One final transcript line (or block, for an answer): never changed once added. */
export interface TranscriptEntry {
  id: number;
  kind: EntryKind;
  text: string;
  /** A job's line: its state when the line was written, for its colour (the text says it in words too). */
  jobState?: JobColorState;
}

/** Indentation for a nested job: one step per level below the session's own jobs. */
export function nestIndent(job: Pick<JobRecord, 'depth' | 'parentJobId'>): string {
  return job.parentJobId ? `${'  '.repeat(Math.max(0, (job.depth ?? 2) - 1))}└ ` : '';
}

export function spawnedLine(job: Readonly<JobRecord>): string {
  const who = job.role === 'user' ? 'started by you' : job.parentJobId ? `spawned by ${job.parentJobId}` : `spawned in turn ${job.wave ?? '?'}`;
  const agent = job.agent ? ` [${escapeForTerminal(job.agent)}]` : '';
  return `${nestIndent(job)}● ${job.id}${agent} "${oneLine(job.label, 60)}" ${who}`;
}

/** The line a job gets when it lands: mark, id, label, status, time, tokens (and why, if it failed). */
export function doneLine(job: Readonly<JobRecord>): string {
  return `${nestIndent(job)}${escapeForTerminal(jobLine(job))}`;
}

export function deliveredLine(turn: number, count: number): string {
  return `↳ ${count} result${count === 1 ? '' : 's'} delivered into turn ${turn}`;
}

/** A tool call of the parent, folded to one line; one that starts a background job (its event's `background`) says so. */
export function toolLine(name: string, argsPreview: string, background = false): string {
  return `  ▸ ${escapeForTerminal(name)}(${oneLine(argsPreview, 80)})${background ? ' ⇢ background' : ''}`;
}

/** An answer: every line escaped (newlines kept, other controls shown as escapes). */
export function answerText(text: string): string {
  return text
    .split(/\r?\n/)
    .map((line) => escapeForTerminal(line))
    .join('\n')
    .trim();
}

/** Ids named in a notice; the rest are counted. */
const NOTICE_MAX_IDS = 5;

/**
 * The line for a turn the person cancelled (Esc), saying what happens to each job: an
 * `agent_<name>` call stopped before its job returned cancels that job (named, with its agent);
 * every other live job — a backgrounded agent call's among them — keeps running (named).
 */
export function cancelledTurnNotice(turn: number, cancelled: readonly string[], jobs: readonly Readonly<JobRecord>[]): string {
  const gone = new Set(cancelled);
  const parts = [`⊘ turn ${turn} cancelled`];
  if (cancelled.length > 0) {
    const named = cancelled.map((id) => {
      const agent = jobs.find((j) => j.id === id)?.agent;
      return agent ? `${id} [${escapeForTerminal(agent)}]` : id;
    });
    parts.push(`its agent call's job ${idList(named)} ${cancelled.length === 1 ? 'is' : 'are'} cancelled with it`);
  }
  const live = jobs.filter((j) => j.state !== 'ended' && !gone.has(j.id)).map((j) => (j.backgrounded ? `${j.id}, backgrounded` : j.id));
  const n = live.length;
  if (n > 0) parts.push(`${n} background job${n === 1 ? ' keeps' : 's keep'} running (${idList(live)})`);
  return parts.join('; ');
}

function idList(ids: readonly string[]): string {
  const shown = ids.slice(0, NOTICE_MAX_IDS).join(', ');
  return ids.length > NOTICE_MAX_IDS ? `${shown} and ${ids.length - NOTICE_MAX_IDS} more` : shown;
}
