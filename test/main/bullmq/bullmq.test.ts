/**
 * The BullMQ executor end to end: a real redis-server (private, per test), real `forkpool
 * worker` processes, the real manager. Remote jobs must behave as local ones: same records,
 * same cancel, one delivery each; nothing secret stored in Redis.
 */
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { engineOf, type BackgroundManager } from '../../../src/main/jobs/manager.js';
import type { ForkpoolConfig } from '../../../src/shared/config.js';
import type { SimServer } from '../../../src/sim/index.js';
import {
  bullManager,
  bullmqOf,
  capturedLogger,
  skipWithoutRedis,
  RESEARCH_TASK,
  ended,
  makeConfig,
  makeWorkspace,
  recordEvents,
  testRedis,
  startSim,
  startWorker,
  startedJob,
  cleanupOf,
  type Cleanup,
  waitFor,
  drainedIds,
} from '../../helpers/index.js';
import { Deliveries } from '../../../src/main/delivery/deliveries.js';
import { BullmqExecutor } from '../../../src/main/bullmq/executor.js';
import { makeManager } from '../../helpers/pool.js';

/** The BullMQ job id of a job's launch under a manager's bullmq executor. */
function bullIdOf(manager: BackgroundManager, id: string, launch: number): string {
  return bullmqOf(manager).bullId(id, launch, engineOf(manager).owner);
}

function bullConfig(sim: SimServer, workspace: string, redis: { url: string; queue: string }): ForkpoolConfig {
  return makeConfig(
    sim,
    workspace,
    { maxConcurrent: 8, cancelGraceMs: 2_000 },
    { executor: 'bullmq', redisUrl: redis.url, bullmq: { queue: redis.queue, lockMs: 4_000, pollMs: 500 } },
  );
}

function redisClient(cleanup: Cleanup, url: string): Redis {
  const client = new Redis(url, { maxRetriesPerRequest: null });
  cleanup.add(() => client.disconnect());
  return client;
}

