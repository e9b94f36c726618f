import type { JobRecord } from './job-record.js';
import type { Entry } from './record-table.js';
import type { WriteMode } from './ledger-writes.js';
import { deliveredRecord } from './record-values.js';

/** What delivering needs of the ledger that holds the records (ledger.ts). */
export interface DeliveryHost {
  entry(id: string): Entry;
  /** Writes these delivered records in one transaction; strict: throws LEDGER_WRITE_FAILED and nothing is written. */
  write(delivered: ReadonlyArray<{ entry: Entry; delivered: Readonly<JobRecord> }>, mode: WriteMode): void;
  /** The delivered record is the entry's now (retention counts it from `now`). */
  settle(entry: Entry, delivered: Readonly<JobRecord>, now: number): void;
  /** After a batch: retention drops and forgets what it must. */
  enforce(now: number): void;
}

/**
 * The ended jobs that wait for delivery, and their hand-over: each is delivered once, oldest
 * spawn first. Owns the set of undelivered ids, so a drain costs what is waiting, not the history.
 */
export class Deliveries {
  readonly #undelivered = new Set<string>();
  readonly #host: DeliveryHost;

  constructor(host: DeliveryHost) {
    this.#host = host;
  }

  /** Ended (or delivered in a turn that never committed): waits for the next drain. */
  wait(id: string): void {
    this.#undelivered.add(id);
  }

  /** No longer waits: it runs again (reopen), its result superseded. */
  withdraw(id: string): void {
    this.#undelivered.delete(id);
  }

  get size(): number {
    return this.#undelivered.size;
  }

  /** Ended and not yet delivered, oldest spawn first. */
  waiting(): Entry[] {
    return [...this.#undelivered].map((id) => this.#host.entry(id)).sort((a, b) => a.position - b.position);
  }

  /** See DeliveryLedger.drain. */
  drain(turn: number, accept: (record: Readonly<JobRecord>) => boolean, now: number, unread?: ReadonlyMap<string, [number, number]>): JobRecord[] {
    const batch = this.waiting()
      .filter(({ record }) => accept(record))
      .map((entry) => ({ entry, delivered: deliveredRecord(entry.record, turn, now, unread?.get(entry.record.id)) }));
    return this.#deliver(batch, now, 'strict');
  }

  /** One ended job; undefined if it is not ended or was delivered already (see DeliveryLedger.markDelivered). */
  deliverOne(id: string, turn: number, now: number, unread: [number, number] | undefined, mode: WriteMode): JobRecord | undefined {
    if (!this.#undelivered.has(id)) return undefined;
    const entry = this.#host.entry(id);
    return this.#deliver([{ entry, delivered: deliveredRecord(entry.record, turn, now, unread) }], now, mode)[0];
  }

  /**
   * Marks a batch delivered. One transaction, strict: the whole batch is on disk before any of
   * it changes in memory or is handed over; if the write fails (LEDGER_WRITE_FAILED is thrown),
   * nothing moved and every job of it waits for a later drain.
   */
  #deliver(batch: ReadonlyArray<{ entry: Entry; delivered: Readonly<JobRecord> }>, now: number, mode: WriteMode): JobRecord[] {
    if (batch.length === 0) return [];
    this.#host.write(batch, mode);
    const out: JobRecord[] = [];
    for (const { entry, delivered } of batch) {
      this.#undelivered.delete(delivered.id);
      this.#host.settle(entry, delivered, now);
      out.push(delivered);
    }
    this.#host.enforce(now);
    return out;
  }
}
