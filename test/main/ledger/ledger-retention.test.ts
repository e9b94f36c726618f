/**
 * The ledger's retention policy (issue 8 §5): delivered records keep their metadata, their full
 * result only for a bounded count or age; past a bounded count they are forgotten. Nothing that
 * is not delivered is ever dropped. Time is the ledger's injected `now`, never the wall clock.
 */
import { describe, expect, it } from 'vitest';
import { DeliveryLedger, type JobEnding, type RetentionPolicy } from '../../../src/main/ledger/ledger.js';
import { parseConfig } from '../../../src/shared/config.js';
import { DEFAULTS } from '../../../src/shared/defaults.js';
import { configError } from '../../helpers/index.js';

const HOUR = 3_600_000;
const USAGE = { m: { promptTokens: 10, completionTokens: 5, totalTokens: 15, requests: 2 } };
const ending = (i: number): JobEnding => ({
  status: i % 2 ? 'failed' : 'ok',
  endedBy: 'completed',
  resultText: `the full answer of job ${i} `.repeat(50),
  usage: USAGE,
  iterations: 3,
  stopReason: 'final',
  ...(i % 2
    ? {
        error: {
          name: 'JobError',
          code: 'THREAD_LOST' as const,
          message: `thread died under job ${i}`,
          stack: 'Error: …\n    at somewhere',
          cause: { name: 'Error', code: 'INTERNAL' as const, message: 'inner' },
        },
      }
    : {}),
});

/** `n` jobs that ran and ended at times 1_000 + i; none delivered yet. */
function endedJobs(n: number, retention: Partial<RetentionPolicy>): { ledger: DeliveryLedger; ids: string[] } {
  const ledger = new DeliveryLedger(retention);
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const id = ledger.newId();
    ledger.add({ id, label: `job ${i}`, task: `task ${i}: ${'context '.repeat(100)}`, role: 'primary', wave: 1 }, 1_000 + i);
    ledger.markRunning(id, 1, 1_000 + i);
    ledger.markEnded(id, ending(i), 1_000 + i);
    ids.push(id);
  }
  return { ledger, ids };
}

