import type { Logger } from 'pino';
import type { ExecutorHealth } from '../executors/executor.js';

export interface WorkerWatchOptions {
  queue: string;
  /** With jobs out and no worker for this long, warn (0: at the first check). */
  warnAfterMs: number;
  /** Workers connected to the queue now (BullMQ's `getWorkersCount`, one CLIENT LIST). */
  countWorkers: () => Promise<number>;
  /** Jobs handed to the executor and not yet ended. */
  jobsOut: () => number;
  logger?: Logger;
  now?: () => number;
}

/**
 * Notices a queue nobody serves: jobs are out, yet no `forkpool worker` is connected. A producer
 * would otherwise wait without a word; this warns once (and once more when a worker comes) and
 * gives `/healthz` its `executor` entry. Checked on the executor's poll, one check at a time.
 */
export class WorkerWatch {
  readonly #options: WorkerWatchOptions;
  #idleSince: number | undefined;
  #warned = false;
  #checking = false;
  #workers: number | undefined;

  constructor(options: WorkerWatchOptions) {
    this.#options = options;
  }

  check(): void {
    if (this.#checking) return;
    // After a warning, counted even with no job out: a worker that came and served every job
    // between two checks still gets its all-clear, and the next unserved wait warns again.
    const idle = this.#options.jobsOut() === 0;
    if (idle && !this.#warned) {
      this.#idleSince = undefined;
      return;
    }
    this.#checking = true;
    this.#options
      .countWorkers()
      .then((count) => this.#record(count, idle))
      .catch((error: unknown) => this.#options.logger?.debug({ err: error }, 'could not count the bullmq workers'))
      .finally(() => (this.#checking = false));
  }

  health(): ExecutorHealth {
    if (!this.#warned || this.#idleSince === undefined) return { ok: true };
    return { ok: false, problem: this.#problem(), since: this.#idleSince };
  }

  #record(count: number, idle: boolean): void {
    const now = (this.#options.now ?? Date.now)();
    this.#workers = count;
    if (count > 0 || idle) {
      if (this.#warned && count > 0) this.#options.logger?.warn({ queue: this.#options.queue, workers: count }, 'a forkpool worker connected; jobs run again');
      // No worker, and nothing waits any more (its jobs were cancelled): nothing to warn of now.
      this.#warned = false;
      this.#idleSince = undefined;
      return;
    }
    this.#idleSince ??= now;
    if (!this.#warned && now - this.#idleSince >= this.#options.warnAfterMs) {
      this.#warned = true;
      this.#options.logger?.warn({ queue: this.#options.queue, jobs: this.#options.jobsOut() }, this.#problem());
    }
  }

  #problem(): string {
    const jobs = this.#options.jobsOut();
    return `no forkpool worker is connected to the bullmq queue "${this.#options.queue}" (${this.#workers ?? 0} workers); ${jobs} job(s) wait: start one with \`forkpool worker --redis URL --queue ${this.#options.queue}\``;
  }
}
