/**
 * Takes a launch's BullMQ job out of Redis (its hash, its cancel key and message list) once the
 * main side is done with it, so a fan-out that has ended and closed leaves nothing of it behind.
 *
 * - A result taken (a completion accepted, a job BullMQ failed for good) stays `keptMs` first: if
 *   this process dies before its ledger has the ending, a restarted one on the same ledger
 *   finds the result still waiting instead of running the job again. close() removes them at
 *   once: the manager closes its executor only after the jobs' endings are recorded.
 * - A launch that ended here without its BullMQ job finishing (hard-stopped, abandoned) is an
 *   orphan: its job is removed when its worker finishes it, or at close() if no worker holds it.
 *   close() waits a little for the hard-stopped ones (their workers are ending them); a run
 *   abandoned by the close itself goes on, for a restart on the same ledger to take over.
 * - What a killed producer leaves is removed by BullMQ after `removeOnComplete.age` (see executor.ts).
 */

/** Orphans remembered (the oldest are forgotten: their jobs then go by BullMQ's age). */
const MAX_ORPHANS = 10_000;
/** close() waits at most this long for hard-stopped runs to finish on their workers. */
const HARD_STOPPED_WAIT_MS = 2_000;

export class FinishedJobs {
  readonly #remove: (bullId: string) => Promise<void>;
  readonly #keptMs: number;
  readonly #pending = new Map<string, NodeJS.Timeout>();
  /** Orphan → its worker was told to end it (a hard stop), so it finishes soon. */
  readonly #orphans = new Map<string, boolean>();
  #onSettled: (() => void) | undefined;
  /** Jobs removed (or found gone) at close so far. */
  #flushed = 0;

  /** `remove`: deletes one BullMQ job and its keys; it throws for a job a worker holds (locked). */
  constructor(remove: (bullId: string) => Promise<void>, keptMs: number) {
    this.#remove = remove;
    this.#keptMs = keptMs;
  }

  /** The main side has this launch's ending: its job goes after `keptMs`. */
  taken(bullId: string): void {
    this.#orphans.delete(bullId);
    if (this.#pending.has(bullId)) return;
    const timer = setTimeout(() => {
      this.#pending.delete(bullId);
      void this.#remove(bullId).catch(() => undefined);
    }, this.#keptMs);
    timer.unref();
    this.#pending.set(bullId, timer);
  }

  /** The launch ended here while its BullMQ job may still be waiting or running. */
  orphaned(bullId: string, hardStopped: boolean): void {
    if (this.#pending.has(bullId)) return;
    this.#orphans.set(bullId, hardStopped);
    if (this.#orphans.size > MAX_ORPHANS) this.#orphans.delete(this.#orphans.keys().next().value as string);
  }

  /** A worker finished a job no run of this process waits for: an orphan's goes now. */
  finishedUnwatched(bullId: string): void {
    if (!this.#orphans.has(bullId)) return;
    void this.#remove(bullId)
      .then(() => this.#orphans.delete(bullId))
      .catch(() => undefined)
      .finally(() => {
        if (![...this.#orphans.values()].some(Boolean)) this.#onSettled?.();
      });
  }

  /**
   * Nothing of this launch is to be removed later: its id is being added again (a restarted
   * job), or a cancel took its waiting job out of Redis.
   */
  forget(bullId: string): void {
    clearTimeout(this.#pending.get(bullId));
    this.#pending.delete(bullId);
    this.#orphans.delete(bullId);
  }

  /** Removals settled by flush() so far. */
  get progress(): number {
    return this.#flushed;
  }

  /**
   * At close: every taken result and every orphan no worker holds goes now; hard-stopped runs
   * still held are waited for (bounded), their jobs removed as they finish (finishedUnwatched).
   */
  async flush(): Promise<void> {
    for (const timer of this.#pending.values()) clearTimeout(timer);
    const ids = [...this.#pending.keys(), ...this.#orphans.keys()];
    this.#pending.clear();
    await Promise.allSettled(
      ids.map((bullId) =>
        this.#remove(bullId)
          .then(() => this.#orphans.delete(bullId))
          .finally(() => (this.#flushed += 1)),
      ),
    );
    if (![...this.#orphans.values()].some(Boolean)) return;
    let timer: NodeJS.Timeout | undefined;
    await new Promise<void>((resolve) => {
      this.#onSettled = resolve;
      timer = setTimeout(resolve, HARD_STOPPED_WAIT_MS);
    });
    clearTimeout(timer);
    this.#onSettled = undefined;
  }
}
