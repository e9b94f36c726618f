import { ForkpoolError } from '../../shared/errors.js';
import { DEFAULTS } from '../../shared/defaults.js';
import type { JobStore, StoredJob } from './ledger-store.js';
import type { LedgerHealth, StorageReport, WriteMode } from './ledger-writes.js';
import type { JobEnding, JobRecord, JobState, LedgerStats, RetentionPolicy, SentMessage, Speculation } from './job-record.js';
import { Retention } from './retention.js';
import { copyRecordData, endedRecord, freeze, reopenedRecord, resultDroppedRecord } from './record-values.js';
import { Deliveries } from './deliveries.js';
import { RecordTable, type Entry } from './record-table.js';
import { runningRecord } from './wait-records.js';
import { LedgerWaits } from './ledger-waits.js';

export type {
  ApprovalWait,
  SleepWait,
  EndedBy,
  JobEnding,
  JobRecord,
  JobState,
  JobStatus,
  LedgerStats,
  RetentionPolicy,
  SentMessage,
  Speculation,
} from './job-record.js';

/** Why a completion reported from elsewhere is refused (see {@link DeliveryLedger.refuseCompletion}). */
export type CompletionRefusal = 'unknown' | 'duplicate' | 'stale' | 'not-running';

/** Head of the task kept once a record's result is dropped: enough to recognise it in a list. */
const TASK_KEPT_CHARS = 120;

/**
 * Every job moves `queued → running → ended → delivered in turn N` (a running job may go back
 * to `queued` once when its thread died under it through no fault of its own). Transitions are
 * checked: an impossible one is a bug and throws. A job is delivered once and only once.
 *
 * Memory stays bounded for a process that lives for weeks: {@link Retention} (retention.ts)
 * decides when a delivered record's result text is dropped and when the record is forgotten.
 */
export class DeliveryLedger {
  /** The records, their counts and spawn order, written through to the durable store (record-table.ts). */
  readonly #table: RecordTable;
  /** Ended, not delivered, and their hand-over (deliveries.ts). */
  readonly #deliveries: Deliveries;
  /** Which delivered records keep their result, and which are known at all (retention.ts). */
  readonly #retention: Retention;
  #nextId = 1;
  #resultsDropped = 0;
  #forgotten = 0;
  /** Closing (see keepUnfinishedOnClose). */
  #closing = false;
  /** A job's pauses (waiting for its children, for approvals, asleep) and the results held meanwhile (ledger-waits.ts). */
  readonly waits: LedgerWaits;

  readonly #onForget: (id: string) => void;
  readonly #onResultDropped: (id: string) => void;

