import type { Logger } from 'pino';
import type { AlertSeverity, AwaitedCall, ChildSpawnRequest, HostToolAnswer, JobOutcome, RequestGateService, ResumeState } from '../../shared/protocol.js';
import type { JobError } from '../../shared/errors.js';
import type { LoopEvent } from '../../shared/loop-events.js';
import type { Executor } from './executor.js';
import type { JobScheduler } from './scheduler.js';

/** How one launch of a job ended, as far as its attempt can tell. */
export type AttemptEnd =
  /** The worker reported `done`. */
  | { kind: 'done'; outcome: JobOutcome }
  /** No `done` came: the thread died, the task function threw, or a stop ended it first. */
  | { kind: 'lost'; error: unknown }
  /** The worker broke the port protocol; its thread was stopped. */
  | { kind: 'protocol'; error: JobError }
  /** The job answered with children still running and waits for them, holding no slot. */
  | { kind: 'suspended'; state: Omit<ResumeState, 'childResults'>; seenChildren: string[] }
  /** Its gated calls wait for approvals: it paused, holding no slot, and runs again from `state` once they are answered. */
  | { kind: 'awaiting-approval'; state: Omit<ResumeState, 'childResults'>; calls: AwaitedCall[]; seenChildren: string[] }
  /** `sleep` scheduler: it asked for its next turn at `at`; it sleeps holding no slot, then runs again from `state`. */
  | { kind: 'sleeping'; state: Omit<ResumeState, 'childResults'>; at: number; reason: string; seenChildren: string[] };

/** What the main thread answers a job's gated call (see the `permission-answer` message). */
export interface PermissionAnswer {
  granted: boolean;
  /** The call waits for an approval: the job pauses. */
  ask?: true;
  /** Someone denied it: the model reads why. */
  reason?: string;
}

/** A job's lease on its endpoint's request gate (concurrency.ts): `service` answers its worker's `gate-admit`/`gate-settle`. */
export interface GateLease {
  service?: RequestGateService | undefined;
  /** Gives back what it holds; its owner calls it when the attempt has ended. */
  release(): void;
}

/** Which deadline of a running job came first: its timeout, or its wall-clock budget. */
export type DeadlineKind = 'timeout' | 'budget';

/**
 * What an attempt tells its owner and asks of it, as one object shared by all of that owner's
 * attempts (the job runner's, or a BullMQ worker's). Each method gets the attempt's `job`, the
 * owner's own handle for it: an owner does not build a set of closures for every launch, which
 * cost the main thread memory for every job in flight (issue 40). `A` is the attempt's own type
 * (attempt.ts binds it: `AttemptHost<J>` there), so this contract does not import the class.
 */
export interface AttemptHostOf<J, A> {
  readonly scheduler: JobScheduler;
  readonly rateGateBuffer: SharedArrayBuffer;
  readonly logger?: Logger | undefined;
  /** See JobTask.owner. */
  readonly owner?: string | undefined;
  /** The worker said `started`. */
  started(job: J, attempt: A, threadId: number): void;
  progress(job: J, event: LoopEvent): void;
  alert(job: J, alert: { message: string; severity: AlertSeverity }): void;
  /** The job's spawn tool asks for a child; the answer goes back with the attempt's `post`. */
  spawn(job: J, attempt: A, requestId: number, request: ChildSpawnRequest): void;
  /** Answers a gated call (a remote executor's job is refused before this is asked). */
  answerPermission(job: J, tool: string, callId: string | undefined): PermissionAnswer;
  /** Runs a host tool the job called (host-calls.ts); `signal` aborts when the job stops waiting or the attempt ends. */
  runHostTool(job: J, call: { name: string; callId: string; args: unknown }, signal: AbortSignal): Promise<HostToolAnswer>;
  /** The deadline armed with `armDeadline` came. */
  expired(job: J, attempt: A, kind: DeadlineKind): void;
  /**
   * The attempt ended: called once, in a microtask queued as it ended (when a reaction to
   * the attempt's `ended` would run), so an owner needs no promise per job in flight. A throw
   * here is the owner's to catch.
   */
  ended?(job: J, attempt: A, end: AttemptEnd): void;
}

export interface AttemptOptionsOf<J, A> {
  /** The owner's handle for the job, given back to each {@link AttemptHost} method. */
  job: J;
  jobId: string;
  /** 1 on the first launch; a re-queued job runs again under a new attempt. */
  number: number;
  executor: Executor;
  host: AttemptHostOf<J, A>;
  /** Adaptive concurrency: the job's gate lease, answering its `gate-admit`/`gate-settle` (see request-gate.ts); its owner releases it. */
  gate?: GateLease | undefined;
  /** Cooperative cancel → hard stop after this long. */
  cancelGraceMs: number;
}
