import type { SerializedError } from '../../shared/errors.js';
import type { JobEnding, JobRecord } from './job-record.js';

// Frozen plain values for the ledger's records: what it hands out never changes under a reader.

/** A record as delivered in `turn` (frozen; nothing changes until it is written). */
export function deliveredRecord(record: Readonly<JobRecord>, turn: number, now: number, unread?: [number, number]): Readonly<JobRecord> {
  const partial = unread !== undefined && unread[0] < unread[1];
  return freeze({ ...record, deliveredInTurn: turn, deliveredAt: now, ...(partial ? { resultUnread: [...unread] as [number, number] } : {}) });
}

/** An error reduced to what a job list shows: its kind, code, message and numbers; no stack, no cause chain. */
export function slimError(error: SerializedError): SerializedError {
  const { stack: _stack, cause: _cause, ...rest } = error;
  return { ...rest, message: rest.message.length > 500 ? detached(`${rest.message.slice(0, 497)}...`) : rest.message };
}

/**
 * A flat copy of a string. V8 may represent a slice as a view into its parent string, which
 * would keep the whole task alive behind its 200-character head: the very memory dropped here.
 */
export function detached(text: string): string {
  return Buffer.from(text, 'utf8').toString('utf8');
}

/**
 * A deep copy of a record's plain data (objects, arrays, primitives), for `add`: the caller's
 * objects stay theirs. Unlike `structuredClone` it shares strings (immutable) instead of copying
 * each one, and the jobs of one agent share one frozen list of tool names: with 100,000 jobs in
 * flight those copies were ~400 bytes a job on the main thread.
 */
export function copyRecordData<T extends { tools?: string[] }>(record: T): T {
  const copy = copyData(record);
  if (copy.tools) copy.tools = sharedNames(copy.tools);
  return copy;
}

function copyData<T>(value: T): T {
  if (Array.isArray(value)) return value.map(copyData) as T;
  if (value === null || typeof value !== 'object') return value;
  const proto: unknown = Object.getPrototypeOf(value);
  // Not plain data (none is expected in a record): copied as before.
  if (proto !== Object.prototype && proto !== null) return structuredClone(value);
  const out: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) out[key] = copyData(inner);
  return out as T;
}

/** Equal name lists, frozen, shared by every record that carries one (a few distinct lists: one per agent and spawn shape). */
const namesByKey = new Map<string, string[]>();
const NAME_LISTS_HELD = 256;

function sharedNames(names: string[]): string[] {
  const key = names.join('\0');
  const held = namesByKey.get(key);
  if (held) return held;
  // Many distinct lists would be an unusual fan-out: start over rather than grow without bound.
  if (namesByKey.size >= NAME_LISTS_HELD) namesByKey.clear();
  const frozen = Object.freeze([...names]) as string[];
  namesByKey.set(key, frozen);
  return frozen;
}

/** Freezes plain data all the way down (records hold only plain objects, arrays and primitives). */
export function freeze<T>(value: T): Readonly<T> {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    for (const inner of Object.values(value)) freeze(inner);
    Object.freeze(value);
  }
  return value;
}

/** The record of a job that ended: its ending copied in (small parts cloned: the caller's objects stay theirs). */
export function endedRecord(record: Readonly<JobRecord>, ending: JobEnding, now: number, resumable: boolean): JobRecord {
  const { waitingForChildren: _waiting, awaitingApproval: _pending, approvalWait: _wait, sleepWait: _sleep, handedResults: _handed, ...base } = record;
  return {
    ...base,
    ...(resumable ? { resumable: true } : {}),
    state: 'ended',
    status: ending.status,
    endedBy: ending.endedBy,
    resultText: ending.resultText,
    usage: structuredClone(ending.usage),
    iterations: ending.iterations,
    endedAt: now,
    ...(ending.tag ? { tag: structuredClone(ending.tag) } : {}),
    ...(ending.stopReason ? { stopReason: ending.stopReason } : {}),
    ...(ending.error ? { error: structuredClone(ending.error) } : {}),
    ...(ending.children?.length ? { children: [...ending.children] } : {}),
    ...(ending.childrenOnEnd ? { childrenOnEnd: ending.childrenOnEnd } : {}),
    ...(ending.treeUsage ? { treeUsage: structuredClone(ending.treeUsage) } : {}),
    ...(ending.budgetExceeded ? { budgetExceeded: ending.budgetExceeded } : {}),
    ...(ending.budgetReport ? { budgetReport: structuredClone(ending.budgetReport) } : {}),
    ...(ending.reads?.length ? { reads: structuredClone(ending.reads) } : {}),
    ...(ending.deferred ? { deferredUntil: ending.deferred.at, deferReason: ending.deferred.reason } : {}),
    ...('data' in ending && ending.data !== undefined ? { data: structuredClone(ending.data) } : {}),
  };
}

/** An ended job queued again (restart): everything of its ending and delivery gone, out of its wave. */
export function reopenedRecord(record: Readonly<JobRecord>, note: string): JobRecord {
  const {
    status: _status,
    endedBy: _endedBy,
    resultText: _text,
    resultDropped: _dropped,
    data: _data,
    tag: _tag,
    stopReason: _stop,
    error: _error,
    budgetExceeded: _over,
    budgetReport: _report,
    startedAt: _started,
    endedAt: _ended,
    threadId: _thread,
    deliveredInTurn: _turn,
    deliveredAt: _at,
    resultUnread: _unread,
    reads: _reads,
    // Restarted by request: its re-runs after restarts are counted afresh.
    modelRuns: _modelRuns,
    ...rest
  } = record;
  return { ...rest, wave: null, state: 'queued', usage: {}, iterations: 0, notes: [...record.notes, note] };
}

/** A delivered record without its result: the task cut to `taskKeptChars`, the error slimmed. */
export function resultDroppedRecord(record: Readonly<JobRecord>, taskKeptChars: number): JobRecord {
  const { resultText: _text, data: _data, error, ...rest } = record;
  return {
    ...rest,
    task: record.task.length > taskKeptChars ? detached(`${record.task.slice(0, taskKeptChars - 3)}...`) : record.task,
    resultDropped: true,
    ...(error ? { error: slimError(error) } : {}),
  };
}
