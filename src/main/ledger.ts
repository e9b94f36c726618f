import { ForkpoolError, type SerializedError } from '../shared/errors.js';
import type { JobRole } from '../shared/protocol.js';
import type { ResultTag } from '../shared/result-tag.js';
import type { StopReason } from '../shared/tool-loop.js';
import type { UsageByModel } from '../shared/usage.js';

export type JobState = 'queued' | 'running' | 'ended';
export type JobStatus = 'ok' | 'error' | 'partial' | 'failed' | 'cancelled' | 'timed_out';
/** What ended a job: its own answer, a cooperative cancel over the port, or a hard stop of its thread. */
export type EndedBy = 'completed' | 'cooperative' | 'hard' | 'crash' | 'queue';

/** One job's whole story. The ledger is the one source for drain, status and display. */
export interface JobRecord {
  id: string;
  label: string;
  task: string;
  role: JobRole;
  /** The agent turn that spawned it (its wave), or null for a user-started job. */
  wave: number | null;
  state: JobState;
  status?: JobStatus;
  endedBy?: EndedBy;
  /** The job's full answer without the result tag (never capped here). */
  resultText?: string;
  tag?: ResultTag;
  stopReason?: StopReason;
  error?: SerializedError;
  usage: UsageByModel;
  iterations: number;
  attempts: number;
  /** Why the job ran again, one line per re-queue. */
  notes: string[];
  threadId?: number;
  queuedAt: number;
  startedAt?: number;
  endedAt?: number;
  /** The parent turn that received it; set once, never twice. */
  deliveredInTurn?: number;
}

export interface JobEnding {
  status: JobStatus;
  endedBy: EndedBy;
  resultText: string;
  tag?: ResultTag | undefined;
  stopReason?: StopReason | undefined;
  error?: SerializedError | undefined;
  usage: UsageByModel;
  iterations: number;
}

/**
 * Every job moves `queued → running → ended → delivered in turn N` (a running job may go back
 * to `queued` once when its thread died under it through no fault of its own). Transitions are
 * checked: an impossible one is a bug and throws. A job is delivered once and only once.
 */
export class DeliveryLedger {
  readonly #records = new Map<string, JobRecord>();
  #nextId = 1;

  newId(): string {
    return `bg-${this.#nextId++}`;
  }

  add(record: Omit<JobRecord, 'state' | 'usage' | 'iterations' | 'attempts' | 'notes' | 'queuedAt'>, now = Date.now()): JobRecord {
    if (this.#records.has(record.id)) throw new ForkpoolError('INTERNAL', `job ${record.id} is already in the ledger`);
    const full: JobRecord = { ...record, state: 'queued', usage: {}, iterations: 0, attempts: 0, notes: [], queuedAt: now };
    this.#records.set(full.id, full);
    return full;
  }

  get(id: string): Readonly<JobRecord> | undefined {
    return this.#records.get(id);
  }

  markRunning(id: string, threadId: number | undefined, now = Date.now()): void {
    const record = this.#expect(id, 'queued', 'running');
    record.state = 'running';
    record.attempts++;
    record.startedAt = now;
    if (threadId !== undefined) record.threadId = threadId;
  }

  /** Back to the queue after its thread died under it; the note says why. */
  requeue(id: string, note: string): void {
    const record = this.#expect(id, 'running', 'queued');
    record.state = 'queued';
    record.notes.push(note);
    delete record.startedAt;
    delete record.threadId;
  }

  markEnded(id: string, ending: JobEnding, now = Date.now()): JobRecord {
    const record = this.#records.get(id);
    if (!record) throw new ForkpoolError('INTERNAL', `ledger: no job ${id}`);
    if (record.state === 'ended') throw new ForkpoolError('INTERNAL', `ledger: job ${id} ended twice`);
    record.state = 'ended';
    record.status = ending.status;
    record.endedBy = ending.endedBy;
    record.resultText = ending.resultText;
    record.usage = ending.usage;
    record.iterations = ending.iterations;
    record.endedAt = now;
    if (ending.tag) record.tag = ending.tag;
    if (ending.stopReason) record.stopReason = ending.stopReason;
    if (ending.error) record.error = ending.error;
    return record;
  }

  /**
   * Hands over every ended, undelivered job that `accept` takes, marking each delivered in
   * `turn`. What this returns is never returned again.
   */
  drain(turn: number, accept: (record: Readonly<JobRecord>) => boolean = () => true): JobRecord[] {
    const out: JobRecord[] = [];
    for (const record of this.#records.values()) {
      if (record.state !== 'ended' || record.deliveredInTurn !== undefined || !accept(record)) continue;
      record.deliveredInTurn = turn;
      out.push(structuredClone(record));
    }
    return out;
  }

  /** Ended and not yet delivered. */
  undelivered(): Readonly<JobRecord>[] {
    return [...this.#records.values()].filter((r) => r.state === 'ended' && r.deliveredInTurn === undefined);
  }

  /** A copy of every record, oldest first; cheap enough for every render. */
  snapshot(): JobRecord[] {
    return [...this.#records.values()].map((r) => ({ ...r, notes: [...r.notes] }));
  }

  count(state: JobState): number {
    let n = 0;
    for (const record of this.#records.values()) if (record.state === state) n++;
    return n;
  }

  #expect(id: string, from: JobState, to: JobState): JobRecord {
    const record = this.#records.get(id);
    if (!record) throw new ForkpoolError('INTERNAL', `ledger: no job ${id}`);
    if (record.state !== from) throw new ForkpoolError('INTERNAL', `ledger: job ${id} cannot go ${record.state} → ${to}`);
    return record;
  }
}