// Worker processes and Redis round trips: slow on a loaded machine, never hung. The tests run
// side by side (each its own queue, sim, workers and cleanupOf list): mostly waiting on them.
describe.skipIf(skipWithoutRedis())('bullmq executor', { timeout: 180_000, concurrent: true }, () => {
  it('runs jobs on worker processes and ends them as local ones, each delivered once; no API key is stored in Redis', async (context) => {
    const cleanup = cleanupOf(context);
    const redis = await testRedis(cleanup);
    const sim = await startSim(cleanup, { latencyMs: 20 });
    const workspace = await makeWorkspace(cleanup);
    const workers = await Promise.all([
      startWorker(cleanup, redis.url, { queue: redis.queue, config: { baseUrl: sim.url, workspaceRoot: workspace } }),
      startWorker(cleanup, redis.url, { queue: redis.queue, config: { baseUrl: sim.url, workspaceRoot: workspace } }),
    ]);
    const manager = await bullManager(bullConfig(sim, workspace, redis), cleanup);
    const events = recordEvents(manager);
    const ids = Array.from({ length: 6 }, (_, i) => manager.spawn({ task: RESEARCH_TASK, label: `remote ${i}`, wave: 1 }).id);
    // Look while the jobs are in Redis: their data must not carry the key.
    const client = redisClient(cleanup, redis.url);
    let stored: string | null = null;
    while (stored === null && manager.get(ids[5] as string)?.state !== 'ended')
      stored = await client.hget(`bull:${redis.queue}:${bullIdOf(manager, ids[5] as string, 1)}`, 'data');
    const records = await Promise.all(ids.map((id) => ended(manager, id)));
    new Deliveries(manager).sealWave(1);
    for (const record of records) {
      expect(record).toMatchObject({ state: 'ended', status: 'ok', endedBy: 'completed', attempts: 1 });
      expect(record.resultText).toContain('retry');
    }
    expect(stored).toContain(RESEARCH_TASK.slice(0, 20));
    expect(stored).not.toContain('test-key');
    const keys = await client.keys(`bull:${redis.queue}:*`);
    for (const key of keys.filter((k) => k.startsWith(`bull:${redis.queue}:`) && !k.endsWith(':events'))) {
      const type = await client.type(key);
      if (type === 'hash') expect(JSON.stringify(await client.hgetall(key))).not.toContain('test-key');
    }
    // Both workers took part, each job ran once, and delivery hands each over once.
    const runs = workers.flatMap((w) => w.runsEnded());
    expect(new Set(runs.map((r) => r.bullId)).size).toBe(6);
    expect(drainedIds(manager, 1)).toEqual([...ids].sort());
    expect(new Deliveries(manager).drain(2)).toEqual([]);
    expect(events.filter((e) => e.type === 'done')).toHaveLength(6);
  });

  it('with no worker connected, the producer says so (a warning naming the queue, health not ok) and says so again when one comes; the job then runs', async (context) => {
    const cleanup = cleanupOf(context);
    const redis = await testRedis(cleanup);
    const sim = await startSim(cleanup);
    const workspace = await makeWorkspace(cleanup);
    const { logger, messages } = capturedLogger({ level: 'warn' });
    const config = bullConfig(sim, workspace, redis);
    const executor = new BullmqExecutor({ redisUrl: redis.url, bullmq: { ...config.bullmq, pollMs: 200, noWorkerWarnMs: 500 }, logger });
    await executor.ready();
    const manager = makeManager(config, cleanup, executor);
    expect(executor.health()).toEqual({ ok: true });
    const { id } = manager.spawn({ task: RESEARCH_TASK, label: 'nobody serves it' });
    const warning = await waitFor(() => messages().find((m) => m.startsWith('no forkpool worker')), 'the no-worker warning');
    expect(warning).toContain(`"${redis.queue}"`);
    expect(warning).toContain('1 job(s) wait');
    expect(executor.health()).toMatchObject({ ok: false, problem: expect.stringContaining('no forkpool worker') as unknown });
    await startWorker(cleanup, redis.url, { queue: redis.queue, config: { baseUrl: sim.url, workspaceRoot: workspace } });
    expect(await ended(manager, id)).toMatchObject({ status: 'ok' });
    await waitFor(() => messages().find((m) => m.startsWith('a forkpool worker connected')), 'the all-clear');
    expect(messages().filter((m) => m.startsWith('no forkpool worker'))).toHaveLength(1);
    expect(executor.health()).toEqual({ ok: true });
  });

  it('a job cancelled while it waits in Redis is taken out of the queue: no worker ever runs it', async (context) => {
    const cleanup = cleanupOf(context);
    const redis = await testRedis(cleanup);
    const sim = await startSim(cleanup);
    const workspace = await makeWorkspace(cleanup);
    const manager = await bullManager(bullConfig(sim, workspace, redis), cleanup);
    const { id } = manager.spawn({ task: RESEARCH_TASK, label: 'never runs' });
    const executor = bullmqOf(manager);
    let state = '';
    const poll = setInterval(() => void executor.queue.getJobState(bullIdOf(manager, id, 1)).then((s) => (state = s)), 20);
    cleanup.add(() => clearInterval(poll));
    await waitFor(() => state === 'waiting', 'the job in the queue');
    manager.cancel(id);
    const record = await ended(manager, id);
    expect(record).toMatchObject({ status: 'cancelled', attempts: 0 });
    // A worker that comes now finds nothing to run.
    const worker = await startWorker(cleanup, redis.url, { queue: redis.queue, config: { baseUrl: sim.url, workspaceRoot: workspace } });
    const other = manager.spawn({ task: RESEARCH_TASK, label: 'after' });
    await ended(manager, other.id);
    expect(worker.runsEnded().map((r) => r.jobId)).toEqual([other.id]);
  });

  it('with maxDepth 2 (agent and session), a job on a worker is offered no spawn tool: nested jobs are the main side only', async (context) => {
    const cleanup = cleanupOf(context);
    const redis = await testRedis(cleanup);
    const sim = await startSim(cleanup, { script: [{ content: 'Answered without spawning.' }, { content: 'The agent too.' }] });
    const workspace = await makeWorkspace(cleanup);
    await startWorker(cleanup, redis.url, { queue: redis.queue, config: { baseUrl: sim.url, workspaceRoot: workspace } });
    const config = makeConfig(
      sim,
      workspace,
      { maxConcurrent: 1, maxDepth: 2 },
      {
        executor: 'bullmq',
        redisUrl: redis.url,
        bullmq: { queue: redis.queue, pollMs: 500 },
        agents: { planner: { description: 'plans', maxDepth: 3, tools: ['read_file'] } },
      },
    );
    const manager = await bullManager(config, cleanup);
    const fork = manager.spawn({ task: RESEARCH_TASK, label: 'fork' }).id;
    expect(await ended(manager, fork)).toMatchObject({ status: 'ok' });
    const agent = manager.spawn({ task: RESEARCH_TASK, label: 'planner', agent: 'planner' }).id;
    expect(await ended(manager, agent)).toMatchObject({ status: 'ok' });
    const toolNames = (i: number) => ((sim.requests[i]?.body?.tools ?? []) as Array<{ function: { name: string } }>).map((t) => t.function.name);
    expect(toolNames(0)).toContain('read_file');
    expect(toolNames(0)).not.toContain('spawn_background_agent');
    expect(toolNames(1)).not.toContain('spawn_background_agent');
  });

  it('refuses a completion Redis does not confirm (a stale or forged run), and delivers the real one once', async (context) => {
    const cleanup = cleanupOf(context);
    const redis = await testRedis(cleanup);
    const sim = await startSim(cleanup, { latencyMs: 400 });
    const workspace = await makeWorkspace(cleanup);
    await startWorker(cleanup, redis.url, { queue: redis.queue, config: { baseUrl: sim.url, workspaceRoot: workspace } });
    const manager = await bullManager(bullConfig(sim, workspace, redis), cleanup);
    const executor = bullmqOf(manager);
    const { id } = manager.spawn({ task: RESEARCH_TASK, label: 'real' });
    await startedJob(manager, id);
    // What a run that lost its lock (or a failed-over Redis) could report: a completion of its own.
    const forged = {
      token: 'stale-run-token',
      worker: 'elsewhere',
      run: 1,
      started: true,
      end: { kind: 'done', outcome: { stopReason: 'final', text: 'FORGED ANSWER', usage: {}, iterations: 1 } },
    };
    await redisClient(cleanup, redis.url).xadd(
      `bull:${redis.queue}:events`,
      '*',
      'event',
      'completed',
      'jobId',
      bullIdOf(manager, id, 1),
      'returnvalue',
      JSON.stringify(forged),
      'prev',
      'active',
    );
    await waitFor(() => executor.gate.rejected.some((r) => r.token === 'stale-run-token'), 'the forged completion to be refused');
    expect(manager.get(id)?.state).toBe('running');
    const record = await ended(manager, id);
    expect(record.status).toBe('ok');
    expect(record.resultText).not.toContain('FORGED');
    expect(new Deliveries(manager).drain(1).map((r) => r.id)).toEqual([id]);
  });
});

