/**
 * A FIFO of waiters that may be cancelled where they stand: a cancelled one is only marked, and
 * skipped when its turn comes. No `shift()` or `indexOf` (both O(n): 37,000 searches waited on one
 * thread at once); the served prefix is dropped once it is most of the array. Shared by the
 * thread's queues: model connections, search slots, jobs waiting to start.
 */
export class WaitQueue<W extends { cancelled: boolean }> {
  #items: (W | undefined)[] = [];
  #head = 0;

  push(waiter: W): void {
    this.#items.push(waiter);
  }

  /** The first waiter not cancelled, left in the queue. */
  peek(): W | undefined {
    while (this.#head < this.#items.length && this.#items[this.#head]?.cancelled !== false) this.#items[this.#head++] = undefined;
    this.#compact();
    return this.#items[this.#head];
  }

  /** The first waiter not cancelled, taken out. */
  next(): W | undefined {
    const waiter = this.peek();
    if (waiter) this.#items[this.#head++] = undefined;
    return waiter;
  }

  /** True when no waiter, cancelled or not, is left (a new one would be first). */
  get isEmpty(): boolean {
    return this.#head === this.#items.length;
  }

  /** Waiters not cancelled (O(n): for reports and tests). */
  get waiting(): number {
    let n = 0;
    for (let i = this.#head; i < this.#items.length; i++) if (this.#items[i]?.cancelled === false) n++;
    return n;
  }

  #compact(): void {
    if (this.#head > 1_024 && this.#head * 2 > this.#items.length) {
      this.#items = this.#items.slice(this.#head);
      this.#head = 0;
    }
  }
}
