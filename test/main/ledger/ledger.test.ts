/** The delivery ledger on its own: checked transitions and exactly-once delivery. */
import { describe, expect, it } from 'vitest';
import { DeliveryLedger, type JobEnding, type JobRecord } from '../../../src/main/ledger/ledger.js';
import { ForkpoolError } from '../../../src/shared/errors.js';

const OK: JobEnding = { status: 'ok', endedBy: 'completed', resultText: 'found it', usage: {}, iterations: 2 };

function ledgerWith(...roles: Array<'primary' | 'user'>): { ledger: DeliveryLedger; ids: string[] } {
  const ledger = new DeliveryLedger();
  const ids = roles.map((role, i) => {
    const id = ledger.newId();
    ledger.add({ id, label: `job ${i}`, task: `task ${i}`, role, wave: role === 'user' ? null : 1 }, 1_000 + i);
    return id;
  });
  return { ledger, ids };
}

function internalError(fn: () => unknown): ForkpoolError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ForkpoolError);
    expect((error as ForkpoolError).code).toBe('INTERNAL');
    return error as ForkpoolError;
  }
  throw new Error('expected a throw');
}

describe('DeliveryLedger transitions', () => {
  it('hands out distinct ids and refuses a duplicate', () => {
    const { ledger, ids } = ledgerWith('primary', 'primary');
    expect(new Set(ids).size).toBe(2);
    internalError(() => ledger.add({ id: ids[0] as string, label: 'dup', task: 't', role: 'primary', wave: 1 }));
  });

  it('moves queued → running → ended → delivered, with times and attempts', () => {
    const { ledger, ids } = ledgerWith('primary');
    const id = ids[0] as string;
    expect(ledger.get(id)).toMatchObject({ state: 'queued', attempts: 0, queuedAt: 1_000, notes: [], usage: {} });

    ledger.markRunning(id, 7, 1_100);
    expect(ledger.get(id)).toMatchObject({ state: 'running', attempts: 1, threadId: 7, startedAt: 1_100 });

    const ending: JobEnding = { ...OK, tag: { status: 'ok', filesTouched: ['a.ts'] }, stopReason: 'final' };
    const record = ledger.markEnded(id, ending, 1_200);
    expect(record).toMatchObject({ state: 'ended', status: 'ok', endedBy: 'completed', endedAt: 1_200, iterations: 2, stopReason: 'final' });
    expect(record.tag?.filesTouched).toEqual(['a.ts']);
    expect(record.deliveredInTurn).toBeUndefined();

    const [delivered] = ledger.drain(3);
    expect(delivered?.deliveredInTurn).toBe(3);
    expect(ledger.get(id)?.deliveredInTurn).toBe(3);
    expect(ledger.count('ended')).toBe(1);
  });

  it('re-queues a running job with a note, and runs it again', () => {
    const { ledger, ids } = ledgerWith('primary');
    const id = ids[0] as string;
    ledger.markRunning(id, 1, 1_100);
    ledger.requeue(id, 'attempt 1: its thread died under it; re-queued');
    expect(ledger.get(id)).toMatchObject({ state: 'queued', attempts: 1, notes: ['attempt 1: its thread died under it; re-queued'] });
    expect(ledger.get(id)?.startedAt).toBeUndefined();
    expect(ledger.get(id)?.threadId).toBeUndefined();
    ledger.markRunning(id, 2, 1_300);
    expect(ledger.get(id)).toMatchObject({ state: 'running', attempts: 2, threadId: 2, startedAt: 1_300 });
    expect(ledger.markEnded(id, OK).notes).toHaveLength(1);
  });

  it('a queued job may end directly (cancelled while queued) and never has a start time', () => {
    const { ledger, ids } = ledgerWith('primary');
    const id = ids[0] as string;
    const record = ledger.markEnded(id, { ...OK, status: 'cancelled', endedBy: 'queue', resultText: '' });
    expect(record.state).toBe('ended');
    expect(record.startedAt).toBeUndefined();
  });

  it('refuses to end a job twice and keeps the first ending', () => {
    const { ledger, ids } = ledgerWith('primary');
    const id = ids[0] as string;
    ledger.markEnded(id, OK);
    expect(internalError(() => ledger.markEnded(id, { ...OK, status: 'failed' })).message).toMatch(/ended twice/);
    expect(ledger.get(id)?.status).toBe('ok');
  });

  it('throws on impossible transitions and unknown ids', () => {
    const { ledger, ids } = ledgerWith('primary');
    const id = ids[0] as string;
    internalError(() => ledger.requeue(id, 'not running')); // queued → queued
    ledger.markRunning(id, 1);
    internalError(() => ledger.markRunning(id, 1)); // running → running
    ledger.markEnded(id, OK);
    internalError(() => ledger.markRunning(id, 1)); // ended → running
    internalError(() => ledger.requeue(id, 'too late')); // ended → queued
    internalError(() => ledger.markRunning('bg-404', 1));
    internalError(() => ledger.requeue('bg-404', 'x'));
    internalError(() => ledger.markEnded('bg-404', OK));
  });
});

