/**
 * Nesting through the main thread, in the real pool: a job's spawn travels over its port, the
 * one manager enforces depth, cap and queue, a child's result goes to the job that spawned
 * it, cancel cascades, and a parent waiting for children gives its slot back (no deadlock at
 * cap 2, depth 3).
 */
import { describe, expect, it } from 'vitest';
import type { JobRecord } from '../../../src/main/ledger/ledger.js';
import { totalUsage } from '../../../src/shared/usage.js';
import { messagesOf, toolNames, useCleanup, ended, makeConfig, makeManager, makeWorkspace, startSim, nextEvent } from '../../helpers/index.js';
import type { ManagerEvents } from '../../../src/main/jobs/manager.js';
import { Deliveries } from '../../../src/main/delivery/deliveries.js';

const cleanups = useCleanup();

const LEAF = 'Where is the retry backoff implemented? Answer from the files in the workspace.';
const TWO_LEVELS = `Delegate: Delegate: ${LEAF}`;

function byDepth(jobs: readonly Readonly<JobRecord>[], depth: number): Readonly<JobRecord>[] {
  return jobs.filter((j) => (j.depth ?? 1) === depth);
}

describe('depth above 1', () => {
  it("a grandchild's result reaches its parent job, not the top; usage rolls up the tree; the deepest job has no spawn tool", async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups);
    const manager = makeManager(makeConfig(sim, root, { maxDepth: 3 }), cleanups);
    const top = manager.spawn({ task: TWO_LEVELS, label: 'top', wave: 1 });
    new Deliveries(manager).sealWave(1);
    const a = await ended(manager, top.id);
    const jobs = manager.jobs();
    expect(jobs).toHaveLength(3);
    const [b] = byDepth(jobs, 2);
    const [c] = byDepth(jobs, 3);
    expect(b?.parentJobId).toBe(a.id);
    expect(c?.parentJobId).toBe(b?.id);
    expect(jobs.every((j) => j.status === 'ok')).toBe(true);
    expect(a).toMatchObject({ children: [b?.id], childrenOnEnd: 'waited' });

    // C's result went into B's conversation (its resume), B's into A's; never C's into A's.
    const headerOf = (id: string | undefined) => `job ${id}, status ok`;
    const inputsWith = (id: string | undefined) =>
      sim.requests.filter((r) => messagesOf(r).some((m) => m.role === 'user' && String(m.content).includes(headerOf(id))));
    const cInto = inputsWith(c?.id);
    expect(cInto.length).toBeGreaterThan(0);
    for (const r of cInto) expect(String(messagesOf(r).find((m) => m.role === 'user')?.content)).toBe(`Delegate: ${LEAF}`);
    const bInto = inputsWith(b?.id);
    expect(bInto.length).toBeGreaterThan(0);
    for (const r of bInto) expect(String(messagesOf(r).find((m) => m.role === 'user')?.content)).toBe(TWO_LEVELS);
    // The top (the session) gets A only, once.
    expect(new Deliveries(manager).drain(2).map((j) => j.id)).toEqual([a.id]);
    expect(new Deliveries(manager).drain(3)).toEqual([]);
    // Depth 3 is the limit: C was offered no spawn tool; A and B were.
    const cRequests = sim.requests.filter((r) => messagesOf(r).find((m) => m.role === 'user')?.content === LEAF);
    expect(cRequests.length).toBeGreaterThan(0);
    for (const r of cRequests) expect(toolNames(r)).not.toContain('spawn_background_agent');
    const sum = [a, b, c].reduce((s, j) => s + totalUsage(j?.usage ?? {}).totalTokens, 0);
    expect(totalUsage(a.treeUsage ?? {}).totalTokens).toBe(sum);
  });

  it('no deadlock at cap 2 and depth 3: two delegating tops fill both slots, wait with their slots given back, and all six jobs end ok', async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups);
    const manager = makeManager(makeConfig(sim, root, { maxDepth: 3, maxConcurrent: 2 }), cleanups);
    let mostRunning = 0;
    manager.on('started', () => (mostRunning = Math.max(mostRunning, manager.count('running'))));
    const tops = [manager.spawn({ task: TWO_LEVELS, label: 'top 1' }), manager.spawn({ task: TWO_LEVELS, label: 'top 2' })];
    await Promise.all(tops.map((t) => ended(manager, t.id)));
    await manager.onIdle();
    const jobs = manager.jobs();
    expect(jobs).toHaveLength(6);
    expect(jobs.map((j) => j.status)).toEqual(Array(6).fill('ok'));
    expect(byDepth(jobs, 3)).toHaveLength(2);
    expect(mostRunning).toBeLessThanOrEqual(2);
    // The tops were resumed after waiting: more than one start each.
    for (const t of tops) expect(manager.get(t.id)?.attempts).toBeGreaterThanOrEqual(2);
  });

  it('cancelling a parent cancels its whole tree', async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups);
    const manager = makeManager(makeConfig(sim, root, { maxDepth: 3, cancelGraceMs: 200 }), cleanups);
    // Once the grandchild exists, every model call hangs: the tree is stuck mid-flight.
    manager.on('spawned', (job) => {
      if (job.depth === 3) sim.setOptions({ latencyMs: 60_000 });
    });
    const top = manager.spawn({ task: TWO_LEVELS, label: 'top' });
    await nextEvent<ManagerEvents, 'started'>(manager, 'started', (job) => job.depth === 3);
    manager.cancel(top.id);
    await manager.onIdle();
    const jobs = manager.jobs();
    expect(jobs).toHaveLength(3);
    expect(jobs.map((j) => [j.depth ?? 1, j.status])).toEqual([
      [1, 'cancelled'],
      [2, 'cancelled'],
      [3, 'cancelled'],
    ]);
    expect(manager.get(top.id)?.childrenOnEnd).toBe('cancelled');
  });

  it('at the default depth 1 a job has no spawn tool; at depth 2 its child has none', async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups);
    const manager = makeManager(makeConfig(sim, root, { maxDepth: 2 }), cleanups);
    const top = manager.spawn({ task: TWO_LEVELS, label: 'top' });
    await ended(manager, top.id);
    await manager.onIdle();
    const jobs = manager.jobs();
    expect(jobs).toHaveLength(2);
    const child = byDepth(jobs, 2)[0];
    const childRequests = sim.requests.filter((r) => messagesOf(r).find((m) => m.role === 'user')?.content === `Delegate: ${LEAF}`);
    expect(childRequests.length).toBeGreaterThan(0);
    for (const r of childRequests) expect(toolNames(r)).not.toContain('spawn_background_agent');
    expect(child?.status).toBe('ok');
  });
});
