/**
 * Issue 23: a thread's model requests share a bounded set of connections
 * (`modelConnectionsPerThread`), however many jobs it holds, and waiting for one never times a
 * call out. The real pool, real workers and the loopback sim, which counts its open sockets.
 * Invariants only (bounds, counts), never wall-clock windows.
 */
import { describe, expect, it } from 'vitest';
import { ConnectionSlots } from '../../../src/shared/connection-slots.js';
import { callModel } from '../../../src/shared/model-call.js';
import { AbortError } from '../../../src/shared/errors.js';
import { useCleanup, RESEARCH_TASK, makeConfig, makeManager, makeWorkspace, startSim, startTestSim } from '../../helpers/index.js';
import type { JobRecord } from '../../../src/main/ledger/ledger.js';

const cleanups = useCleanup();

describe('ConnectionSlots', () => {
  it('never hands out more than its limit, serves waiters in order, and skips one that aborted', async () => {
    const slots = new ConnectionSlots(2);
    const a = await slots.acquire(new AbortController().signal);
    const b = await slots.acquire(new AbortController().signal);
    const order: string[] = [];
    const gone = new AbortController();
    const c = slots.acquire(new AbortController().signal).then((release) => (order.push('c'), release));
    const d = slots.acquire(gone.signal).then(
      () => order.push('d'),
      (error: unknown) => order.push(error instanceof AbortError ? 'd aborted' : 'd failed'),
    );
    const e = slots.acquire(new AbortController().signal).then((release) => (order.push('e'), release));
    expect(slots.waiting).toBe(3);
    gone.abort(new Error('gone'));
    await d;
    a();
    a(); // a second call gives nothing back twice
    const releaseC = await c;
    expect(slots.inUse).toBe(2);
    b();
    const releaseE = await e;
    expect(order).toEqual(['d aborted', 'c', 'e']);
    releaseC();
    releaseE();
    // A slot given back with nobody waiting is freed in the next macrotask (see ConnectionSlots).
    await new Promise((resolve) => setImmediate(resolve));
    expect(slots.inUse).toBe(0);
    expect(slots.peak).toBe(2);
  });
});

describe('a thread’s connections to the model endpoint', () => {
  it('a wait for a connection does not count toward requestTimeoutMs', async () => {
    // Each request takes 200 ms and one connection serves them in turn: the tenth waits 1.8 s or
    // more, past its 1.5 s timeout (a margin a loaded machine needs: one request alone stays far
    // under it). With no retries, a timer started at the wait fails the last ones.
    const { sim, client, config } = await startTestSim(cleanups, { latencyMs: 200 }, { requestTimeoutMs: 1_500, maxRetries: 0, stream: false });
    const slots = new ConnectionSlots(1);
    const signal = new AbortController().signal;
    const calls = Array.from({ length: 10 }, () =>
      callModel({ client, config, params: { messages: [{ role: 'user', content: 'hello' }] }, signal, connections: slots }),
    );
    const settled = await Promise.allSettled(calls);
    expect(settled.map((s) => s.status)).toEqual(Array.from({ length: 10 }, () => 'fulfilled'));
    expect(slots.peak).toBe(1);
    expect(sim.peakConnections).toBe(1);
  }, 20_000);

  it('500 jobs in flight on one shared thread use at most modelConnectionsPerThread sockets, and all end ok', async () => {
    // 50 ms a request: with no bound, most of the jobs' requests would be open at once.
    const sim = await startSim(cleanups, { latencyMs: 50, recordBodies: false });
    const workspace = await makeWorkspace(cleanups);
    const jobs = 500;
    const bound = 32;
    const config = makeConfig(
      sim,
      workspace,
      { isolation: 'shared', threads: 1, tasksPerThread: jobs, maxConcurrent: jobs, queueLimit: jobs },
      { modelConnectionsPerThread: bound, maxRetries: 0, stream: false },
    );
    const manager = makeManager(config, cleanups);
    const ends: JobRecord[] = [];
    const allEnded = new Promise<void>((resolve) =>
      manager.on('done', (record) => {
        ends.push(record);
        if (ends.length === jobs) resolve();
      }),
    );
    for (let i = 0; i < jobs; i++) manager.spawn({ task: RESEARCH_TASK, label: `job ${i}` });
    await allEnded;
    const states = new Map<string, number>();
    for (const record of ends) states.set(record.stopReason ?? 'none', (states.get(record.stopReason ?? 'none') ?? 0) + 1);
    expect(Object.fromEntries(states)).toEqual({ final: jobs });
    expect(new Set(ends.map((r) => r.id)).size).toBe(jobs);
    expect(sim.peakConnections).toBeGreaterThan(0);
    expect(sim.peakConnections).toBeLessThanOrEqual(bound);
  }, 60_000);
});
