/**
 * How the in-memory ledger writes through to its durable store when the store can fail (a full
 * disk, an I/O error, a read-only file). Two kinds of write:
 *
 * - **strict**: a write the caller asked for and can be told no (a spawn, a delivery). It throws
 *   a {@link LedgerWriteError} and the ledger in memory does not move.
 * - **lenient**: a write that records what already happened (a job started, ended, was
 *   dispatched; an alert came). It cannot be refused: memory moves, the record is kept as
 *   *unsaved* and written again before the next write; the ledger is degraded until then.
 *
 * Either way the failure is reported once per degraded spell (then counted), and the end of the
 * spell is reported too. Nothing here throws anything but the typed error of a strict write.
 */
import { TIMINGS } from '../../shared/fixed-limits.js';
import { LedgerWriteError, serializeError, type SerializedError } from '../../shared/errors.js';
import type { JobStore } from './ledger-store.js';
import type { JobRecord } from './job-record.js';

export type WriteMode = 'strict' | 'lenient';

/** What the durable side of a ledger is like now. */
export interface LedgerHealth {
  /** No failure since the last write that went through, and nothing left unsaved. */
  ok: boolean;
  /** Jobs whose latest record is only in memory (written again before the next write). */
  unsaved: number;
  /** Failed writes since the ledger opened. */
  failedWrites: number;
  /** The failure that began this degraded spell (absent when ok). */
  failure?: { code: string; message: string; operation: string; since: number };
}

/** A storage failure or the end of one, as the ledger reports it to its owner (the manager). */
export type StorageReport =
  | { kind: 'failed'; error: SerializedError; sqliteCode: string; operation: string; unsaved: number; first: boolean }
  | { kind: 'recovered'; failedWrites: number };

export class StoreWriter {
  readonly #store: JobStore;
  readonly #current: (id: string) => { record: Readonly<JobRecord>; position: number } | undefined;
  readonly #nextId: () => number;
  readonly #report: (report: StorageReport) => void;
  readonly #unsaved = new Set<string>();
  #failure: LedgerHealth['failure'];
  #failedWrites = 0;
  /**
   * Jobs a refused (strict) write was about: their records as they are now are written again by
   * the retry, to learn whether the disk takes writes again (nothing else may come to try).
   */
  readonly #recheck = new Set<string>();
  /** While something is unsaved or refused: the next try, unprompted (a quiet process writes nothing else). */
  #retry: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(options: {
    store: JobStore;
    /** A job's record and position now (undefined once forgotten): what an unsaved job is written as. */
    current: (id: string) => { record: Readonly<JobRecord>; position: number } | undefined;
    nextId: () => number;
    report: (report: StorageReport) => void;
  }) {
    this.#store = options.store;
    this.#current = options.current;
    this.#nextId = options.nextId;
    this.#report = options.report;
  }

  health(): LedgerHealth {
    const ok = this.#failure === undefined && this.#unsaved.size === 0;
    return { ok, unsaved: this.#unsaved.size, failedWrites: this.#failedWrites, ...(this.#failure ? { failure: { ...this.#failure } } : {}) };
  }

  /** Writes job records, all or none (one transaction). */
  put(
    records: ReadonlyArray<{ record: Readonly<JobRecord>; position: number }>,
    mode: WriteMode,
    operation = `job ${records.map((r) => r.record.id).join(', ')}`,
  ): void {
    const write = () => {
      for (const { record, position } of records) this.#store.put(record, position, this.#nextId());
    };
    this.write(
      operation,
      write,
      mode,
      records.map((r) => r.record.id),
    );
  }

  /**
   * Runs `write` against the store, after whatever earlier failed. Strict: a failure throws and
   * (the store being transactional) nothing was written. Lenient: a failure is reported and
   * the jobs in `ids` stay unsaved, to be written again before the next write.
   */
  write(operation: string, write: () => void, mode: WriteMode, ids: readonly string[] = []): void {
    try {
      this.#store.transaction(() => {
        this.#writeUnsaved();
        write();
      });
    } catch (error) {
      if (!(error instanceof LedgerWriteError)) throw error;
      this.#failed(operation, error, ids, mode);
      if (mode === 'strict') throw error;
      return;
    }
    this.#unsaved.clear();
    this.#recheck.clear();
    this.#stopRetry();
    if (this.#failure) {
      this.#failure = undefined;
      this.#report({ kind: 'recovered', failedWrites: this.#failedWrites });
    }
  }

  /**
   * One last try at writing what is unsaved (the ledger closes), and no more retries. The
   * health says what is still only in memory.
   */
  close(): void {
    this.#closed = true;
    this.#stopRetry();
    if (this.#unsaved.size > 0) this.write('write unsaved records at close', () => {}, 'lenient');
  }

  /** Retention forgot a delivered job. Lenient: a row left on disk is a delivered record a restart finds delivered (harmless). */
  forget(id: string): void {
    this.#unsaved.delete(id);
    this.write(`forget job ${id}`, () => this.#store.forget(id), 'lenient');
  }

  #writeUnsaved(): void {
    for (const id of this.#unsaved) {
      const current = this.#current(id);
      if (current) this.#store.put(current.record, current.position, this.#nextId());
    }
  }

  #stopRetry(): void {
    clearTimeout(this.#retry);
    this.#retry = undefined;
  }

  /**
   * Tried again after a while, and again after each failure, until one write goes through: what
   * is unsaved, and the current records of what a refused write was about. Its success is the
   * `recovered` report a session waits for to deliver what the disk refused.
   */
  #scheduleRetry(): void {
    if (this.#closed || this.#retry !== undefined || this.#unsaved.size + this.#recheck.size === 0) return;
    this.#retry = setTimeout(() => {
      this.#retry = undefined;
      const recheck = () => {
        for (const id of this.#recheck) {
          const current = this.#current(id);
          if (current) this.#store.put(current.record, current.position, this.#nextId());
        }
      };
      try {
        this.write('write again what a failed write left', recheck, 'lenient');
      } catch (error) {
        // Not a storage failure (the store was closed under it): reported, and nothing is left to retry on.
        this.#report({ kind: 'failed', error: serializeError(error), sqliteCode: 'UNKNOWN', operation: 'retry', unsaved: this.#unsaved.size, first: false });
      }
    }, TIMINGS.ledgerRetryMs);
    // A retry never keeps a process alive that has nothing else to do.
    this.#retry.unref();
  }

  #failed(operation: string, error: LedgerWriteError, ids: readonly string[], mode: WriteMode): void {
    this.#failedWrites++;
    if (mode === 'lenient') for (const id of ids) this.#unsaved.add(id);
    else for (const id of ids) this.#recheck.add(id);
    const first = this.#failure === undefined;
    this.#failure ??= { code: error.sqliteCode, message: error.message, operation, since: Date.now() };
    this.#report({ kind: 'failed', error: serializeError(error), sqliteCode: error.sqliteCode, operation, unsaved: this.#unsaved.size, first });
    this.#scheduleRetry();
  }
}
