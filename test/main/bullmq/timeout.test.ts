/**
 * A BullMQ job's timeout fired on its worker (which enforces the job's wall clock itself) ends the
 * job `timed_out`, as a local one, never `failed … ABORTED`: the worker's timer fires first when it
 * started the job before the main process heard of it, or when its own timeout is the tighter.
 */
import { describe, expect, it } from 'vitest';
import {
  bullManager,
  skipWithoutRedis,
  RESEARCH_TASK,
  ended,
  makeConfig,
  makeWorkspace,
  testRedis,
  startSim,
  startWorker,
  useCleanup,
} from '../../helpers/index.js';

const cleanup = useCleanup();

describe.skipIf(skipWithoutRedis())('bullmq job timeouts', { timeout: 180_000 }, () => {
  it("three jobs on a 2-slot worker whose own timeout fires first all end timed_out, with the timeout's error", async () => {
    const redis = await testRedis(cleanup);
    // Every model call takes longer than the worker's timeout: only the timeout ends a job.
    const sim = await startSim(cleanup, { latencyMs: 5_000 });
    const workspace = await makeWorkspace(cleanup);
    // The worker takes the tighter of the job's timeout and its own: 0.6 s here, 20 minutes on
    // the main side, so the worker's timer is always the one that fires.
    await startWorker(cleanup, redis.url, {
      queue: redis.queue,
      concurrency: 2,
      config: { baseUrl: sim.url, workspaceRoot: workspace, background: { timeoutMinutes: 0.01 } },
    });
    const config = makeConfig(
      sim,
      workspace,
      { maxConcurrent: 8, cancelGraceMs: 5_000 },
      { executor: 'bullmq', redisUrl: redis.url, bullmq: { queue: redis.queue, lockMs: 4_000, pollMs: 500 } },
    );
    const manager = await bullManager(config, cleanup);
    const ids = [1, 2, 3].map((i) => manager.spawn({ task: RESEARCH_TASK, label: `slow ${i}` }).id);
    const records = await Promise.all(ids.map((id) => ended(manager, id)));
    for (const record of records) {
      expect(record, `job ${record.id}: ${record.status} ${record.error?.code} ${record.error?.message}`).toMatchObject({
        status: 'timed_out',
        endedBy: 'cooperative',
        attempts: 1,
      });
      expect(record.error?.code).toBe('JOB_TIMEOUT');
    }
  });
});
