/**
 * The quiet-job poll adds a job Redis lost again, but never one whose run is being stopped: a
 * close's cancel script takes waiting jobs out of Redis, and the poll may see one missing before
 * the script's reply settles its run. Re-added, it waited in Redis for a worker to run it for
 * nothing (1,000 left after closing 100,000). Real redis-server; the runs are stand-ins.
 */
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { QuietPoll } from '../../../src/main/bullmq/quiet-poll.js';
import type { RemoteRun } from '../../../src/main/bullmq/remote-run.js';
import { skipWithoutRedis, startRedis, useCleanup, waitFor } from '../../helpers/index.js';

const cleanup = useCleanup();

function quietRun(bullId: string, stopAsked: boolean): RemoteRun {
  return { bullId, added: true, isSettled: false, stopAsked, lastNews: 0 } as unknown as RemoteRun;
}

describe.skipIf(skipWithoutRedis())('bullmq: the quiet-job poll', () => {
  it('adds again a job Redis lost, but not one whose run a cancel is taking out', async () => {
    const redis = await startRedis(cleanup);
    const client = new Redis(redis.url);
    const queue = new Queue('fp-poll', { connection: new Redis(redis.url, { maxRetriesPerRequest: null }) });
    cleanup.add(() => Promise.allSettled([queue.close(), client.quit()]));
    const lost: string[] = [];
    const runs = [quietRun('ns.bg-1.1', false), quietRun('ns.bg-2.1', true)];
    const poll = new QuietPoll({
      redis: client,
      queue,
      pollMs: 1,
      runs: () => runs,
      completed: () => Promise.resolve(),
      failed: () => Promise.resolve(),
      lost: (run) => {
        lost.push(run.bullId);
        return Promise.resolve();
      },
      logger: {
        warn: () => undefined,
        debug: () => undefined,
      } as never,
    });
    // Neither job is in Redis: both "missing".
    poll.tick();
    await waitFor(() => lost.length > 0 || undefined, 'the poll to act');
    // Both were looked up in one script call and decided in the same turn as its reply.
    expect(runs.every((run) => run.lastNews > 0)).toBe(true);
    expect(lost).toEqual(['ns.bg-1.1']);
  });
});
