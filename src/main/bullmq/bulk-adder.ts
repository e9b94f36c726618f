/**
 * Coalesces the jobs handed out in one tick into one write: a fan-out launches thousands of runs
 * in a burst, and one `queue.add` each (a round trip and a script call apiece) held the producer
 * to a few hundred jobs a second. Batches are written one after another, in the order the jobs
 * came, at most `maxBatch` jobs each.
 */
export class BulkAdder<T> {
  readonly #write: (batch: T[]) => Promise<void>;
  readonly #maxBatch: number;
  #pending: Array<{ item: T; resolve: () => void; reject: (error: unknown) => void }> = [];
  #scheduled = false;
  /** The batch being written, and those queued behind it. */
  #tail: Promise<void> = Promise.resolve();
  /** Batches whose write has settled: a close waiting on a long flush sees it move. */
  #settled = 0;

  constructor(write: (batch: T[]) => Promise<void>, maxBatch: number) {
    this.#write = write;
    this.#maxBatch = maxBatch;
  }

  /** Resolves once the batch holding `item` is written; rejects with that write's error. */
  add(item: T): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.#pending.push({ item, resolve, reject });
      if (this.#pending.length >= this.#maxBatch) this.#cut();
      else if (!this.#scheduled) {
        this.#scheduled = true;
        // setImmediate, not a microtask: the runs of one burst arrive over several microtask turns.
        setImmediate(() => {
          this.#scheduled = false;
          this.#cut();
        });
      }
    });
  }

  /** Batches written (or failed) so far. */
  get settledBatches(): number {
    return this.#settled;
  }

  /** Writes what is pending; resolves once every batch is written (or failed), those added meanwhile too. */
  async flush(): Promise<void> {
    let tail: Promise<void>;
    do {
      this.#cut();
      tail = this.#tail;
      await tail;
    } while (tail !== this.#tail || this.#pending.length > 0);
  }

  #cut(): void {
    if (this.#pending.length === 0) return;
    const batch = this.#pending;
    this.#pending = [];
    this.#tail = this.#tail.then(async () => {
      try {
        await this.#write(batch.map((entry) => entry.item));
        for (const entry of batch) entry.resolve();
      } catch (error) {
        for (const entry of batch) entry.reject(error);
      }
      this.#settled += 1;
    });
  }
}
