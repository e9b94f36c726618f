/**
 * Approvals in the chat: the line a job's question gets, the prompt shown while any waits, and
 * `/bg approve <id|name> [always]` / `/bg deny <id|name> [reason]`, which answer the oldest
 * question of that job (BackgroundManager.approve, `by: 'chat'`). Every piece of model or job
 * text is escaped: a tool's arguments are the model's words.
 */
import { escapeForTerminal, oneLine } from '../main/views/terminal-lines.js';
import type { BackgroundManager } from '../main/jobs/manager.js';
import type { ApprovalRecord, PendingApproval } from '../shared/approvals.js';

export const APPROVE_HELP_LINES = [
  '/bg approve <id|name> [always]  run the tool call a job waits to make (always: that tool without asking for the rest of the session)',
  "/bg deny <id|name> [reason]     refuse it: the job's model reads the reason and goes on without it",
];

/** The transcript line of a new question. */
export function approvalRequestedLine(pending: Readonly<PendingApproval>): string {
  return `⏸ ${pending.jobId} "${oneLine(pending.label, 40)}" asks to run ${escapeForTerminal(pending.tool)}: ${oneLine(pending.summary, 160)} — /bg approve ${pending.jobId} [always] · /bg deny ${pending.jobId} [reason]`;
}

/** The transcript line of an answer, whoever gave it (the chat, HTTP, the parent's model, the timeout). */
export function approvalResolvedLine(record: Readonly<ApprovalRecord>): string {
  const what =
    record.decision === 'allow' ? `allowed${record.remember === 'session' ? ' for the session' : record.remember === 'job' ? ' for the job' : ''}` : 'denied';
  const why = record.reason ? `: ${oneLine(record.reason, 120)}` : '';
  return `${record.decision === 'allow' ? '✓' : '✗'} ${record.jobId} ${escapeForTerminal(record.tool)} ${what} by ${escapeForTerminal(record.by)}${why}`;
}

/** The prompt above the input while jobs wait: one line per question, oldest first, at most `max`. */
export function approvalPromptLines(pending: readonly Readonly<PendingApproval>[], max = 3): string[] {
  const lines = pending.slice(0, max).map((p) => `${p.jobId} "${oneLine(p.label, 30)}" wants ${escapeForTerminal(p.tool)}: ${oneLine(p.summary, 80)}`);
  if (pending.length > max) lines.push(`… and ${pending.length - max} more (/bg list)`);
  const first = pending[0]?.jobId ?? '<id>';
  lines.push(`/bg approve ${first} [always] · /bg deny ${first} [reason]`);
  return lines;
}

/**
 * `/bg approve` and `/bg deny`: `args` is the job, then `always` (approve) or the reason (deny).
 * A job that waits for nothing, or an answer the manager refuses, is said, not thrown.
 */
export function approveCommand(
  manager: Pick<BackgroundManager, 'approve' | 'approvals' | 'find'>,
  args: string,
  decision: 'allow' | 'deny',
  say: (text: string) => void,
): void {
  const [target = '', ...rest] = args.trim().split(/\s+/);
  const tail = rest.join(' ');
  if (!target || (decision === 'allow' && tail !== '' && tail.toLowerCase() !== 'always')) {
    return say(decision === 'allow' ? 'usage: /bg approve <id|name> [always]' : 'usage: /bg deny <id|name> [reason]');
  }
  const job = manager.find(target);
  if (!job) return say(`no background job with id or name "${oneLine(target, 60)}"`);
  const question = manager.approvals().find((p) => p.jobId === job.id);
  if (!question) return say(`${job.id} "${oneLine(job.label, 60)}" is not waiting for an approval`);
  const remember = decision === 'allow' && tail !== '' ? { remember: 'session' as const } : {};
  const reason = decision === 'deny' && tail !== '' ? { reason: tail } : {};
  // The record's own line comes from the manager's 'approval-resolved' event (the controller says it).
  manager.approve(job.id, question.callId, { decision, by: 'chat', ...remember, ...reason });
}
