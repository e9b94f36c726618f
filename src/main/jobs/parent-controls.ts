import type { JobRecord } from '../ledger/ledger.js';
import type { JobEngine } from './engine.js';
import type { JobHandle, SpawnOptions, SteerOptions, SteerReceipt } from './manager-api.js';
import type { ResumeRequest } from './resumes.js';
import { waitForJobs, type WaitOptions, type WaitOutcome } from './waits.js';
import type { JobWorktree, WorktreeAction } from './worktrees.js';

/** What the controls read of their manager besides its engine: records and each job's end. */
export interface ControlsHost {
  get(id: string): Readonly<JobRecord> | undefined;
  /** Subscribes to every job's end (the manager's `done`); returns the unsubscribe. */
  onDone(listener: (record: Readonly<JobRecord>) => void): () => void;
}

/**
 * What a parent does with its jobs besides spawning and cancelling them (those are the
 * manager's): talk to a live one, wait for some, resume an ended one, decide a worktree job's
 * branch, keep or drop a speculative guess. The parent's tools use it (the session hands it to
 * them: `manager.parentControls`), and so do a person's commands in the chat and the HTTP
 * routes that speak for a parent. One per {@link BackgroundManager}; every job is named by id or name.
 */
export class ParentControls {
  readonly #engine: JobEngine;
  readonly #host: ControlsHost;

  constructor(engine: JobEngine, host: ControlsHost) {
    this.#engine = engine;
    this.#host = host;
  }

  /**
   * Sends a message to a live job (see docs/agents.md "Steering a running job"): a running one
   * gets it before its next model call, or with `interrupt` at once (its model call in flight
   * is cancelled, not failed); a queued one as it starts, one waiting for its children when it
   * resumes. Recorded on its record (`messages`) and as a `message` event. Throws `JOB_UNKNOWN`,
   * `JOB_ENDED` (naming its state), `TOOL_ARGUMENTS_INVALID` (an empty or too long message) or
   * `QUEUE_FULL` (more than 100 messages to one job).
   */
  send(idOrName: string, text: string, options: SteerOptions = {}): SteerReceipt {
    return this.#engine.send(idOrName, text, options);
  }

  /**
   * Waits until the jobs named (ids or names) have ended — every one (`mode: "all"`, the
   * default) or the first (`"any"`) — or `timeoutMs` passes, or `signal` aborts (rejects
   * `ABORTED`). Resolves with what ended and what still runs (see waits.ts); delivers nothing.
   * Rejects `JOB_UNKNOWN` or `TOOL_ARGUMENTS_INVALID` before anything waits.
   */
  wait(jobs: readonly string[], options: WaitOptions): Promise<WaitOutcome> {
    const host = this.#host;
    return waitForJobs({ idOf: (name) => this.#engine.find(name)?.id, get: (id) => host.get(id), onDone: (listener) => host.onDone(listener) }, jobs, options);
  }

  /**
   * Resumes an ended job: a NEW job (its own id, `resumedFrom` the old one; own budget, own
   * delivery, once) that continues the old job's kept conversation with `message` as the next
   * user message (see resumes.ts, docs/delivery.md "Resuming a finished job"). Throws
   * `JOB_UNKNOWN`, `RESUME_UNAVAILABLE` (not ended, or no conversation kept),
   * `TOOL_ARGUMENTS_INVALID` (the message), `MANAGER_CLOSED`, or any spawn's refusals.
   */
  resume(idOrName: string, message: string, request: ResumeRequest = {}, options: SpawnOptions = {}): JobHandle {
    return this.#engine.resume(idOrName, message, request, options);
  }

  /** A `workspace: "worktree"` job's worktree: branch, base, path, state and (once ended) the files it changed. */
  worktree(idOrName: string): Readonly<JobWorktree> | undefined {
    return this.#engine.worktree(idOrName);
  }

  /**
   * Merges, keeps or drops an ended job's worktree (worktrees.ts): a merge conflict is aborted,
   * nothing half-merged. Resolves with what was done (git runs in child processes, awaited, after
   * any commit still under way); rejects with `WORKTREE_ACTION_FAILED` or `JOB_UNKNOWN`.
   */
  worktreeAction(idOrName: string, action: WorktreeAction): Promise<string> {
    return this.#engine.worktreeAction(idOrName, action);
  }

  /**
   * A speculative job was referred to (docs/delivery.md "Speculative jobs"): it is an ordinary
   * job from now on, never cancelled as a guess, and delivered as usual. False when it is no
   * pending guess (never speculative, kept already, or dropped). Throws `JOB_UNKNOWN`.
   */
  keepSpeculative(idOrName: string): boolean {
    return this.#engine.keepSpeculative(idOrName);
  }

  /**
   * Drops a pending guess: cancelled (its error reads "cancelled (`why`)"), or, if it has ended,
   * its result set aside; never delivered (its record: `speculative: "dropped"`, delivered in
   * turn 0). False when it is no pending guess. Throws `JOB_UNKNOWN`.
   */
  dropSpeculative(idOrName: string, why = 'speculative, dropped'): boolean {
    return this.#engine.dropSpeculative(idOrName, why);
  }
}