  /**
   * `onStorage`: a durable write failed, or writes go through again (see ledger-writes.ts).
   * `onForget`: retention forgot a record (whoever keeps something per job lets go of it too).
   * `onResultDropped`: retention dropped a delivered record's result (its transcript goes with it).
   */
  constructor(
    retention: Partial<RetentionPolicy> = {},
    store?: JobStore,
    onStorage: (report: StorageReport) => void = () => {},
    onForget: (id: string) => void = () => {},
    onResultDropped: (id: string) => void = () => {},
  ) {
    this.#retention = new Retention(
      { ...DEFAULTS.background.retention, ...retention },
      {
        get: (id) => this.#table.get(id)?.record,
        dropResult: (id) => this.#dropResult(id),
        forget: (id) => this.#forget(id),
      },
    );
    this.#onForget = onForget;
    this.#onResultDropped = onResultDropped;
    this.#table = new RecordTable(store, () => this.#nextId, onStorage);
    this.waits = new LedgerWaits(this.#table);
    this.#deliveries = new Deliveries({
      entry: (id) => this.#table.get(id) as Entry,
      write: (batch, mode) => this.#table.writeDelivered(batch, mode),
      settle: (entry, delivered, now) => {
        this.#table.settle(entry, delivered);
        this.#retention.delivered(delivered, now);
      },
      enforce: (now) => this.#retention.enforce(now),
    });
  }

  /** The durable side: ok, or degraded (what failed, since when, how many records wait to be written). Always ok in memory. */
  health(): LedgerHealth {
    return this.#table.health();
  }

  /** The manager has closed: what is unsaved is tried once more, and no retry is left behind. */
  closeWrites(): void {
    this.#table.closeWrites();
  }

  /** A write beside the records (a job's spec, an alert): lenient (reported, never thrown); strict for one the caller may be refused (a message). */
  writeAside(operation: string, write: () => void, mode: WriteMode = 'lenient'): void {
    this.#table.writeAside(operation, write, mode);
  }

  /**
   * Fills an empty ledger with what a durable store kept (a restart). Records come back as they
   * were written: ended and undelivered ones wait for the next drain; the caller decides what
   * happens to queued and running ones (see recovery.ts).
   */
  restore(jobs: readonly StoredJob[], nextId: number): void {
    if (this.#table.size > 0) throw new ForkpoolError('INTERNAL', 'ledger: restore into a ledger that is in use');
    const delivered: Array<Readonly<JobRecord>> = [];
    for (const { record, position } of jobs) {
      const frozen = freeze(structuredClone(record));
      this.#table.restore(frozen, position);
      const n = Number(/^bg-(\d+)$/.exec(frozen.id)?.[1] ?? 0);
      this.#nextId = Math.max(this.#nextId, nextId, n + 1);
      if (frozen.state === 'ended' && frozen.deliveredInTurn === undefined) this.#deliveries.wait(frozen.id);
      if (frozen.deliveredInTurn !== undefined) delivered.push(frozen);
    }
    delivered.sort((a, b) => (a.deliveredAt ?? 0) - (b.deliveredAt ?? 0));
    for (const record of delivered) this.#retention.delivered(record, record.deliveredAt ?? 0);
  }

  /**
   * A durable manager closing without draining calls it: from now on an ending its close
   * caused (`JobEnding.byClose`) stays in memory, so the next process on the ledger finds that
   * job unfinished and runs it again, while every other change (a job that finished in the
   * close's grace, a delivery) is still written: each task gets one reported ending.
   */
  keepUnfinishedOnClose(): void {
    this.#closing = true;
  }

  /**
   * A delivered job goes back to waiting for delivery: the turn it was delivered in never
   * committed (the process died during it), so the parent never kept it. The note says so.
   */
  undeliver(id: string, note: string): Readonly<JobRecord> | undefined {
    const record = this.#table.get(id)?.record;
    if (!record || record.deliveredInTurn === undefined || record.resultDropped) return undefined;
    const { deliveredInTurn: _turn, deliveredAt: _at, ...rest } = record;
    const back = this.#table.replace(id, { ...rest, notes: [...record.notes, note] }, 'lenient');
    this.#deliveries.wait(id);
    return back;
  }

  /**
   * The one gate for a completion reported from elsewhere (a remote executor, a retried
   * delivery): undefined when attempt `attempt` of job `id` (its `attempts` when that run
   * started) may record its ending now; else why not: `unknown`, `duplicate` (the job has ended
   * already), `not-running` (queued, never started or waiting for its children: no attempt of
   * it runs, and ending it would leave it in the queue to be launched and "ended twice") or
   * `stale` (an older attempt, superseded by a re-run). With a durable store the answer holds
   * across restarts. JobEngine.completeAttempt (src/main/jobs/engine.ts) acts on it.
   */
  refuseCompletion(id: string, attempt: number): CompletionRefusal | undefined {
    const record = this.#table.get(id)?.record;
    if (!record) return 'unknown';
    if (record.state === 'ended') return 'duplicate';
    if (record.state !== 'running') return 'not-running';
    return attempt === record.attempts ? undefined : 'stale';
  }

  newId(): string {
    return `bg-${this.#nextId++}`;
  }

  add(record: Omit<JobRecord, 'state' | 'usage' | 'iterations' | 'attempts' | 'notes' | 'queuedAt'>, now = Date.now()): Readonly<JobRecord> {
    if (this.#table.get(record.id)) throw new ForkpoolError('INTERNAL', `job ${record.id} is already in the ledger`);
    const full = freeze<JobRecord>({ ...copyRecordData(record), state: 'queued', usage: {}, iterations: 0, attempts: 0, notes: [], queuedAt: now });
    // Written before it exists anywhere else: a job the caller hears of is a job a restart finds.
    // Strict: a spawn the disk cannot take is refused (LEDGER_WRITE_FAILED), nothing booked.
    this.#table.insert(full, 'strict');
    this.#retention.enforce(now);
    return full;
  }

  /** The record (a frozen value), or undefined for an unknown or forgotten id. */
  get(id: string): Readonly<JobRecord> | undefined {
    return this.#table.get(id)?.record;
  }

  /** True for an id this ledger handed out and has since forgotten (delivered long ago). */
  wasForgotten(id: string): boolean {
    const n = /^bg-(\d+)$/.exec(id)?.[1];
    return n !== undefined && Number(n) < this.#nextId && !this.#table.get(id) && this.#forgotten > 0;
  }

  /** Ended, or delivered and forgotten since: a wave check must not wait on a forgotten member. */
  hasEnded(id: string): boolean {
    return this.#table.get(id)?.record.state === 'ended' || this.wasForgotten(id);
  }

  markRunning(id: string, threadId: number | undefined, now = Date.now()): void {
    this.#table.replace(id, runningRecord(this.#table.expect(id, 'queued', 'running').record, threadId, now));
  }

  /** This run sent its first model request: see {@link JobRecord.modelRuns}. */
  markModelReached(id: string): void {
    const record = this.#table.get(id)?.record;
    if (!record || record.state === 'ended') return;
    this.#table.replace(id, { ...record, modelRuns: (record.modelRuns ?? 0) + 1 });
  }

  /** About to be handed to the executor (launch `n`): written before the launch, see {@link JobRecord.dispatched}. */
  markDispatched(id: string, n: number): void {
    const { record } = this.#table.expect(id, 'queued', 'queued');
    this.#table.replace(id, { ...record, dispatched: n });
  }

  /** Back to the queue after its thread died under it; the note says why. */
  requeue(id: string, note: string): void {
    const { record } = this.#table.expect(id, 'running', 'queued');
    const { startedAt: _started, threadId: _thread, dispatched: _dispatched, ...rest } = record;
    this.#table.replace(id, { ...rest, state: 'queued', notes: [...record.notes, note] });
  }

  /**
   * An ended job runs again on request (restart): back to `queued` without its ending. An
   * undelivered result is superseded, never delivered; the note says which. It leaves its wave
   * (that wave may have fired already): it is delivered as a job of its own when it ends.
   */
  reopen(id: string, note: string): Readonly<JobRecord> {
    const { record } = this.#table.expect(id, 'ended', 'queued');
    this.#deliveries.withdraw(id);
    this.#retention.release(id);
    return this.#table.replace(id, reopenedRecord(record, note));
  }

  /** A note on a queued job: why it runs again (restart recovery). */
  noteQueued(id: string, note: string): Readonly<JobRecord> {
    const { record } = this.#table.expect(id, 'queued', 'queued');
    const { dispatched: _dispatched, ...rest } = record;
    return this.#table.replace(id, { ...rest, notes: [...record.notes, note] });
  }

  /** The messages sent to a job so far, and which it has received (see steering.ts). */
  noteMessages(id: string, messages: readonly SentMessage[]): void {
    const entry = this.#table.get(id);
    if (entry) this.#table.replace(id, { ...entry.record, messages: messages.map((m) => ({ ...m })) });
  }

  /** Its `agent_<name>` call resolved early (Remy's split lifecycle): it goes on in the background. */
  markBackgrounded(id: string): Readonly<JobRecord> | undefined {
    const entry = this.#table.get(id);
    if (!entry || entry.record.backgrounded) return entry?.record;
    return this.#table.replace(id, { ...entry.record, backgrounded: true });
  }

  /** A speculative job's state changed: it was referred to (`kept`) or cancelled as a guess (`dropped`). */
  markSpeculation(id: string, speculative: Speculation): void {
    const entry = this.#table.get(id);
    if (entry && entry.record.speculative !== undefined) this.#table.replace(id, { ...entry.record, speculative });
  }

  markEnded(id: string, ending: JobEnding, now = Date.now()): Readonly<JobRecord> {
    const entry = this.#table.get(id);
    if (!entry) throw new ForkpoolError('INTERNAL', `ledger: no job ${id}`);
    const { record } = entry;
    if (record.state === 'ended') throw new ForkpoolError('INTERNAL', `ledger: job ${id} ended twice`);
    const resumable = this.#closing && ending.byClose === true && this.#table.durable;
    if (resumable) this.#table.keepInMemory(id);
    const ended = this.#table.replace(id, endedRecord(record, ending, now, resumable));
    this.#deliveries.wait(id);
    this.#retention.enforce(now);
    return ended;
  }

  /**
   * Hands over every ended, undelivered job that `accept` takes, oldest spawn first, marking
   * each delivered in `turn`. What this returns is never returned again. The records returned
   * hold their full result, whatever retention drops from the ledger afterwards. `unread` says,
   * per job, which characters of its result the parent was not shown (absent: it saw them all).
   */
  drain(
    turn: number,
    accept: (record: Readonly<JobRecord>) => boolean = () => true,
    now = Date.now(),
    unread?: ReadonlyMap<string, [number, number]>,
  ): JobRecord[] {
    return this.#deliveries.drain(turn, accept, now, unread);
  }

  /** Delivers one ended job (a consumer that takes results one by one, like `fanout`). Undefined if it is not ended or was delivered already. */
  markDelivered(id: string, turn: number, now = Date.now(), unread?: [number, number]): JobRecord | undefined {
    return this.#deliveries.deliverOne(id, turn, now, unread, 'strict');
  }

  /**
   * A child's result handed to the job that spawned it (posted to it, or kept for its resume),
   * in the parent's iteration `turn`. Lenient, unlike a delivery to the session: the hand-over
   * happens in this process whatever the disk says, so a write that fails keeps the record
   * unsaved (written again with the next write) instead of stopping the result on its way.
   */
  markHandedToParent(id: string, turn: number, now = Date.now()): JobRecord | undefined {
    return this.#deliveries.deliverOne(id, turn, now, undefined, 'lenient');
  }

  /**
   * The parent read characters `[from, to)` of a result delivered in part. A read that starts
   * within what it had not seen moves the unread part on; once none is left, the result falls
   * under retention like any delivered one.
   */
  markShown(id: string, from: number, to: number, now = Date.now()): Readonly<JobRecord> | undefined {
    const record = this.#table.get(id)?.record;
    const unread = record?.resultUnread;
    if (!record || !unread || from > unread[0] || to <= unread[0]) return record;
    if (to < unread[1]) return this.#table.replace(id, { ...record, resultUnread: [to, unread[1]] });
    const { resultUnread: _unread, ...whole } = record;
    this.#retention.readToEnd(id, now);
    const updated = this.#table.replace(id, whole);
    this.#retention.enforce(now);
    return updated;
  }

  /** Ended and not yet delivered, oldest spawn first. */
  undelivered(): Readonly<JobRecord>[] {
    return this.#deliveries.waiting().map((e) => e.record);
  }

  /** How many jobs wait for delivery; O(1). */
  get undeliveredCount(): number {
    return this.#deliveries.size;
  }

  /**
   * Every known record, oldest first. The records are the ledger's own frozen values, not
   * copies: a call costs one array of pointers, whatever the results weigh.
   */
  snapshot(): Readonly<JobRecord>[] {
    return this.#table.records();
  }

  count(state: JobState): number {
    return this.#table.count(state);
  }

  stats(): LedgerStats {
    return {
      records: this.#table.size,
      undelivered: this.#deliveries.size,
      resultsKept: this.#retention.resultsKept,
      resultsDropped: this.#resultsDropped,
      forgotten: this.#forgotten,
    };
  }

  /** Retention forgets a delivered record: gone from memory, its row from the store (lenient: a row left on disk is a delivered record a restart finds delivered, harmless). */
  #forget(id: string): void {
    if (!this.#table.remove(id)) return;
    this.#forgotten++;
    this.#onForget(id);
  }

  #dropResult(id: string): void {
    const record = this.#table.get(id)?.record;
    if (!record || record.resultDropped || record.deliveredInTurn === undefined) return;
    this.#table.replace(id, resultDroppedRecord(record, TASK_KEPT_CHARS));
    this.#resultsDropped++;
    this.#onResultDropped(id);
  }
}