// Alone, after the group above: it bounds the cancel's round trip in wall time (2 s).
describe.skipIf(skipWithoutRedis())('bullmq executor: cancel', { timeout: 180_000 }, () => {
  it('cancel from the main process reaches the job on its worker, aborts its model call, and ends it cancelled, not failed or retried', async (context) => {
    const cleanup = cleanupOf(context);
    const redis = await testRedis(cleanup);
    // The job's first model call never answers: only a cancel that reaches it ends it.
    const sim = await startSim(cleanup, { faults: { 1: { kind: 'hang_before_headers' } } });
    const workspace = await makeWorkspace(cleanup);
    const worker = await startWorker(cleanup, redis.url, { queue: redis.queue, config: { baseUrl: sim.url, workspaceRoot: workspace } });
    const manager = await bullManager(bullConfig(sim, workspace, redis), cleanup);
    const { id } = manager.spawn({ task: RESEARCH_TASK, label: 'to cancel' });
    await startedJob(manager, id);
    await waitFor(() => sim.requests.length >= 1, "the job's first model call");
    const cancelledAt = Date.now();
    manager.cancel(id);
    const record = await ended(manager, id);
    const latencyMs = Date.now() - cancelledAt;
    // Cooperative: the worker's job honoured it (no hard stop was needed), and it ran once.
    expect(record).toMatchObject({ status: 'cancelled', endedBy: 'cooperative', attempts: 1 });
    expect(record.error?.code).toBe('JOB_CANCELLED');
    const runs = await waitFor(
      () => worker.runsEnded().filter((r) => r.bullId === bullIdOf(manager, id, 1)).length > 0 && worker.runsEnded(),
      "the worker's run report",
    );
    expect(runs.filter((r) => r.bullId === bullIdOf(manager, id, 1))).toEqual([expect.objectContaining({ run: 1, end: 'done', stopReason: 'aborted' })]);
    // The issue's bound is 100 ms (the bench measures it); here only "well before the 2 s
    // hard-stop grace", so a busy machine cannot fail it. endedBy 'cooperative' is the real check.
    expect(latencyMs).toBeLessThan(2_000);
  });
});
