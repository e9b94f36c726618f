/**
 * The main side's safety net for what events miss: events can be lost (a reconnect, a main
 * process that was busy) and a Redis without persistence forgets jobs when it restarts. A run
 * with no news for `pollMs` is looked up in Redis, in batches of one script call each
 * (job-states.ts), at most POLL_MAX_PER_PERIOD runs a period; those asked about count as having
 * news, so the next period asks about the others. An ending found is handled as its event
 * would have been; a job Redis lost is added again.
 */
import { Job, type Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { jobStates, type PolledState } from './job-states.js';
import type { RemoteRun } from './remote-run.js';

/** Jobs whose state one script call looks up, and how many the poll asks about per period at most. */
const POLL_BATCH = 1_000;
const POLL_MAX_PER_PERIOD = 5_000;

export interface QuietPollHost {
  readonly redis: Redis;
  readonly queue: Queue;
  readonly pollMs: number;
  readonly logger?: Logger | undefined;
  /** The runs out now. */
  runs(): Iterable<RemoteRun>;
  /** A completion or a failure its event did not bring. */
  completed(bullId: string, returnvalue: unknown): Promise<void>;
  failed(bullId: string): Promise<void>;
  /** Redis lost the run's job: it is added again. */
  lost(run: RemoteRun): Promise<void>;
}

export class QuietPoll {
  readonly #host: QuietPollHost;

  constructor(host: QuietPollHost) {
    this.#host = host;
  }

  /** One period: asks Redis about the runs that were quiet for `pollMs`. */
  tick(): void {
    const now = Date.now();
    const quiet: RemoteRun[] = [];
    for (const run of this.#host.runs()) {
      if (quiet.length >= POLL_MAX_PER_PERIOD) break;
      if (!run.added || run.isSettled || now - run.lastNews < this.#host.pollMs) continue;
      run.lastNews = now;
      quiet.push(run);
    }
    for (let i = 0; i < quiet.length; i += POLL_BATCH) void this.#checkBatch(quiet.slice(i, i + POLL_BATCH)).catch((error: unknown) => this.#failed(error));
  }

  async #checkBatch(runs: RemoteRun[]): Promise<void> {
    const states = await jobStates(
      this.#host.redis,
      this.#host.queue.toKey(''),
      runs.map((run) => run.bullId),
    );
    await Promise.all(runs.map((run, i) => this.#check(run, states[i] ?? 'other').catch((error: unknown) => this.#failed(error, run.bullId))));
  }

  async #check(run: RemoteRun, state: PolledState): Promise<void> {
    if (state === 'completed') {
      const job = await Job.fromId(this.#host.queue, run.bullId);
      return this.#host.completed(run.bullId, job?.returnvalue);
    }
    if (state === 'failed') return this.#host.failed(run.bullId);
    // A run being stopped is gone because its cancel took it out (the script's reply may come
    // after this one): adding it again would leave a job no one waits for.
    if (state === 'missing' && !run.isSettled && !run.stopAsked) {
      this.#host.logger?.warn({ bullId: run.bullId }, 'job missing from Redis; adding it again');
      await this.#host.lost(run);
    }
  }

  #failed(error: unknown, bullId?: string): void {
    this.#host.logger?.debug({ err: error, ...(bullId === undefined ? {} : { bullId }) }, 'poll failed');
  }
}
