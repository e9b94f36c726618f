import { ForkpoolError } from '../../shared/errors.js';
import type { JobRecord, JobState } from './job-record.js';
import type { JobStore } from './ledger-store.js';
import { StoreWriter, type LedgerHealth, type StorageReport, type WriteMode } from './ledger-writes.js';
import { freeze } from './record-values.js';

/** A record the ledger holds, with its spawn order (drain hands jobs over oldest first). */
export interface Entry {
  record: Readonly<JobRecord>;
  /** Spawn order; drain hands jobs over oldest first. */
  position: number;
}

/**
 * The ledger's record store (ledger.ts): each job's frozen record and spawn order, the counts
 * per state, and the write-through to the durable store (none: memory only). A record is
 * written before it changes here, so a failing strict write leaves the table where it was.
 */
export class RecordTable {
  readonly #entries = new Map<string, Entry>();
  readonly #counts: Record<JobState, number> = { queued: 0, running: 0, ended: 0 };
  #position = 0;
  readonly #writer: StoreWriter | undefined;
  /** The jobs whose close-caused ending is kept in memory only (DeliveryLedger.keepUnfinishedOnClose). */
  readonly #unwritten = new Set<string>();

  constructor(store: JobStore | undefined, nextId: () => number, onStorage: (report: StorageReport) => void) {
    // A close-caused ending kept in memory (#unwritten) is never written, not even as an unsaved record.
    const current = (id: string) => (this.#unwritten.has(id) ? undefined : this.#entries.get(id));
    this.#writer = store && new StoreWriter({ store, current, nextId, report: onStorage });
  }

  /** Whether records are written through to a durable store. */
  get durable(): boolean {
    return this.#writer !== undefined;
  }

  health(): LedgerHealth {
    return this.#writer?.health() ?? { ok: true, unsaved: 0, failedWrites: 0 };
  }

  closeWrites(): void {
    this.#writer?.close();
  }

  writeAside(operation: string, write: () => void, mode: WriteMode): void {
    this.#writer?.write(operation, write, mode);
  }

  get(id: string): Entry | undefined {
    return this.#entries.get(id);
  }

  get size(): number {
    return this.#entries.size;
  }

  count(state: JobState): number {
    return this.#counts[state];
  }

  /** Every record, oldest first: the table's own frozen values, not copies. */
  records(): Readonly<JobRecord>[] {
    return Array.from(this.#entries.values(), (e) => e.record);
  }

  /** A record read back from the store (a restart): not written again. */
  restore(record: Readonly<JobRecord>, position: number): void {
    this.#entries.set(record.id, { record, position });
    this.#counts[record.state]++;
    this.#position = Math.max(this.#position, position + 1);
  }

  /** A new record, last in spawn order; written first, in `mode`. */
  insert(record: Readonly<JobRecord>, mode: WriteMode): void {
    this.#writer?.put([{ record, position: this.#position }], mode);
    this.#entries.set(record.id, { record, position: this.#position++ });
    this.#counts[record.state]++;
  }

  /**
   * Every change of a record but a spawn and a delivery records what already happened (a start,
   * an ending, a re-queue): lenient by default, it cannot be refused (see ledger-writes.ts).
   */
  replace(id: string, next: JobRecord, mode: WriteMode = 'lenient'): Readonly<JobRecord> {
    const entry = this.#entries.get(id) as Entry;
    const frozen = freeze(next);
    // Written first: a strict write that fails leaves the ledger in memory where it was.
    if (!this.#unwritten.has(id)) this.#writer?.put([{ record: frozen, position: entry.position }], mode);
    if (entry.record.state !== next.state) {
      this.#counts[entry.record.state]--;
      this.#counts[next.state]++;
    }
    entry.record = frozen;
    return entry.record;
  }

  /** The entry of a job in state `from`, about to go `to`; an impossible transition is a bug and throws. */
  expect(id: string, from: JobState, to: JobState): Entry {
    const entry = this.#entries.get(id);
    if (!entry) throw new ForkpoolError('INTERNAL', `ledger: no job ${id}`);
    if (entry.record.state !== from) throw new ForkpoolError('INTERNAL', `ledger: job ${id} cannot go ${entry.record.state} → ${to}`);
    return entry;
  }

  /** From now on this job's record stays in memory only (a close-caused ending a restart runs again). */
  keepInMemory(id: string): void {
    this.#unwritten.add(id);
  }

  /** Writes a batch of delivered records, all or none, in `mode` (one kept in memory only is left out). */
  writeDelivered(batch: ReadonlyArray<{ entry: Entry; delivered: Readonly<JobRecord> }>, mode: WriteMode): void {
    const records = batch
      .map(({ entry, delivered }) => ({ record: delivered, position: entry.position }))
      .filter(({ record }) => !this.#unwritten.has(record.id));
    if (records.length > 0) this.#writer?.put(records, mode, `deliver ${records.map((r) => r.record.id).join(', ')}`);
  }

  /** A delivered record, written already (writeDelivered): its state is unchanged. */
  settle(entry: Entry, delivered: Readonly<JobRecord>): void {
    entry.record = delivered;
  }

  /** Gone from memory, its row from the store (lenient: a row left on disk is a delivered record a restart finds delivered, harmless). */
  remove(id: string): boolean {
    const entry = this.#entries.get(id);
    if (!entry) return false;
    if (!this.#unwritten.has(id)) this.#writer?.forget(id);
    this.#entries.delete(id);
    this.#counts[entry.record.state]--;
    return true;
  }
}
