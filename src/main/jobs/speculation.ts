import { JobError, serializeError } from '../../shared/errors.js';
import type { DeliveryLedger, JobEnding, JobRecord } from '../ledger/ledger.js';
import type { Job } from './job.js';

/** What speculation needs of the manager: the ledger, and how a job is stopped. */
export interface SpeculationHost {
  readonly ledger: DeliveryLedger;
  stop(job: Job): void;
  /** A guess became a real job: the queue's order may change. */
  schedulePump(): void;
  reportFault(what: string, error: unknown): void;
}

/**
 * Speculative jobs (docs/delivery.md "Speculative jobs"): a guess runs only on what no real job
 * needs. It is `pending` until it is kept (referred to: an ordinary job from then on) or
 * dropped (cancelled as a guess, its result set aside). The session decides what its turn
 * referred to (src/main/session/speculation.ts); the dispatcher asks here which guess gives
 * way when a real job waits for a slot or for the session budget.
 */
export class JobSpeculation {
  readonly #host: SpeculationHost;

  constructor(host: SpeculationHost) {
    this.#host = host;
  }

  /** A guess the dispatcher launches only when no real job waits, and cancels for one. */
  static isGuess(job: Job): boolean {
    return job.speculation === 'pending';
  }

  /** A guess becomes an ordinary job (it was referred to). False when it is no pending guess. */
  keep(job: Job): boolean {
    if (job.speculation !== 'pending') return false;
    job.speculation = 'kept';
    this.#host.ledger.markSpeculation(job.id, 'kept');
    this.#host.schedulePump();
    return true;
  }

  /**
   * A guess is cancelled (`why` goes into its error: "speculative, …"); one that has ended
   * already has its result set aside. False when it is no pending guess.
   */
  drop(job: Job, why: string): boolean {
    if (job.speculation !== 'pending') return false;
    job.speculation = 'dropped';
    job.dropReason = why;
    this.#host.ledger.markSpeculation(job.id, 'dropped');
    if (job.isOver) this.setAside(job);
    else this.#host.stop(job);
    return true;
  }

  /**
   * The dispatcher could not launch `waiting`'s first real job (no free slot, or the session
   * budget's leases are out): enough running guesses are cancelled to make room, newest first.
   * Guesses already dropped and still stopping count as room on its way.
   */
  preempt(waiting: readonly Job[], live: readonly Job[], need: 'slot' | 'budget'): void {
    const real = waiting.filter((job) => !JobSpeculation.isGuess(job));
    const first = real[0];
    if (!first) return;
    const guesses = live.filter((job) => JobSpeculation.isGuess(job));
    const freeing = live.filter((job) => job.speculation === 'dropped').length;
    // A slot for each real job waiting; the budget one lease at a time (its spend is charged first).
    const wanted = need === 'slot' ? Math.min(real.length, guesses.length) : Math.min(1, guesses.length);
    const what = need === 'slot' ? 'a slot' : 'the session budget';
    for (const guess of guesses.reverse().slice(0, Math.max(0, wanted - freeing))) this.drop(guess, `speculative, preempted: ${first.id} needed ${what}`);
  }

  /** The ending of a dropped guess that was cancelled says why: "cancelled (speculative, …)". */
  atEnd(job: Job, ending: JobEnding): Pick<JobEnding, 'error'> {
    if (job.speculation !== 'dropped' || ending.status !== 'cancelled') return {};
    const error = serializeError(new JobError('JOB_CANCELLED', job.id, `cancelled (${job.dropReason ?? 'speculative'})`));
    if (ending.error) error.cause = ending.error;
    return { error };
  }

  /** After its ending: a dropped guess is set aside at once (no turn receives it, none waits for it). */
  ended(job: Job, record: Readonly<JobRecord>): Readonly<JobRecord> {
    return job.speculation === 'dropped' ? (this.setAside(job) ?? record) : record;
  }

  /**
   * Handed over to nobody: marked delivered in turn 0 (no turn's), so no drain, follow-up or
   * wave waits for it and retention treats it as any delivered record. A failed ledger write
   * leaves it waiting, delivered later as an ordinary cancelled job.
   */
  setAside(job: Job): Readonly<JobRecord> | undefined {
    try {
      return this.#host.ledger.markDelivered(job.id, 0);
    } catch (error) {
      this.#host.reportFault(`setting aside speculative job ${job.id}`, error);
      return undefined;
    }
  }
}
