import type { SerializedError } from '../../shared/errors.js';
import type { JobRecord } from './job-record.js';

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

/** Freezes plain data all the way down (records hold only plain objects, arrays and primitives). */
export function freeze<T>(value: T): Readonly<T> {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    for (const inner of Object.values(value)) freeze(inner);
    Object.freeze(value);
  }
  return value;
}
