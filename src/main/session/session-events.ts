import type { SerializedError } from '../../shared/errors.js';
import type { JobAlert } from '../jobs/manager.js';
import type { JobRecord } from '../ledger/ledger.js';
import type { ParentEvent, TurnResult } from './parent-agent.js';

/** What an {@link AgentSession} tells its listeners (moved out of agent-session.ts to keep it small). */
export type SessionEvents = {
  parent: [ParentEvent];
  'turn-result': [TurnResult & { followUp: boolean }];
  delivered: [{ turn: number; jobs: JobRecord[] }];
  /** A job's alert, at once (it reaches the model at the next turn boundary). */
  alert: [JobAlert];
  /** The alert buffer was full: the oldest alert was dropped. */
  'alert-dropped': [JobAlert];
  /** `deferred`: results the last turn's budget had no room for; `restart`: a resumed session found results waiting for delivery. */
  'follow-up': [{ reason: 'wave' | 'user-job' | 'deferred' | 'restart'; queued: boolean }];
  /**
   * A turn threw (a person's turn also rejects its promise). Its wave is sealed all the same, and
   * the results delivered into it (`redelivered`) wait for delivery again: the next turn has them.
   */
  'turn-error': [{ turn: number; followUp: boolean; error: SerializedError; redelivered: string[] }];
};
