import type { ResumeState } from '../../shared/protocol.js';

// A job's phases and what it keeps while it waits for its children: the state machine that
// job.ts's Job runs, apart so the class stays readable.

/**
 * Where a job is in its life. The ledger's record, which every view reads, has fewer states;
 * each phase maps onto it like this:
 *
 * | phase        | record                                   | what holds it                        |
 * |--------------|------------------------------------------|--------------------------------------|
 * | `queued`     | `queued`                                 | the dispatcher's FIFO                |
 * | `dispatched` | `queued`, `dispatched: n` (durable only) | an attempt, no `started` yet         |
 * | `running`    | `running`                                | an attempt that said `started`       |
 * | `suspended`  | `queued`, `waitingForChildren`           | its suspension (no slot, no thread)  |
 * | `suspended`  | `running`, `awaitingApproval`            | its approval wait (no slot, no thread) |
 * | `suspended`  | `running`, `sleepWait`                   | its sleep (no slot, no thread)       |
 * | `ended`      | `ended`, no `deliveredInTurn`            | the ledger, until delivered          |
 * | `delivered`  | `ended`, `deliveredInTurn: N`            | the ledger, until retention forgets  |
 *
 * `delivered` is read from the record (delivery is the ledger's, see deliveries.ts); the others
 * are this object's own. Moves: queued → dispatched → running → ended; dispatched or running →
 * queued (its thread died, or a restart stopped it); running → suspended → queued (its children
 * ended); queued or suspended → ended (cancelled before it ran again); ended or suspended → queued (restart; a suspended job's wait is dropped, restarts.ts); running → suspended → queued for approvals too (approvals.ts): that
 * record stays `running` while it waits, as the job has started and goes on where it paused.
 */
export type JobPhase = 'queued' | 'dispatched' | 'running' | 'suspended' | 'ended';
export type JobState = JobPhase | 'delivered';

/** What a job that waits for its children keeps while it holds no slot and no thread. */
export interface Suspension {
  state: Omit<ResumeState, 'childResults'>;
  /** Children's results it has not seen yet, in the order they ended. */
  pending: string[];
}