describe('DeliveryLedger drain', () => {
  it('delivers each ended job once, and never a queued or running one', () => {
    const { ledger, ids } = ledgerWith('primary', 'primary', 'primary');
    const [a, b, c] = ids as [string, string, string];
    ledger.markRunning(b, 1);
    ledger.markEnded(c, OK);
    expect(ledger.drain(1).map((r) => r.id)).toEqual([c]);
    expect(ledger.drain(2)).toEqual([]);
    ledger.markEnded(b, OK);
    ledger.markEnded(a, OK);
    // Oldest first.
    expect(ledger.drain(3).map((r) => r.id)).toEqual([a, b]);
    expect(ledger.drain(4)).toEqual([]);
    expect(ledger.snapshot().map((r) => r.deliveredInTurn)).toEqual([3, 3, 1]);
    expect(ledger.undelivered()).toEqual([]);
  });

  it('takes only what the filter accepts and leaves the rest for later', () => {
    const { ledger, ids } = ledgerWith('primary', 'user', 'primary');
    for (const id of ids) ledger.markEnded(id, OK);
    const users = ledger.drain(1, (r) => r.role === 'user');
    expect(users.map((r) => r.id)).toEqual([ids[1]]);
    expect(ledger.undelivered().map((r) => r.id)).toEqual([ids[0], ids[2]]);
    expect(ledger.drain(2, (r) => r.role === 'user')).toEqual([]);
    expect(ledger.drain(2).map((r) => r.id)).toEqual([ids[0], ids[2]]);
    expect(ledger.get(ids[1] as string)?.deliveredInTurn).toBe(1);
  });

  it('hands out frozen values: changing a drained record or a snapshot throws and does not change the ledger', () => {
    const { ledger, ids } = ledgerWith('primary');
    const id = ids[0] as string;
    ledger.markEnded(id, OK);
    const snap = ledger.snapshot()[0] as JobRecord;
    expect(() => snap.notes.push('tampered')).toThrow(TypeError);
    const [drained] = ledger.drain(1) as [JobRecord];
    expect(() => {
      drained.status = 'failed';
    }).toThrow(TypeError);
    expect(() => {
      (drained.usage as Record<string, unknown>).x = 1;
    }).toThrow(TypeError);
    expect(ledger.get(id)?.status).toBe('ok');
    expect(ledger.get(id)?.notes).toEqual([]);
  });

  it("never freezes or keeps the caller's objects", () => {
    const { ledger, ids } = ledgerWith('primary');
    const usage = { m: { promptTokens: 1, completionTokens: 1, totalTokens: 2, requests: 1 } };
    ledger.markEnded(ids[0] as string, { ...OK, usage });
    expect(Object.isFrozen(usage)).toBe(false);
    usage.m.requests = 99;
    expect(ledger.get(ids[0] as string)?.usage.m?.requests).toBe(1);
  });
});
