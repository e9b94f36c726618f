import type { JobRecord, RetentionPolicy } from './job-record.js';

/** What retention needs of the ledger: a record, and the two ways of letting go of one. */
export interface RetainedRecords {
  get(id: string): Readonly<JobRecord> | undefined;
  /** Drops a delivered record's result text; its metadata stays. */
  dropResult(id: string): void;
  /** Forgets a delivered record altogether. */
  forget(id: string): void;
}

/**
 * Which delivered records keep their result text and which are known at all, so memory stays
 * bounded for a process that lives for weeks: a delivered record keeps its result only for
 * {@link RetentionPolicy.keepResults} deliveries or {@link RetentionPolicy.keepResultsMs}; past
 * {@link RetentionPolicy.keepRecords} deliveries the oldest delivered record is forgotten. A
 * result delivered in part is held back until it is read to its end. Applied as the ledger is
 * used ({@link enforce}), never by a timer. Undelivered records are never its business.
 */
export class Retention {
  readonly #policy: RetentionPolicy;
  readonly #records: RetainedRecords;
  /** Delivered and still holding their result, in delivery order. */
  readonly #withResults = new Fifo<{ id: string; deliveredAt: number }>();
  /** Delivered and still known, in delivery order. */
  readonly #delivered = new Fifo<string>();
  /** Delivered in part and not yet read to the end: held back from retention (oldest first). */
  readonly #partial = new Set<string>();

  constructor(policy: RetentionPolicy, records: RetainedRecords) {
    this.#policy = policy;
    this.#records = records;
  }

  /** Results it still holds (a ledger's `resultsKept`). */
  get resultsKept(): number {
    return this.#withResults.length;
  }

  /** A delivered record, in delivery order: now, or read back from a durable store (`at` its delivery time). */
  delivered(record: Readonly<JobRecord>, at: number): void {
    // A result delivered in part is held back from retention until it is read to its end.
    if (record.resultUnread && !record.resultDropped) this.#holdPartial(record.id, at);
    else if (!record.resultDropped) this.#withResults.push({ id: record.id, deliveredAt: at });
    this.#delivered.push(record.id);
  }

  /** A result delivered in part has been read to its end: it falls under retention like any other. */
  readToEnd(id: string, now: number): void {
    this.#partial.delete(id);
    this.#withResults.push({ id, deliveredAt: now });
  }

  /** It runs again (restart) or was forgotten: nothing of it is held back any more. */
  release(id: string): void {
    this.#partial.delete(id);
  }

  /** Drops the oldest delivered results past the count or age bound, then forgets the oldest delivered records past theirs. */
  enforce(now: number): void {
    const { keepResults, keepResultsMs, keepRecords } = this.#policy;
    for (let front = this.#withResults.peek(); front; front = this.#withResults.peek()) {
      if (this.#withResults.length <= keepResults && now - front.deliveredAt < keepResultsMs) break;
      this.#withResults.shift();
      // Reopened and delivered in part again since it was queued here: held back, not dropped.
      if (!this.#partial.has(front.id)) this.#records.dropResult(front.id);
    }
    // Bounded: partly read records rotate to the back at most once per pass.
    let rotations = this.#delivered.length;
    while (this.#delivered.length > keepRecords) {
      const id = this.#delivered.shift() as string;
      // A delivered job reopened since (a restart) is live again: never forgotten under it.
      if (this.#records.get(id)?.deliveredInTurn === undefined) continue;
      // Partly read: kept (it goes to the back); there are at most keepResults <= keepRecords of them.
      if (this.#partial.has(id) && rotations-- > 0) {
        this.#delivered.push(id);
        continue;
      }
      this.#partial.delete(id);
      this.#records.forget(id);
    }
  }

  /** Keeps a partly read result out of retention; past `keepResults` of them, the oldest goes back under it. */
  #holdPartial(id: string, now: number): void {
    this.#partial.add(id);
    if (this.#partial.size <= this.#policy.keepResults) return;
    const oldest = this.#partial.values().next().value as string;
    this.#partial.delete(oldest);
    this.#withResults.push({ id: oldest, deliveredAt: now });
  }
}

/** A queue with O(1) push and shift (an array with a moving head, compacted now and then). */
class Fifo<T> {
  #items: T[] = [];
  #head = 0;

  get length(): number {
    return this.#items.length - this.#head;
  }

  push(item: T): void {
    this.#items.push(item);
  }

  peek(): T | undefined {
    return this.#head < this.#items.length ? this.#items[this.#head] : undefined;
  }

  shift(): T | undefined {
    if (this.#head >= this.#items.length) return undefined;
    const item = this.#items[this.#head] as T;
    this.#items[this.#head++] = undefined as T;
    if (this.#head > 1024 && this.#head * 2 > this.#items.length) {
      this.#items = this.#items.slice(this.#head);
      this.#head = 0;
    }
    return item;
  }
}
