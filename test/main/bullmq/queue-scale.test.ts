/**
 * Issue 23, the producer at scale: a fan-out's request is stored once in Redis (a queued job
 * costs under 1 KB), the quiet-job poll costs the same whatever the number of waiting jobs (no
 * per-job LPOS), closing with jobs waiting cancels them in bulk, and a worker refuses a job
 * whose stored request is gone or forged. Real
 * redis-server (private: its command counts are this test's), real `forkpool worker`, the real
 * manager.
 */
import { createHash } from 'node:crypto';
import { Queue, QueueEvents, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { jobForRedis, specForRedis } from '../../../src/main/bullmq/job-request.js';
import { canonicalJson } from '../../../src/main/bullmq/request-store.js';
import { parseConfig } from '../../../src/shared/config.js';
import { engineOf } from '../../../src/main/jobs/manager.js';
import {
  bullManager,
  bullmqOf,
  skipWithoutRedis,
  RESEARCH_TASK,
  makeConfig,
  startRedis,
  startSim,
  startWorker,
  tempWorkspace,
  useCleanup,
} from '../../helpers/index.js';

const cleanup = useCleanup();
const JOBS = 300;
const POLL_MS = 200;

function commandCalls(info: string, command: string): number {
  return Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(info)?.[1] ?? 0);
}

