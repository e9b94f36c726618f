/**
 * What a BullMQ fan-out leaves in Redis: once its jobs have ended, whatever the ending, and its
 * producer has closed, no job of it (no hash, no entry in BullMQ's sets, no cancel key); the
 * forkpool keys left all expire. And a launch id used again (a restart) starts clean. Real redis-server (private: every key counted is this test's),
 * real `forkpool worker` processes, the real manager.
 */
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { engineOf, type BackgroundManager } from '../../../src/main/jobs/manager.js';
import {
  bullManager,
  bullmqOf,
  skipWithoutRedis,
  RESEARCH_TASK,
  ended,
  makeConfig,
  makeWorkspace,
  startRedis,
  startSim,
  startWorker,
  startedJob,
  cleanupOf,
  waitFor,
  type TestWorker,
} from '../../helpers/index.js';

const QUEUE = 'fp-keys';

/** Every key of the Redis matching `pattern`, by SCAN (as an operator would look). */
async function scanKeys(client: Redis, pattern: string): Promise<string[]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await client.scan(cursor, 'MATCH', pattern, 'COUNT', 1_000);
    cursor = next;
    keys.push(...batch);
  } while (cursor !== '0');
  return keys.sort();
}

/** Polls an asynchronous check until it gives a value (waitFor's checks are synchronous). */
async function until<T>(check: () => Promise<T | undefined | false>, what: string): Promise<T> {
  for (let tries = 0; tries < 400; tries++) {
    const value = await check();
    if (value) return value;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

async function holderOf(manager: BackgroundManager, workers: TestWorker[], id: string): Promise<TestWorker> {
  const bullId = bullmqOf(manager).bullId(id, 1, engineOf(manager).owner);
  return until(async () => {
    const job = await bullmqOf(manager).queue.getJob(bullId);
    return workers.find((w) => w.name === job?.processedBy);
  }, `the worker holding ${id}`);
}

// Side by side (each its own Redis, sim, workers and cleanupOf list): mostly waiting on them.
describe.skipIf(skipWithoutRedis())("bullmq: a launch's keys in Redis", { timeout: 180_000, concurrent: true }, () => {
  it('after ok, refused, failed (its worker killed), cancelled-while-waiting and cancelled-while-running jobs and close(), Redis holds no job of it', async (context) => {
    const cleanup = cleanupOf(context);
    const redis = await startRedis(cleanup);
    const client = new Redis(redis.url, { maxRetriesPerRequest: null });
    cleanup.add(() => client.disconnect());
    // The first two model requests never answer: two jobs stay running until stopped.
    const sim = await startSim(cleanup, { faults: { 1: { kind: 'hang_before_headers' }, 2: { kind: 'hang_before_headers' } } });
    const workspace = await makeWorkspace(cleanup);
    // One slot each; a stalled job fails at once (maxStalls 0) rather than running again.
    const workerOptions = { queue: QUEUE, concurrency: 1, maxStalls: 0, lockMs: 2_000, config: { baseUrl: sim.url, workspaceRoot: workspace } };
    const workers = await Promise.all([startWorker(cleanup, redis.url, workerOptions), startWorker(cleanup, redis.url, workerOptions)]);
    const config = makeConfig(
      sim,
      workspace,
      { maxConcurrent: 8, cancelGraceMs: 5_000 },
      {
        executor: 'bullmq',
        redisUrl: redis.url,
        bullmq: { queue: QUEUE, lockMs: 2_000, pollMs: 500 },
        // An endpoint no worker allows: its job is refused unrun (ENDPOINT_NOT_ALLOWED).
        agents: { stranger: { description: 'elsewhere', baseUrl: 'http://127.0.0.1:9/v1' } },
      },
    );
    const manager = await bullManager(config, cleanup);
    const executor = bullmqOf(manager);

    const toCancel = manager.spawn({ task: `${RESEARCH_TASK} (cancelled while running)`, label: 'cancel running' }).id;
    const toKill = manager.spawn({ task: `${RESEARCH_TASK} (its worker dies)`, label: 'worker killed' }).id;
    await Promise.all([startedJob(manager, toCancel), startedJob(manager, toKill)]);
    await waitFor(() => sim.requests.length >= 2, 'both hanging model calls');
    // Both slots are taken: this one waits in Redis.
    const waiting = manager.spawn({ task: `${RESEARCH_TASK} (cancelled while waiting)`, label: 'cancel waiting' }).id;
    const waitingBull = executor.bullId(waiting, 1, engineOf(manager).owner);
    await until(async () => (await executor.queue.getJobState(waitingBull)) === 'waiting', 'the job waiting in Redis');
    manager.cancel(waiting);
    expect(await ended(manager, waiting)).toMatchObject({ status: 'cancelled', attempts: 0 });
    manager.cancel(toCancel);
    expect(await ended(manager, toCancel)).toMatchObject({ status: 'cancelled', endedBy: 'cooperative' });
    const victim = await holderOf(manager, workers, toKill);
    process.kill(victim.pid, 'SIGKILL');
    // The survivor's stall check fails the dead worker's job in BullMQ: it ends THREAD_LOST.
    expect(await ended(manager, toKill)).toMatchObject({ status: 'failed', error: { code: 'THREAD_LOST' } });

    const ok = [1, 2, 3].map((i) => manager.spawn({ task: `${RESEARCH_TASK} (ok ${i})`, label: `ok ${i}` }).id);
    const refused = manager.spawn({ task: `${RESEARCH_TASK} (refused)`, label: 'refused', agent: 'stranger' }).id;
    for (const id of ok) expect(await ended(manager, id)).toMatchObject({ status: 'ok' });
    expect(await ended(manager, refused)).toMatchObject({ status: 'failed', error: { code: 'ENDPOINT_NOT_ALLOWED' } });

    const namespace = executor.namespace;
    const jobKeysBefore = await scanKeys(client, `bull:${QUEUE}:${namespace}.*`);
    // Before close the taken results are still kept (for a restart on the same ledger to find).
    expect(jobKeysBefore.length).toBeGreaterThan(0);
    await manager.close();

    expect(await scanKeys(client, `bull:${QUEUE}:${namespace}.*`)).toEqual([]);
    for (const set of ['wait', 'active', 'completed', 'failed', 'delayed', 'prioritized', 'paused'])
      expect(await client.exists(`bull:${QUEUE}:${set}`), `bull:${QUEUE}:${set} still holds jobs`).toBe(0);
    expect(await scanKeys(client, `forkpool:${QUEUE}:cancelled:*`)).toEqual([]);
    // What forkpool keeps of its own (the 429 gate) expires.
    for (const key of await scanKeys(client, 'forkpool:*')) expect(await client.pttl(key), key).toBeGreaterThan(0);
  });

  it('a job hard-stopped on its worker (no grace) is removed once the worker ends it, even when close() comes at once', async (context) => {
    const cleanup = cleanupOf(context);
    const redis = await startRedis(cleanup);
    const client = new Redis(redis.url, { maxRetriesPerRequest: null });
    cleanup.add(() => client.disconnect());
    const sim = await startSim(cleanup, { faults: { 1: { kind: 'hang_before_headers' } } });
    const workspace = await makeWorkspace(cleanup);
    await startWorker(cleanup, redis.url, { queue: QUEUE, concurrency: 1, config: { baseUrl: sim.url, workspaceRoot: workspace } });
    // No grace: the cancel is a hard stop at once, so the launch ends here before its worker finishes the job.
    const config = makeConfig(sim, workspace, { cancelGraceMs: 0 }, { executor: 'bullmq', redisUrl: redis.url, bullmq: { queue: QUEUE, pollMs: 500 } });
    const manager = await bullManager(config, cleanup);
    const { id } = manager.spawn({ task: RESEARCH_TASK, label: 'hard-stopped' });
    await startedJob(manager, id);
    await waitFor(() => sim.requests.length >= 1, 'the hanging model call');
    manager.cancel(id);
    expect(await ended(manager, id)).toMatchObject({ status: 'cancelled', endedBy: 'hard' });
    await manager.close();
    expect(await scanKeys(client, `bull:${QUEUE}:${bullmqOf(manager).namespace}.*`)).toEqual([]);
    expect(await scanKeys(client, `forkpool:${QUEUE}:cancelled:*`)).toEqual([]);
  });

  it('a job cancelled on its worker and restarted (the same launch id) runs: its old cancel key does not end the new launch', async (context) => {
    const cleanup = cleanupOf(context);
    const redis = await startRedis(cleanup);
    const sim = await startSim(cleanup, { faults: { 1: { kind: 'hang_before_headers' } } });
    const workspace = await makeWorkspace(cleanup);
    await startWorker(cleanup, redis.url, { queue: QUEUE, concurrency: 1, config: { baseUrl: sim.url, workspaceRoot: workspace } });
    const config = makeConfig(sim, workspace, { cancelGraceMs: 5_000 }, { executor: 'bullmq', redisUrl: redis.url, bullmq: { queue: QUEUE, pollMs: 500 } });
    const manager = await bullManager(config, cleanup);
    const { id } = manager.spawn({ task: RESEARCH_TASK, label: 'cancelled, then restarted' });
    await startedJob(manager, id);
    await waitFor(() => sim.requests.length >= 1, 'the hanging model call');
    manager.cancel(id);
    expect(await ended(manager, id)).toMatchObject({ status: 'cancelled', endedBy: 'cooperative' });
    const requestsBefore = sim.requests.length;
    manager.restart(id);
    await waitFor(() => manager.get(id)?.state !== 'ended' && manager.get(id), 'the restart');
    const record = await ended(manager, id);
    expect(record).toMatchObject({ status: 'ok' });
    expect(sim.requests.length).toBeGreaterThan(requestsBefore);
  });
});
