/**
 * A remote job's processes run on its worker's machine: stopping or losing it on the main side
 * must not sweep this machine's /proc for its process tag (each sweep reads every process's
 * environment; a producer closing with thousands of jobs out ran out of file descriptors).
 * Real Redis, the real manager; the sweep itself is counted, not run.
 */
import { Redis } from 'ioredis';
import { describe, expect, it, vi } from 'vitest';
import { bullManager, skipWithoutRedis, RESEARCH_TASK, makeConfig, tempWorkspace, testRedis, useCleanup } from '../../helpers/index.js';

const sweeps = vi.hoisted(() => ({ count: 0 }));
vi.mock('../../../src/shared/tools/process-tag.js', async (original) => ({
  ...(await original<typeof import('../../../src/shared/tools/process-tag.js')>()),
  killTagged: () => {
    sweeps.count += 1;
    return Promise.resolve(0);
  },
}));

const cleanup = useCleanup();
const JOBS = 20;

describe.skipIf(skipWithoutRedis())('bullmq: no process sweep on the main side for remote jobs', () => {
  it('destroy() with 20 jobs waiting in Redis hard-stops them all without sweeping /proc once', async () => {
    const redis = await testRedis(cleanup);
    const probe = new Redis(redis.url);
    cleanup.add(() => probe.disconnect());
    const workspace = tempWorkspace(undefined, cleanup);
    const config = makeConfig(undefined, workspace, { maxConcurrent: JOBS }, { executor: 'bullmq', redisUrl: redis.url, bullmq: { queue: redis.queue } });
    const manager = await bullManager(config, cleanup);
    const ids = Array.from({ length: JOBS }, (_, i) => manager.spawn({ task: `${RESEARCH_TASK} (${i})`, label: `fan ${i}` }).id);
    for (const deadline = Date.now() + 15_000; (await probe.llen(`bull:${redis.queue}:wait`)) < JOBS;) {
      if (Date.now() > deadline) throw new Error('the jobs did not all reach Redis');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const report = await manager.destroy();
    expect(report.cancelled).toHaveLength(JOBS);
    expect(ids.map((id) => manager.get(id)?.state)).toEqual(ids.map(() => 'ended'));
    expect(sweeps.count).toBe(0);
  }, 20_000);
});
