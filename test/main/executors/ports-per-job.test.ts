/**
 * Open MessagePorts on the main thread per job in flight (issue 23). Each is a libuv async handle,
 * and libuv checks every one each time any message arrives: at 10,000 jobs, two ports a job made
 * each worker message O(jobs), 89% of the main thread's CPU. A Piscina job now holds none: the
 * jobs of a thread share its link (thread-links.ts), and their permission questions go over it
 * with or without a gated tool, and their adaptive rate gate too (`gate-admit` messages), with
 * or without `concurrency: "adaptive"`. Counted with process.getActiveResourcesInfo(), through the real pool: never a time.
 * (That a gated tool is still answered: job-runtime.test.ts.)
 */
import { describe, expect, it } from 'vitest';
import type { BackgroundManager } from '../../../src/main/jobs/manager.js';
import { makeConfig, makeManager, makeWorkspace, startSim, useCleanup } from '../../helpers/index.js';

const cleanups = useCleanup();
/** Until every job runs (its worker said `started`); a job that ended instead fails the test at once. */
async function allRunning(manager: BackgroundManager, ids: readonly string[]): Promise<void> {
  for (;;) {
    const records = ids.map((id) => manager.get(id));
    const over = records.find((record) => record?.state === 'ended');
    if (over) throw new Error(`job ${over.id} ended before the count: ${over.status} ${over.error?.message ?? ''}`);
    if (records.every((record) => record?.state === 'running')) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const openPorts = () => process.getActiveResourcesInfo().filter((what) => what === 'MessagePort').length;

describe('MessagePorts per job on the main thread', { timeout: 60_000 }, () => {
  it('none per job in flight, with or without a gated tool: one per thread', async () => {
    const root = await makeWorkspace(cleanups);
    // Every answer is another tool call: the jobs stay in flight until they are cancelled.
    const sim = await startSim(cleanups, { endlessToolCalls: true, latencyMs: 1_000 });
    // One thread: every job shares its link.
    const manager = makeManager(makeConfig(sim, root, { isolation: 'shared', tasksPerThread: 100, maxConcurrent: 100, threads: 1 }), cleanups);
    // Warm: the pool's threads and their own ports exist before counting.
    const warm = manager.spawn({ task: 'warm up', label: 'warm', tools: ['read_file'] });
    await allRunning(manager, [warm.id]);
    manager.cancel(warm.id);
    await manager.onIdle();
    const before = openPorts();

    const plain = Array.from({ length: 20 }, (_, i) => manager.spawn({ task: `look ${i}`, label: `look-${i}`, tools: ['read_file', 'grep'] }).id);
    await allRunning(manager, plain);
    const withPlain = openPorts();
    expect(withPlain - before).toBeLessThanOrEqual(1);

    const gated = Array.from({ length: 5 }, (_, i) => manager.spawn({ task: `run ${i}`, label: `run-${i}`, tools: ['read_file', 'bash'] }).id);
    await allRunning(manager, gated);
    expect(openPorts() - withPlain).toBeLessThanOrEqual(1);

    for (const id of [...plain, ...gated]) manager.cancel(id);
    await manager.onIdle();
    for (const id of [...plain, ...gated]) expect(manager.get(id)?.status).toBe('cancelled');
  });

  it('none per job under adaptive concurrency either: the gate asks over the link', async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups, { endlessToolCalls: true, latencyMs: 1_000 });
    const config = makeConfig(sim, root, {
      isolation: 'shared',
      tasksPerThread: 100,
      maxConcurrent: 100,
      threads: 1,
      concurrency: 'adaptive',
      adaptive: { floor: 50, ceiling: 100 },
    });
    const manager = makeManager(config, cleanups);
    const gates = manager.requestGates;
    if (!gates) throw new Error('adaptive mode has gates');
    const warm = manager.spawn({ task: 'warm up', label: 'warm', tools: ['read_file'] });
    await allRunning(manager, [warm.id]);
    manager.cancel(warm.id);
    await manager.onIdle();
    const before = openPorts();
    let admitted = 0;
    gates.on('admitted', (e) => void (e.origin.kind === 'job' && admitted++));

    const ids = Array.from({ length: 20 }, (_, i) => manager.spawn({ task: `look ${i}`, label: `look-${i}`, tools: ['read_file'] }).id);
    await allRunning(manager, ids);
    expect(openPorts() - before).toBeLessThanOrEqual(1);
    for (const id of ids) manager.cancel(id);
    await manager.onIdle();
    // Their requests did go through the gate.
    expect(admitted).toBeGreaterThan(0);
    for (const id of ids) expect(manager.get(id)?.status).toBe('cancelled');
  });
});
