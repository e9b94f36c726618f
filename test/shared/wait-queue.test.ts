/**
 * The FIFO the thread's queues share (model connections, search slots, jobs waiting to start):
 * order kept, cancelled waiters skipped where they stand, and the served prefix dropped without
 * losing or reordering anyone past the compaction point (1,024).
 */
import { describe, expect, it } from 'vitest';
import { WaitQueue } from '../../src/shared/wait-queue.js';

describe('WaitQueue', () => {
  it('serves in order, skips the cancelled, and keeps order across its compactions', () => {
    const queue = new WaitQueue<{ id: number; cancelled: boolean }>();
    const waiters = Array.from({ length: 5_000 }, (_, id) => ({ id, cancelled: false }));
    for (const waiter of waiters) queue.push(waiter);
    // Every third one cancelled where it stands.
    for (const waiter of waiters) if (waiter.id % 3 === 0) waiter.cancelled = true;
    expect(queue.waiting).toBe(5_000 - Math.ceil(5_000 / 3));
    const served: number[] = [];
    // Served in turns, with new waiters joining meanwhile: the compaction runs between them.
    for (let round = 0; round < 2_000; round++) served.push(queue.next()?.id ?? -1);
    for (let id = 5_000; id < 5_010; id++) queue.push({ id, cancelled: false });
    for (let next = queue.next(); next; next = queue.next()) served.push(next.id);
    const expected = [...waiters.filter((w) => !w.cancelled).map((w) => w.id), ...Array.from({ length: 10 }, (_, i) => 5_000 + i)];
    expect(served).toEqual(expected);
    expect(queue.isEmpty).toBe(true);
    expect(queue.next()).toBeUndefined();
  });
});
