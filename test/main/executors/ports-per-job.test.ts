/**
 * Open MessagePorts on the main thread per job in flight (issue 23). Each is a libuv async handle,
 * and libuv checks every one each time any message arrives: at 10,000 jobs, two ports a job made
 * each worker message O(jobs), 89% of the main thread's CPU. A job that can never call the
 * permission service (no gated tool, fixed concurrency) now holds one; a job with a gated tool
 * still holds two, and is still answered. Counted with process.getActiveResourcesInfo(), through
 * the real pool: never a time.
 */
import { describe, expect, it } from 'vitest';
import { makeConfig, makeManager, makeWorkspace, startSim, startedJob, useCleanup } from '../../helpers/index.js';

const cleanups = useCleanup();
const openPorts = () => process.getActiveResourcesInfo().filter((what) => what === 'MessagePort').length;

describe('MessagePorts per job on the main thread', { timeout: 60_000 }, () => {
  it('one per job without a gated tool, two per job with one', async () => {
    const root = await makeWorkspace(cleanups);
    // Every answer is another tool call: the jobs stay in flight until they are cancelled.
    const sim = await startSim(cleanups, { endlessToolCalls: true, latencyMs: 1_000 });
    const manager = makeManager(makeConfig(sim, root, { isolation: 'shared', tasksPerThread: 100, maxConcurrent: 100 }), cleanups);
    // Warm: the pool's threads and their own ports exist before counting.
    const warm = manager.spawn({ task: 'warm up', label: 'warm', tools: ['read_file'] });
    await startedJob(manager, warm.id);
    manager.cancel(warm.id);
    await manager.onIdle();
    const before = openPorts();

    const plain = Array.from({ length: 20 }, (_, i) => manager.spawn({ task: `look ${i}`, label: `look-${i}`, tools: ['read_file', 'grep'] }).id);
    for (const id of plain) await startedJob(manager, id);
    const withPlain = openPorts();
    expect(withPlain - before).toBeLessThanOrEqual(20 + 2);
    expect(withPlain - before).toBeGreaterThanOrEqual(20 - 2);

    const gated = Array.from({ length: 5 }, (_, i) => manager.spawn({ task: `run ${i}`, label: `run-${i}`, tools: ['read_file', 'bash'] }).id);
    for (const id of gated) await startedJob(manager, id);
    expect(openPorts() - withPlain).toBeGreaterThanOrEqual(2 * 5);

    for (const id of [...plain, ...gated]) manager.cancel(id);
    await manager.onIdle();
    for (const id of [...plain, ...gated]) expect(manager.get(id)?.status).toBe('cancelled');
  });
});
