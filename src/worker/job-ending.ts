import type { JobOutcome, WorkerMessage, AwaitedCall } from '../shared/protocol.js';
import type { ScheduledTurn } from '../shared/scheduler.js';
import type { UsageByModel } from '../shared/usage.js';

// How a job's run ends, as the main thread hears it: done, or paused (waiting for its
// children, for approvals, or asleep) with the state its next run goes on from.

/** A job's outcome; `suspend` when it answered with children still running and waits for them. */
export type JobRunResult = JobOutcome & {
  suspend?: { state: { messages: unknown[]; usage: UsageByModel; iterations: number; wrapUpSent?: boolean }; seenChildren: string[] };
  /** It paused: these gated calls wait for approvals; it runs again from `state` once they are answered. */
  awaitApproval?: {
    state: { messages: unknown[]; usage: UsageByModel; iterations: number; wrapUpSent?: boolean; scheduledTurn?: ScheduledTurn };
    calls: AwaitedCall[];
    /** Children whose results its model read (the main thread holds the rest for its next run). */
    seenChildren: string[];
  };
  /** `sleep`: it asked for its next turn at `at`; the main thread wakes it then, to go on from `state`. */
  sleep?: { state: { messages: unknown[]; usage: UsageByModel; iterations: number; wrapUpSent?: boolean }; at: number; reason: string; seenChildren: string[] };
};

/** Posts the run's one ending message: `await-approval`, `sleep`, `suspend`, else `done` with its outcome. */
export function postEnding(post: (message: WorkerMessage) => void, jobId: string, outcome: JobRunResult): void {
  const { suspend, awaitApproval, sleep, ...done } = outcome;
  if (awaitApproval) post({ type: 'await-approval', jobId, state: awaitApproval.state, calls: awaitApproval.calls, seenChildren: awaitApproval.seenChildren });
  else if (sleep) post({ type: 'sleep', jobId, state: sleep.state, at: sleep.at, reason: sleep.reason, seenChildren: sleep.seenChildren });
  else if (suspend) post({ type: 'suspend', jobId, state: suspend.state, seenChildren: suspend.seenChildren });
  else post({ type: 'done', jobId, outcome: done });
}
