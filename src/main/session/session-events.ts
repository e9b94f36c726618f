import type { SerializedError } from '../../shared/errors.js';
import type { JobAlert } from '../jobs/manager.js';
import type { JobRecord } from '../ledger/ledger.js';
import type { FollowUpReason } from '../views/follow-up.js';
import type { ParentEvent, TurnResult } from './parent-agent.js';

/** What an {@link AgentSession} tells its listeners (moved out of agent-session.ts to keep it small). */
export type SessionEvents = {
  parent: [ParentEvent];
  /** `cancelledJobs`: jobs of `agent_<name>` calls the turn stopped before they returned (Esc): cancelled with it. */
  'turn-result': [TurnResult & { followUp: boolean; cancelledJobs: string[] }];
  delivered: [{ turn: number; jobs: JobRecord[] }];
  /** A job's alert, at once (it reaches the model at the next turn boundary). */
  alert: [JobAlert];
  /** The alert buffer was full: the oldest alert was dropped. */
  'alert-dropped': [JobAlert];
  /**
   * A follow-up is owed. `wave`: a whole wave ended; `quorum`/`deadline`: its join let it come
   * early; `idle`: a job ended while the parent was idle (the `remy` format); `deferred`: results the last turn's budget had no room for; `restart`: a resumed
   * session found results waiting; `rerun`: a job re-run because its result was stale ended.
   * It runs only if, when its turn comes, there is a result to deliver.
   */
  'follow-up': [{ reason: FollowUpReason['kind']; queued: boolean }];
  /**
   * A turn threw (a person's turn also rejects its promise). Its wave is sealed all the same, and
   * the results delivered into it (`redelivered`) wait for delivery again: the next turn has them.
   */
  'turn-error': [{ turn: number; followUp: boolean; error: SerializedError; redelivered: string[] }];
};
