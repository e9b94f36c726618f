import { JobError } from '../../shared/errors.js';
import type { ResumeState } from '../../shared/protocol.js';
import type { JobRecord } from '../ledger/ledger.js';
import type { KeptConversations } from './conversations.js';
import type { Job } from './job.js';
import type { JobWorktree } from './worktrees.js';
import type { JobHandle, SpawnOptions, SpawnRequest } from './manager-api.js';

/** The longest instruction a resume takes (as a spawn's task). */
export const RESUME_MESSAGE_MAX_CHARS = 100_000;

/** What a resume adds to a booking: the job it continues, and the state its first model call starts from. */
export interface ResumeOrigin {
  from: string;
  state: ResumeState;
}

/** Who a resumed job is for: its wave (the parent's turn; null for none) and its label (default the old job's). */
export interface ResumeRequest {
  /** The parent turn whose wave it joins; default `null` (no wave: delivered as soon as the parent is free). */
  wave?: number | null;
  /** Default: the old job's label. */
  label?: string;
  /** Whose job it is; default the old job's role. */
  role?: SpawnRequest['role'];
}

export interface ResumeHost {
  /** The job with this id or name (the live holder of a name first; JobTable.find). */
  find(idOrName: string): Job | undefined;
  /** The old job's worktree, if it ran in one (job-worktrees.ts). */
  worktree(id: string): Readonly<JobWorktree> | undefined;
  readonly conversations: KeptConversations;
  closed(): boolean;
  book(request: SpawnRequest, options: SpawnOptions, resume: ResumeOrigin): JobHandle;
}

/**
 * `resume_background_agent`, as Codex's `resume_agent`: an ended job's kept conversation goes
 * on with a new instruction, as a NEW job (its own id, `resumedFrom` the old one), its own
 * budget, queue slot and delivery. The old record is never touched: its result was (or will
 * be) delivered once, as every record's is, and the new job's result is delivered once in
 * turn — two records, each ending once and delivered once (the ledger's invariants), instead
 * of one record whose delivery would have to be undone. It runs through the suspend/resume
 * path (`spec.resume`, as a job that waited for its children): the worker continues the saved
 * messages with the instruction as the next user message.
 *
 * Refused with a typed error, nothing started: an unknown job (`JOB_UNKNOWN`), one that has not
 * ended or whose conversation was not kept (`RESUME_UNAVAILABLE`), a bad message
 * (`TOOL_ARGUMENTS_INVALID`), a closed manager (`MANAGER_CLOSED`); then booking's own refusals.
 */
export function resumeJob(host: ResumeHost, idOrName: string, message: unknown, request: ResumeRequest = {}, options: SpawnOptions = {}): JobHandle {
  if (host.closed()) throw new JobError('MANAGER_CLOSED', '-', 'the background manager is closed; no job can be resumed');
  const job = host.find(idOrName);
  if (!job) throw new JobError('JOB_UNKNOWN', idOrName, `no background job with id or name "${idOrName}"`);
  const record = job.record;
  if (!job.isOver) {
    throw new JobError(
      'RESUME_UNAVAILABLE',
      job.id,
      `job ${job.id} has not ended (it is ${record.state}${record.waitingForChildren ? ', waiting for its children' : ''}): only an ended job can be resumed; wait for its result`,
    );
  }
  const instruction = checkedMessage(job.id, message);
  const messages = host.conversations.get(job.id);
  if (!messages) {
    throw new JobError(
      'RESUME_UNAVAILABLE',
      job.id,
      `job ${job.id}'s conversation was not kept (it ended ${record.status ?? ''} without one, background.keepConversationChars is 0 or too small, or its record predates kept conversations): spawn a new job instead`,
    );
  }
  // A worktree job goes on in a worktree: its own (kept or uncommitted changes; job-table.ts hands
  // it over), or a fresh one from HEAD once it was merged or dropped. Never in the user's checkout.
  const tree = host.worktree(job.id);
  if (tree?.handedTo !== undefined) {
    throw new JobError(
      'RESUME_UNAVAILABLE',
      job.id,
      `job ${job.id}'s worktree went on with job ${tree.handedTo}, which resumed it: resume job ${tree.handedTo} instead`,
    );
  }
  if (tree?.state === 'open') {
    throw new JobError('RESUME_UNAVAILABLE', job.id, `job ${job.id}'s changes are still being committed in its worktree; resume it once that is done`);
  }
  const booking: SpawnRequest = {
    task: instruction,
    ...(tree ? { workspace: 'worktree' as const } : {}),
    label: request.label ?? record.label,
    role: request.role ?? record.role,
    wave: request.wave ?? null,
    ...(record.agent !== undefined ? { agent: record.agent } : {}),
    // Its spawn's tool subset and model go on too, while the old job's spec is kept (restarts.ts
    // bounds that); its own system prompt is already in the conversation.
    ...(job.spec?.tools !== undefined ? { tools: job.spec.tools } : {}),
    ...(job.spec?.model !== undefined ? { model: job.spec.model } : {}),
    // Its spawn's output schema (the next answer is typed too), turn timeout and scheduler ('none'
    // when it had none: the config's default does not give it one now).
    ...(job.spec?.outputSchema !== undefined ? { outputSchema: job.spec.outputSchema } : {}),
    ...(job.spec?.turnTimeoutMs !== undefined ? { turnTimeoutMs: job.spec.turnTimeoutMs } : {}),
    ...(job.spec ? { scheduler: job.spec.scheduler ?? 'none' } : {}),
  };
  // Its own budget: usage and model calls start from nothing (the old job's stay on the old record).
  return host.book(booking, options, { from: job.id, state: resumeStateFor(messages, instruction) });
}

/** The state a resumed job's worker starts from: the saved messages, then the instruction as the next user message. */
export function resumeStateFor(messages: unknown[], instruction: string): ResumeState {
  // `childResults` is what the worker appends as the next user message (see runBackgroundJob).
  return { messages, usage: {}, iterations: 0, childResults: instruction };
}

/** A resumed job found again by restart recovery: its state rebuilt from the old job's kept conversation and its own task. */
export function recoveredResumeState(record: Readonly<JobRecord>, conversations: KeptConversations): ResumeState | undefined {
  if (record.resumedFrom === undefined) return undefined;
  const messages = conversations.get(record.resumedFrom);
  return messages ? resumeStateFor(messages, record.task) : undefined;
}

function checkedMessage(id: string, message: unknown): string {
  const text = typeof message === 'string' ? message.trim() : '';
  if (text.length === 0 || text.length > RESUME_MESSAGE_MAX_CHARS) {
    const received = typeof message === 'string' ? `${message.trim().length} characters` : typeof message;
    throw new JobError(
      'TOOL_ARGUMENTS_INVALID',
      id,
      `resume: field "message": expected the new instruction, 1 to ${RESUME_MESSAGE_MAX_CHARS} characters; received ${received}`,
    );
  }
  return text;
}
