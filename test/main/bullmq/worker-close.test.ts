/**
 * A worker that closes (SIGTERM: a rolling restart) in the moment between taking a job and
 * starting its run — while it asks Redis whether the job was cancelled — hands the job back, as
 * it does a running one; the job runs on the next worker and ends ok. Found by the full-size
 * campaign (`npm run campaign`, worker-sigterm): such jobs ended `failed JOB_CANCELLED`, never
 * having run. The worker runs in this process so the test can close it inside that window.
 */
import { describe, expect, it } from 'vitest';
import { ForkpoolWorker } from '../../../src/main/bullmq/worker.js';
import { Deliveries } from '../../../src/main/delivery/deliveries.js';
import {
  bullManager,
  ended,
  makeConfig,
  makeWorkspace,
  RESEARCH_TASK,
  runsOf,
  skipWithoutRedis,
  startSim,
  testRedis,
  useCleanup,
} from '../../helpers/index.js';

const cleanup = useCleanup();

describe.skipIf(skipWithoutRedis())('a worker closing as it takes a job', { timeout: 60_000 }, () => {
  it('hands the job back instead of ending it cancelled: the next worker runs it, ok, once', async () => {
    const { url, queue } = await testRedis(cleanup);
    const sim = await startSim(cleanup, { latencyMs: 20 });
    const workspace = await makeWorkspace(cleanup);
    const workerConfig = makeConfig(sim, workspace);
    const newWorker = (name: string) => {
      const worker = new ForkpoolWorker({ redisUrl: url, queue, concurrency: 1, heapMb: 256, config: workerConfig, name });
      cleanup.add(() => worker.close());
      return worker;
    };
    const first = newWorker('closing');
    await first.start();
    const manager = await bullManager(
      makeConfig(sim, workspace, { maxConcurrent: 4 }, { executor: 'bullmq', redisUrl: url, bullmq: { queue, pollMs: 500 } }),
      cleanup,
    );

    const { id } = manager.spawn({ task: `${RESEARCH_TASK} (worker-close)`, label: 'taken as the worker closes' });
    // `running` counts the job from the moment the worker lists it, before its look-ups in Redis
    // return: checked once per turn of the event loop, the close lands between the two.
    let closing: Promise<void> | undefined;
    await new Promise<void>((resolve) => {
      const check = () => {
        if (first.running > 0) {
          closing = first.close();
          return resolve();
        }
        setImmediate(check);
      };
      check();
    });
    await closing;
    const second = newWorker('next');
    await second.start();

    const record = await ended(manager, id);
    expect(record.status, JSON.stringify(record.error)).toBe('ok');
    expect(runsOf(sim, '(worker-close)')).toBe(1);
    expect(new Deliveries(manager).drain(1).map((r) => r.id)).toEqual([id]);
  });
});
