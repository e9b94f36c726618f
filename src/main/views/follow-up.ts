/**
 * Why forkpool runs an automatic follow-up turn, and how each surface says so in one line (the
 * CLI's `run`, the chat). The turn's input itself (the delivered block) is never shown.
 */

/** One reason a follow-up was owed. */
export type FollowUpReason =
  /** Every job of a wave (the jobs one parent turn spawned) has ended. */
  | { kind: 'wave'; wave: number }
  /** A wave's join let the follow-up come before the wave's end: `ended` of its `of` jobs had ended. */
  | { kind: 'quorum' | 'deadline'; wave: number; ended: number; of: number }
  /** A job a person started (`/bg start`, the HTTP API), or one in no wave, has ended. */
  | { kind: 'user-job' }
  /** `delivery.format: "remy"`: a job ended while the parent was idle; delivered at once, not held for its wave. */
  | { kind: 'idle' }
  /** Results the previous turn's budget had no room for. */
  | { kind: 'deferred' }
  /** A resumed session found results waiting from before the restart. */
  | { kind: 'restart' }
  /** A job re-run because its result was stale (`delivery.staleResults: "rerun"`) has ended again. */
  | { kind: 'rerun' }
  /** The durable ledger writes again after a failure: results whose delivery it could not record go out now. */
  | { kind: 'ledger-recovered' };

/** What a follow-up turn carries: on its `turn_start` event (`cause`), for the surfaces. */
export interface FollowUpCause {
  /** Each reason once, in the order they came. */
  reasons: FollowUpReason[];
  /** Results it delivers, by who started the job: the parent (its agents), or a person. */
  delivered: { agents: number; user: number };
  /** Jobs its input lists as still running: an early wave's rest, results being re-run. */
  stillRunning: number;
}

/** The one line a surface shows for a follow-up turn (never the block it delivers). */
export function followUpNotice(turn: number, cause: FollowUpCause | undefined): string {
  const said = new Set<string>();
  for (const reason of cause?.reasons ?? []) said.add(reasonText(reason, cause as FollowUpCause));
  const what = said.size > 0 ? [...said].join('; ') : 'background results ready';
  return `… ${what}: follow-up turn ${turn}`;
}

function reasonText(reason: FollowUpReason, cause: FollowUpCause): string {
  switch (reason.kind) {
    case 'wave':
      return `turn ${reason.wave}'s wave finished`;
    case 'quorum':
      return `quorum reached in turn ${reason.wave}'s wave (${reason.ended} of ${reason.of} ended)`;
    case 'deadline':
      return `join deadline passed for turn ${reason.wave}'s wave (${reason.ended} of ${reason.of} ended)`;
    case 'user-job':
      return cause.delivered.user === 1
        ? 'a job you started ended'
        : cause.delivered.user > 1
          ? `${cause.delivered.user} jobs you started ended`
          : 'a background job ended';
    case 'idle':
      return cause.delivered.agents + cause.delivered.user > 1 ? 'background jobs ended while idle' : 'a background job ended while idle';
    case 'deferred':
      return 'results the last turn had no room for';
    case 'restart':
      return 'results waiting from before the restart';
    case 'rerun':
      return 'a re-run result is ready';
    case 'ledger-recovered':
      return 'the ledger writes again: results it could not deliver are ready';
  }
}