describe.skipIf(skipWithoutRedis())('bullmq: queueing at scale', () => {
  it('300 queued jobs share one request key, cost under 900 bytes each in Redis, and the poll asks Redis a fixed number of times, never LPOS', async () => {
    const redis = await startRedis(cleanup);
    const probe = new Redis(redis.url);
    cleanup.add(() => probe.disconnect());
    const workspace = tempWorkspace(undefined, cleanup);
    const config = makeConfig(
      undefined,
      workspace,
      { maxConcurrent: JOBS },
      { executor: 'bullmq', redisUrl: redis.url, bullmq: { queue: 'fp-scale', pollMs: POLL_MS } },
    );
    const manager = await bullManager(config, cleanup);
    for (let i = 0; i < JOBS; i++) manager.spawn({ task: `${RESEARCH_TASK} (${i})`, label: `fan ${i}` });
    for (const deadline = Date.now() + 15_000; (await probe.llen('bull:fp-scale:wait')) < JOBS;) {
      if (Date.now() > deadline) throw new Error('the jobs did not all reach Redis');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }

    const requestKeys = await probe.keys('forkpool:fp-scale:request:*');
    expect(requestKeys).toHaveLength(1);
    const jobKeys = (await probe.lrange('bull:fp-scale:wait', 0, -1)).map((id) => `bull:fp-scale:${id}`);
    let bytes = 0;
    for (const key of jobKeys) bytes += Number(await probe.call('MEMORY', 'USAGE', key, 'SAMPLES', '0'));
    // A job's own hash: its opts hold its id and attempts only (the removal ages are the workers').
    expect(JSON.parse((await probe.hget(jobKeys[0]!, 'opts')) ?? '{}')).toEqual({ jobId: expect.any(String), attempts: 3 });
    expect(bytes / JOBS).toBeLessThan(900);
    for (const key of requestKeys) bytes += Number(await probe.call('MEMORY', 'USAGE', key, 'SAMPLES', '0'));
    expect(bytes / JOBS).toBeLessThan(1_024);

    // Every job is quiet (no worker): each poll period asks about all of them.
    await probe.config('RESETSTAT');
    await new Promise((resolve) => setTimeout(resolve, POLL_MS * 5));
    const stats = await probe.info('commandstats');
    expect(commandCalls(stats, 'lpos')).toBe(0);
    // One script call per period for up to 1,000 jobs (about 5 here, not 1,500).
    expect(commandCalls(stats, 'eval') + commandCalls(stats, 'evalsha')).toBeLessThanOrEqual(10);
  }, 20_000);

  it("closing with 600 jobs waiting cancels them in bulk: fewer Redis commands than jobs, each ends cancelled and is gone, one a worker took is told to stop, another producer's jobs stay", async () => {
    const jobs = 600;
    const redis = await startRedis(cleanup);
    const probe = new Redis(redis.url);
    cleanup.add(() => probe.disconnect());
    // Another producer's waiting jobs, on both sides of ours in the wait list: they must stay, in order.
    const other = new Queue('fp-close', { connection: { host: '127.0.0.1', port: redis.port, maxRetriesPerRequest: null } });
    cleanup.add(() => other.close());
    await other.addBulk([1, 2, 3].map((i) => ({ name: 'job', data: {}, opts: { jobId: `other.${i}` } })));
    const workspace = tempWorkspace(undefined, cleanup);
    const config = makeConfig(undefined, workspace, { maxConcurrent: jobs }, { executor: 'bullmq', redisUrl: redis.url, bullmq: { queue: 'fp-close' } });
    const manager = await bullManager(config, cleanup);
    const ids = Array.from({ length: jobs }, (_, i) => manager.spawn({ task: `${RESEARCH_TASK} (${i})`, label: `fan ${i}` }).id);
    for (const deadline = Date.now() + 15_000; (await probe.llen('bull:fp-close:wait')) < jobs + 3;) {
      if (Date.now() > deadline) throw new Error('the jobs did not all reach Redis');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    // Newer ones at the head: 2,000 of them, which a walk of the wait list from the head would cross.
    const newer = Array.from({ length: 2_000 }, (_, i) => `other.${i + 4}`);
    await other.addBulk(newer.map((jobId) => ({ name: 'job', data: {}, opts: { jobId } })));
    // A worker takes the oldest four (other.1 to 3, then our first): ours must be stopped through
    // its worker (cancel key and control message), not removed under it. It ends the job as
    // `forkpool worker` does one it finds cancelled before it started it.
    const taker = new Worker('fp-close', null, { connection: { host: '127.0.0.1', port: redis.port, maxRetriesPerRequest: null }, autorun: false });
    cleanup.add(() => taker.close(true));
    const takenJobs = [];
    for (let i = 0; i < 4; i++) takenJobs.push(await taker.getNextJob('taker'));
    const taken = bullmqOf(manager).bullId(ids[0]!, 1, engineOf(manager).owner);
    const takenJob = takenJobs.find((job) => job?.id === taken);
    const listener = new Redis(redis.url);
    cleanup.add(() => listener.disconnect());
    const control: unknown[] = [];
    let cancelKey: string | null = null;
    listener.on('message', (_channel: string, text: string) => {
      const message = JSON.parse(text) as { bullId: string; action: string };
      control.push(message);
      if (message.bullId !== taken || message.action !== 'cancel') return;
      const outcome = { stopReason: 'aborted', text: '', usage: {}, iterations: 0 };
      void probe
        .get(`forkpool:fp-close:cancelled:${taken}`)
        .then((reason) => (cancelKey = reason))
        .then(() => takenJob?.moveToCompleted({ token: 'taker', worker: 'taker', run: 1, started: false, end: { kind: 'done', outcome } }, 'taker', false));
    });
    await listener.subscribe('forkpool:fp-close:control');

    // The commands clients send (MONITOR shows a script's own calls as from `lua`: not counted).
    const monitor = await probe.monitor();
    let sent = 0;
    let pages = 0;
    monitor.on('monitor', (_time: string, args: string[], source: string) => {
      if (source !== 'lua') sent += 1;
      if (source === 'lua' && args[0]?.toLowerCase() === 'lrange') pages += 1;
    });
    const report = await manager.close();
    monitor.disconnect();

    expect(report.cancelled).toHaveLength(jobs);
    // One script call per 1,000 launches (and a few for the taken job); before, each cancel was a
    // control write, a remove and a DEL, and a dozen commands in all.
    expect(sent).toBeLessThan(jobs / 10);
    const statuses = (await Promise.all(ids.map((id) => manager.result(id)))).map((record) => [record.status, record.attempts]);
    expect(statuses).toEqual(ids.map(() => ['cancelled', 0]));
    expect(await probe.lrange('bull:fp-close:wait', 0, -1)).toEqual(newer.toReversed());
    // The walk starts at the tail, where the oldest jobs are: one page of 1,000 finds a batch's
    // 599 (from the head, a batch crossed the 2,000 newer jobs first: 3 pages).
    expect(pages).toBeLessThan(3);
    // The taken one only: the others went without a word to the workers.
    expect(control).toContainEqual({ bullId: taken, action: 'cancel', reason: 'close' });
    expect(control.filter((message) => (message as { bullId: string }).bullId !== taken)).toEqual([]);
    expect(cancelKey).toBe('close');
    const left = (await probe.keys('*')).filter((key) => key.includes(`${bullmqOf(manager).namespace}.`));
    expect(left).toEqual([]);
  }, 30_000);

  it('destroy() with 600 jobs waiting hard-stops them in bulk too: fewer Redis commands than jobs/10, nothing of them left', async () => {
    const jobs = 600;
    const redis = await startRedis(cleanup);
    const probe = new Redis(redis.url);
    cleanup.add(() => probe.disconnect());
    const workspace = tempWorkspace(undefined, cleanup);
    const config = makeConfig(undefined, workspace, { maxConcurrent: jobs }, { executor: 'bullmq', redisUrl: redis.url, bullmq: { queue: 'fp-destroy' } });
    const manager = await bullManager(config, cleanup);
    for (let i = 0; i < jobs; i++) manager.spawn({ task: `${RESEARCH_TASK} (${i})`, label: `fan ${i}` });
    for (const deadline = Date.now() + 15_000; (await probe.llen('bull:fp-destroy:wait')) < jobs;) {
      if (Date.now() > deadline) throw new Error('the jobs did not all reach Redis');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const monitor = await probe.monitor();
    let sent = 0;
    monitor.on('monitor', (_time: string, _args: string[], source: string) => {
      if (source !== 'lua') sent += 1;
    });
    expect((await manager.destroy()).cancelled).toHaveLength(jobs);
    monitor.disconnect();
    expect(sent).toBeLessThan(jobs / 10);
    expect(await probe.llen('bull:fp-destroy:wait')).toBe(0);
    expect((await probe.keys('*')).filter((key) => key.includes(`${bullmqOf(manager).namespace}.`))).toEqual([]);
  }, 30_000);

  it.each([
    ['close', 'queued'],
    ['destroy', 'queued'],
    ['close', 'launched'],
    ['destroy', 'launched'],
    ['executor close', 'launched'],
  ] as const)(
    '%s() with 2,000 jobs %s and not yet in Redis: each cancelled once, none left for a worker',
    async (how, when) => {
      const jobs = 2_000;
      const redis = await startRedis(cleanup);
      const probe = new Redis(redis.url);
      cleanup.add(() => probe.disconnect());
      const workspace = tempWorkspace(undefined, cleanup);
      const config = makeConfig(undefined, workspace, { maxConcurrent: jobs }, { executor: 'bullmq', redisUrl: redis.url, bullmq: { queue: 'fp-early' } });
      const manager = await bullManager(config, cleanup);
      const executor = bullmqOf(manager);
      for (let i = 0; i < jobs; i++) manager.spawn({ task: `${RESEARCH_TASK} (${i})`, label: `fan ${i}` });
      if (when === 'launched') {
        // Launched (the pump is a microtask, the executor waits for its connection), but no wait
        // for Redis: the adds are still pending (batches of 1,000, one after another).
        for (let turn = 0; turn < 20 && executor.pendingCount < jobs; turn++) await Promise.resolve();
        expect(executor.pendingCount).toBe(jobs);
      }
      if (how === 'executor close') await executor.close();
      else {
        const report = how === 'close' ? await manager.close({ timeoutMs: 1_000 }) : await manager.destroy();
        // Queued: cancelled where they wait, none launched by another's ending.
        expect(new Set(report.cancelled).size).toBe(jobs);
        expect(report.cancelled).toHaveLength(jobs);
      }
      expect(await probe.llen('bull:fp-early:wait')).toBe(0);
      expect((await probe.keys('*')).filter((key) => key.includes(`${executor.namespace}.`))).toEqual([]);
    },
    30_000,
  );

  it('a worker refuses, unrun, a job whose stored request is gone or does not match its hash; the real one runs', async () => {
    const redis = await startRedis(cleanup);
    const sim = await startSim(cleanup);
    const workspace = tempWorkspace(undefined, cleanup);
    await startWorker(cleanup, redis.url, { config: { baseUrl: sim.url, apiKey: 'k', workspaceRoot: workspace }, queue: 'fp-req' });
    const connection = { host: '127.0.0.1', port: redis.port, maxRetriesPerRequest: null };
    const queue = new Queue('fp-req', { connection });
    const events = new QueueEvents('fp-req', { connection });
    const probe = new Redis(redis.url);
    cleanup.add(() => Promise.allSettled([queue.close(), events.close(), probe.quit()]));
    await events.waitUntilReady();

    const spec = {
      id: 'bg-1',
      label: 'x',
      task: 'List the workspace.',
      role: 'user' as const,
      attempt: 1,
      config: parseConfig({ baseUrl: sim.url, workspaceRoot: workspace }),
    };
    const text = canonicalJson(specForRedis(spec).request);
    const hash = createHash('sha256').update(text).digest('hex');
    const run = async (id: string) =>
      // Each wait ends before the test's own timeout, so a slow step names its job (gone, forged or real).
      (await queue.add('job', { spec: { ...jobForRedis(spec), id }, request: hash }, { jobId: id })).waitUntilFinished(events, 45_000);

    await expect(run('gone')).rejects.toThrow(/request [0-9a-f]{64} is gone from Redis/);
    await probe.set(`forkpool:fp-req:request:${hash}`, text.replace('"model"', '"model" ').trim());
    await expect(run('forged')).rejects.toThrow(/does not match its hash/);
    await probe.set(`forkpool:fp-req:request:${hash}`, text);
    await expect(run('real')).resolves.toMatchObject({ end: { kind: 'done' } });
    expect(sim.requests.length).toBeGreaterThan(0);
  }, 150_000);
});