describe('DeliveryLedger retention', () => {
  it('keeps the full result of the last keepResults deliveries; older ones keep their metadata and say the text was dropped', () => {
    const { ledger, ids } = endedJobs(5, { keepResults: 2, keepResultsMs: HOUR, keepRecords: 100 });
    // Delivered one per turn, oldest first.
    ids.forEach((id, turn) => expect(ledger.markDelivered(id, turn + 1, 10_000 + turn)?.resultText).toContain(`job ${turn}`));
    const records = ids.map((id) => ledger.get(id));
    expect(records.map((r) => r?.resultDropped ?? false)).toEqual([true, true, true, false, false]);
    expect(records.map((r) => r?.resultText === undefined)).toEqual([true, true, true, false, false]);
    const dropped = records[1];
    expect(dropped).toMatchObject({
      id: ids[1],
      label: 'job 1',
      status: 'failed',
      state: 'ended',
      queuedAt: 1_001,
      startedAt: 1_001,
      endedAt: 1_001,
      deliveredInTurn: 2,
      deliveredAt: 10_001,
      usage: USAGE,
      iterations: 3,
    });
    // The error keeps its code and message; its stack and cause chain go with the text.
    expect(dropped?.error).toEqual({ name: 'JobError', code: 'THREAD_LOST', message: 'thread died under job 1' });
    // The task keeps a head to recognise it by.
    expect(dropped?.task.startsWith('task 1: context')).toBe(true);
    expect(dropped?.task.length).toBeLessThanOrEqual(120);
    expect(ledger.stats()).toMatchObject({ records: 5, resultsKept: 2, resultsDropped: 3, forgotten: 0, undelivered: 0 });
  });

  it('drops a delivered result once it is keepResultsMs old, by the ledger clock', () => {
    const { ledger, ids } = endedJobs(2, { keepResults: 100, keepResultsMs: 1_000, keepRecords: 100 });
    ledger.drain(1, undefined, 50_000);
    // Any later operation applies the policy; one just before the bound keeps it.
    ledger.add({ id: 'probe-1', label: 'p', task: 't', role: 'user', wave: null }, 50_999);
    expect(ids.map((id) => ledger.get(id)?.resultDropped ?? false)).toEqual([false, false]);
    ledger.add({ id: 'probe-2', label: 'p', task: 't', role: 'user', wave: null }, 51_000);
    expect(ids.map((id) => ledger.get(id)?.resultDropped ?? false)).toEqual([true, true]);
  });

  it('never drops or forgets an undelivered result, however old and however tight the policy', () => {
    const { ledger, ids } = endedJobs(5, { keepResults: 0, keepResultsMs: 0, keepRecords: 0 });
    ledger.add({ id: 'late', label: 'late', task: 't', role: 'user', wave: null }, 1_000 * HOUR);
    for (const [i, id] of ids.entries()) {
      expect(ledger.get(id)?.resultText).toBe(ending(i).resultText);
      expect(ledger.get(id)?.resultDropped).toBeUndefined();
    }
    expect(ledger.undelivered().map((r) => r.id)).toEqual(ids);
    // Delivered, they leave the ledger at once (keepRecords 0), but what drain hands over is whole.
    const delivered = ledger.drain(1, undefined, 1_000 * HOUR);
    expect(delivered.map((r) => r.resultText)).toEqual(ids.map((_, i) => ending(i).resultText));
    expect(ids.map((id) => ledger.get(id))).toEqual(ids.map(() => undefined));
    expect(ledger.stats()).toMatchObject({ forgotten: 5, undelivered: 0 });
    // The queued job is not delivered, so it stays.
    expect(ledger.get('late')?.state).toBe('queued');
  });

  it('forgets the oldest delivered records past keepRecords, and only delivered ones', () => {
    const { ledger, ids } = endedJobs(6, { keepResults: 1, keepResultsMs: HOUR, keepRecords: 3 });
    const running = ledger.newId();
    ledger.add({ id: running, label: 'r', task: 't', role: 'primary', wave: 2 }, 2_000);
    ledger.markRunning(running, 1, 2_000);
    ledger.drain(1, (r) => r.id !== ids[5], 3_000); // five delivered, one left waiting
    expect(ids.map((id) => ledger.get(id) !== undefined)).toEqual([false, false, true, true, true, true]);
    expect(ledger.wasForgotten(ids[0] as string)).toBe(true);
    expect(ledger.wasForgotten(ids[2] as string)).toBe(false);
    expect(ledger.wasForgotten('bg-999')).toBe(false);
    // A forgotten member counts as ended for a wave check.
    expect(ledger.hasEnded(ids[0] as string)).toBe(true);
    expect(ledger.hasEnded(running)).toBe(false);
    expect(ledger.count('ended')).toBe(4);
    expect(ledger.count('running')).toBe(1);
    expect(ledger.get(ids[5] as string)?.resultText).toBe(ending(5).resultText);
    expect(ledger.snapshot().map((r) => r.id)).toEqual([ids[2], ids[3], ids[4], ids[5], running]);
  });

  it('past keepRecords a result delivered in part is kept until it is read to its end, then forgotten like the rest', () => {
    const { ledger, ids } = endedJobs(6, { keepResults: 2, keepResultsMs: HOUR, keepRecords: 2 });
    const [first = '', , , , fifth = '', sixth = ''] = ids;
    const size = ending(0).resultText.length;
    // Four delivered, the oldest in part (its tail unread): it stays, with the newest, past keepRecords.
    ledger.drain(1, (r) => r.id !== fifth && r.id !== sixth, 3_000, new Map([[first, [100, size] as [number, number]]]));
    expect(ids.slice(0, 4).map((id) => ledger.get(id) !== undefined)).toEqual([true, false, false, true]);
    expect(ledger.get(first)?.resultText).toBe(ending(0).resultText);
    // Read to its end, it is a delivered record like any other: two more deliveries push it out.
    ledger.markShown(first, 100, size, 4_000);
    ledger.markDelivered(fifth, 2, 5_000);
    expect(ledger.get(first)).toBeDefined();
    ledger.markDelivered(sixth, 2, 6_000);
    expect(ledger.get(first)).toBeUndefined();
    expect(ledger.snapshot().map((r) => r.id)).toEqual([fifth, sixth]);
  });

  it('markDelivered hands over one job once; drain never returns it again', () => {
    const { ledger, ids } = endedJobs(3, {});
    expect(ledger.markDelivered(ids[1] as string, 4)?.deliveredInTurn).toBe(4);
    expect(ledger.markDelivered(ids[1] as string, 5)).toBeUndefined();
    expect(ledger.drain(6).map((r) => r.id)).toEqual([ids[0], ids[2]]);
    expect(ledger.undeliveredCount).toBe(0);
  });

  it("snapshot() shares the ledger's frozen records instead of cloning them", () => {
    const { ledger, ids } = endedJobs(2_000, {});
    const first = ledger.snapshot();
    const second = ledger.snapshot();
    expect(first).not.toBe(second);
    ids.forEach((id, i) => {
      expect(first[i]).toBe(ledger.get(id));
      expect(second[i]).toBe(first[i]);
    });
    expect(Object.isFrozen(first[0])).toBe(true);
    expect(Object.isFrozen(first[0]?.usage.m)).toBe(true);
    // A transition replaces the record: old snapshots keep the old value.
    ledger.drain(1);
    expect(ledger.get(ids[0] as string)).not.toBe(first[0]);
    expect(first[0]?.deliveredInTurn).toBeUndefined();
  });

  it('takes its defaults from DEFAULTS and its policy from config.background.retention', () => {
    const config = parseConfig({ workspaceRoot: '/tmp' });
    expect(config.background.retention).toEqual(DEFAULTS.background.retention);
    expect(parseConfig({ workspaceRoot: '/tmp', background: { retention: { keepResults: 5 } } }).background.retention).toEqual({
      ...DEFAULTS.background.retention,
      keepResults: 5,
    });
    const error = configError(() => parseConfig({ workspaceRoot: '/tmp', background: { retention: { keepResults: 50, keepRecords: 10 } } }));
    expect(error.issues[0]).toMatchObject({ field: 'background.retention.keepRecords', received: '10' });
    expect(error.issues[0]?.expected).toContain('keepResults (50)');
    const negative = configError(() => parseConfig({ workspaceRoot: '/tmp', background: { retention: { keepResultsMs: -1 } } }));
    expect(negative.issues[0]?.field).toBe('background.retention.keepResultsMs');
  });
});
