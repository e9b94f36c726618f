/**
 * Faulty workers through the real Piscina pool: a job whose thread throws, exits, loops or runs
 * out of heap fails alone, with a typed error; the pool replaces the thread and the next job
 * runs. In `shared` isolation, innocent neighbours of a killed thread are re-queued once and a
 * poison job gives up after a bounded number of tries.
 */
import { describe, expect, it } from 'vitest';
import {
  ended,
  FAULTY_WORKER,
  fixtureExecutor,
  HEAP_CAP_ABORTS_PROCESS,
  makeConfig,
  makeManager,
  makeWorkspace,
  ManualScheduler,
  recordEvents,
  RESEARCH_TASK,
  startedJob,
  startSim,
  cleanupOf,
  watchProcess,
  type Cleanup,
} from '../helpers/index.js';
import type { JobRecord } from '../../src/main/ledger/ledger.js';
import type { BackgroundManager } from '../../src/main/jobs/manager.js';
import { PiscinaExecutor, SHARED_YOUNG_HEAP_MB, THREAD_YOUNG_HEAP_MB } from '../../src/main/executors/piscina-executor.js';
import type { ForkpoolConfig } from '../../src/shared/config.js';
import { MANY_JOBS_HEAP_MB, MANY_JOBS_PER_THREAD, SHARED_HEAP_MB, THREAD_HEAP_MB } from '../../src/shared/defaults.js';

/**
 * A manager over the fault fixture. Job timeouts are held in the test's hand (a test fires one
 * when its scenario is in place); cancel grace and the port fallback run on real timers.
 */
async function setup(cleanups: Cleanup, background: Parameters<typeof makeConfig>[2] = {}, threadAnswerMs?: number) {
  const root = await makeWorkspace(cleanups);
  const sim = await startSim(cleanups);
  const config = makeConfig(sim, root, { maxConcurrent: 1, cancelGraceMs: 100, ...background });
  const executor = threadAnswerMs === undefined ? fixtureExecutor(config, cleanups) : sharedFixtureExecutor(config, cleanups, threadAnswerMs);
  const scheduler = new ManualScheduler(['cancel-grace', 'port-close']);
  const manager = makeManager(config, cleanups, executor, scheduler);
  return { manager, executor, sim, scheduler };
}

/**
 * The fault fixture's pool in `shared` isolation, as createExecutor builds it, with the time a
 * thread gets to answer after a hard stop (`threadAnswerMs`) set by the test.
 */
function sharedFixtureExecutor(config: ForkpoolConfig, cleanups: Cleanup, threadAnswerMs: number): PiscinaExecutor {
  const { threads, tasksPerThread, heapMb } = config.background;
  const executor = new PiscinaExecutor({ isolation: 'shared', threads, tasksPerThread, heapMb, threadAnswerMs, workerFile: FAULTY_WORKER });
  cleanups.add(() => executor.close());
  return executor;
}

/** Spawns the faulty job, then a normal one behind it; returns both records once ended. */
async function faultThenNormal(manager: BackgroundManager, task: string): Promise<[JobRecord, JobRecord]> {
  const bad = manager.spawn({ task, label: 'faulty' });
  const good = manager.spawn({ task: RESEARCH_TASK, label: 'innocent' });
  return Promise.all([ended(manager, bad.id), ended(manager, good.id)]);
}

// Each test has its own pool, sim and cleanup list (cleanupOf): they run side by side.
describe.concurrent('a faulty worker fails only its own job', () => {
  it.for([
    ['FAULT:throw_sync', 'TASK_FAILED'],
    ['FAULT:throw_async', 'THREAD_LOST'],
    ['FAULT:exit', 'THREAD_LOST'],
  ] as const)('%s → failed with %s; the next job ends ok', async ([task, code], context) => {
    const cleanups = cleanupOf(context);
    const { manager } = await setup(cleanups);
    const [bad, good] = await faultThenNormal(manager, task);
    expect(bad.status).toBe('failed');
    expect(bad.endedBy).toBe('crash');
    expect(bad.error?.code).toBe(code);
    expect(bad.error?.jobId).toBe(bad.id);
    expect(good.status).toBe('ok');
    expect(good.endedBy).toBe('completed');
    expect(manager.pending).toBe(0);
  });

  it.skipIf(HEAP_CAP_ABORTS_PROCESS)('a thread over its heap cap fails with WORKER_OUT_OF_MEMORY; the next job ends ok', async (context) => {
    const cleanups = cleanupOf(context);
    const { manager } = await setup(cleanups, { heapMb: 64 });
    const [bad, good] = await faultThenNormal(manager, 'FAULT:oom');
    expect(bad.status).toBe('failed');
    expect(bad.endedBy).toBe('crash');
    expect(bad.error?.code).toBe('WORKER_OUT_OF_MEMORY');
    expect(good.status).toBe('ok');
  });

  // The fixture's `limits` fault throws the thread's own resourceLimits back in its error message.
  const threadLimits = (job: JobRecord): Record<string, number> => JSON.parse(/\{.*\}/.exec(job.error?.message ?? '')?.[0] ?? '{}') as Record<string, number>;
  it.for([
    ['thread, youngHeapMb unset', {}, THREAD_YOUNG_HEAP_MB],
    ['thread, youngHeapMb 8', { youngHeapMb: 8 }, 8],
    ['shared, youngHeapMb 6', { isolation: 'shared', youngHeapMb: 6 }, 6],
  ] as const)('a job thread gets its young-generation cap beside the heap cap (%s)', async ([_name, background, youngMb], context) => {
    const cleanups = cleanupOf(context);
    const { manager } = await setup(cleanups, { heapMb: 96, ...background });
    const [limits] = await faultThenNormal(manager, 'FAULT:limits');
    expect(threadLimits(limits)).toMatchObject({ maxOldGenerationSizeMb: 96, maxYoungGenerationSizeMb: youngMb });
  });

  it.for([
    ['thread', THREAD_HEAP_MB],
    ['shared', SHARED_HEAP_MB],
  ] as const)('with heapMb unset, a thread in %s isolation gets the heap cap of that isolation', async ([isolation, heapMb], context) => {
    const cleanups = cleanupOf(context);
    const { manager } = await setup(cleanups, { isolation });
    const [limits] = await faultThenNormal(manager, 'FAULT:limits');
    expect(threadLimits(limits).maxOldGenerationSizeMb).toBe(heapMb);
  });

  // After a full GC, V8 lets a heap grow to 4× its live size when its cap is 2 GiB or more, to 2× under it (defaults.ts).
  it('with heapMb unset, a shared thread that may hold thousands of jobs gets a cap under 2 GiB', async (context) => {
    const cleanups = cleanupOf(context);
    const { manager } = await setup(cleanups, { isolation: 'shared', tasksPerThread: MANY_JOBS_PER_THREAD });
    const [limits] = await faultThenNormal(manager, 'FAULT:limits');
    expect(threadLimits(limits).maxOldGenerationSizeMb).toBe(MANY_JOBS_HEAP_MB);
    expect(MANY_JOBS_HEAP_MB).toBeLessThan(2_048);
  });

  // V8's own (96 MiB for a worker) cost a third more CPU per job in a busy shared thread (piscina-executor.ts).
  it("a shared thread's young generation is capped at shared isolation's own, larger than thread isolation's", async (context) => {
    const cleanups = cleanupOf(context);
    const { manager } = await setup(cleanups, { isolation: 'shared', heapMb: 96 });
    const [limits] = await faultThenNormal(manager, 'FAULT:limits');
    expect(threadLimits(limits).maxYoungGenerationSizeMb).toBe(SHARED_YOUNG_HEAP_MB);
    expect(SHARED_YOUNG_HEAP_MB).toBeGreaterThan(THREAD_YOUNG_HEAP_MB);
  });

  it('an endless synchronous loop ends by timeout through a hard stop; the next job ends ok', async (context) => {
    const cleanups = cleanupOf(context);
    // A budget past the timeout: the run's one deadline is its timeout (Attempt.armDeadline).
    const { manager, scheduler } = await setup(cleanups, { budget: { maxWallclockMinutes: 60 } });
    const ending = faultThenNormal(manager, 'FAULT:loop');
    // The loop's timeout runs out (fired by hand once it runs); the next job's never does.
    const [loop] = manager.jobs();
    await startedJob(manager, loop?.id as string);
    for (const timer of scheduler.find('timeout', loop?.id)) scheduler.fire(timer);
    const [bad, good] = await ending;
    expect(bad.status).toBe('timed_out');
    expect(bad.endedBy).toBe('hard');
    expect(bad.error?.code).toBe('JOB_TIMEOUT');
    expect(good.status).toBe('ok');
  });

  it('an endless synchronous loop ends by cancel through a hard stop; the next job ends ok', async (context) => {
    const cleanups = cleanupOf(context);
    const { manager } = await setup(cleanups);
    const bad = manager.spawn({ task: 'FAULT:loop', label: 'spinner' });
    const good = manager.spawn({ task: RESEARCH_TASK, label: 'innocent' });
    await startedJob(manager, bad.id);
    manager.cancel(bad.id);
    const record = await ended(manager, bad.id);
    expect(record.status).toBe('cancelled');
    expect(record.endedBy).toBe('hard');
    expect(record.error?.code).toBe('JOB_CANCELLED');
    expect((await ended(manager, good.id)).status).toBe('ok');
  });

  it('with several jobs at once, a crash takes only its own job (thread isolation)', async (context) => {
    const cleanups = cleanupOf(context);
    // A long grace: the neighbours' answer to the cancel below can never lose a race with it.
    const { manager } = await setup(cleanups, { maxConcurrent: 3, cancelGraceMs: 60_000 });
    // Neighbours that run until told: they are certainly running when the crash happens.
    const neighbours = [manager.spawn({ task: 'FAULT:finish_on_cancel n1', label: 'n1' }), manager.spawn({ task: 'FAULT:finish_on_cancel n2', label: 'n2' })];
    await Promise.all(neighbours.map((n) => startedJob(manager, n.id)));
    const bad = manager.spawn({ task: 'FAULT:exit', label: 'bad' });
    expect((await ended(manager, bad.id)).status).toBe('failed');
    expect(neighbours.map((n) => manager.get(n.id)?.state)).toEqual(['running', 'running']);
    for (const n of neighbours) manager.cancel(n.id);
    for (const n of neighbours) {
      const record = await ended(manager, n.id);
      expect(record.status).toBe('ok');
      expect(record.attempts).toBe(1);
      expect(record.notes).toEqual([]);
    }
  });

  it('the host process is unaffected: no uncaught error reaches it', async (context) => {
    const cleanups = cleanupOf(context);
    const seen = watchProcess(cleanups);
    const { manager } = await setup(cleanups, { maxConcurrent: 2 });
    const ids = ['FAULT:throw_async', 'FAULT:exit', 'FAULT:throw_sync'].map((task) => manager.spawn({ task, label: task }).id);
    const records = await Promise.all(ids.map((id) => ended(manager, id)));
    expect(records.map((r) => r.status)).toEqual(['failed', 'failed', 'failed']);
    const after = manager.spawn({ task: RESEARCH_TASK, label: 'after' });
    expect((await ended(manager, after.id)).status).toBe('ok');
    expect(seen).toEqual([]);
  });
});

// One test at a time, after the group above: each kills or stops the one shared thread of its pool
// and waits for its jobs to be re-queued and run again (a poison job timed out beside its
// neighbours on a loaded machine).
describe('shared isolation', () => {
  const shared = { isolation: 'shared', tasksPerThread: 4, threads: 1, maxConcurrent: 4, cancelGraceMs: 100 } as const;

  it('a hard stop of a stuck thread kills it; its innocent neighbours are re-queued once and end ok', async (context) => {
    const cleanups = cleanupOf(context);
    // The thread is stuck for good: it never answers, so a second (not the default 5) settles it.
    const { manager } = await setup(cleanups, shared, 1_000);
    const log = recordEvents(manager);
    // Innocents whose first attempt runs until its thread dies, and whose retry finishes quickly.
    const innocents = [1, 2, 3].map((i) => manager.spawn({ task: `FAULT:hang_once:20 innocent ${i}`, label: `innocent ${i}` }));
    const startedInnocents = await Promise.all(innocents.map((j) => startedJob(manager, j.id)));
    // Last: once it runs, its synchronous loop holds the thread, which answers nothing more.
    const stubborn = manager.spawn({ task: 'FAULT:loop', label: 'stubborn' });
    const started = [...startedInnocents, await startedJob(manager, stubborn.id)];
    // All four share the one thread.
    expect(new Set(started.map((r) => r.threadId)).size).toBe(1);

    manager.cancel(stubborn.id);
    const killed = await ended(manager, stubborn.id);
    expect(killed.status).toBe('cancelled');
    expect(killed.endedBy).toBe('hard');

    const records = await Promise.all(innocents.map((j) => ended(manager, j.id)));
    for (const record of records) {
      expect(record.status).toBe('ok');
      expect(record.attempts).toBe(2);
      expect(record.notes).toHaveLength(1);
      expect(record.notes[0]).toMatch(/thread died/);
      expect(record.threadId).not.toBe(killed.threadId);
      expect(log.filter((e) => e.type === 'requeued' && e.id === record.id)).toHaveLength(1);
      expect(log.filter((e) => e.type === 'done' && e.id === record.id)).toHaveLength(1);
    }
    expect(log.filter((e) => e.type === 'requeued' && e.id === stubborn.id)).toEqual([]);
  });

  it('a job that ignores its cancel on a thread that still runs is let go: the thread and its neighbours go on', async (context) => {
    const cleanups = cleanupOf(context);
    const { manager } = await setup(cleanups, shared);
    const log = recordEvents(manager);
    const stubborn = manager.spawn({ task: 'FAULT:ignore_cancel', label: 'stubborn' });
    const neighbours = [1, 2, 3].map((i) => manager.spawn({ task: `FAULT:hang_once:20 neighbour ${i}`, label: `neighbour ${i}` }));
    const started = await Promise.all([stubborn, ...neighbours].map((j) => startedJob(manager, j.id)));
    expect(new Set(started.map((r) => r.threadId)).size).toBe(1);

    manager.cancel(stubborn.id);
    const stopped = await ended(manager, stubborn.id);
    expect(stopped.status).toBe('cancelled');
    expect(stopped.endedBy).toBe('hard');
    // The neighbours still run their first attempt on the same thread: nothing was re-queued.
    for (const job of neighbours) {
      const record = manager.get(job.id);
      expect(record?.state).toBe('running');
      expect(record?.attempts).toBe(1);
      expect(record?.threadId).toBe(stopped.threadId);
    }
    expect(log.filter((e) => e.type === 'requeued')).toEqual([]);
    for (const job of neighbours) manager.cancel(job.id);
    await manager.onIdle();
  });

  it('a task function that throws fails alone with TASK_FAILED: its thread lives, nothing is re-queued', async (context) => {
    const cleanups = cleanupOf(context);
    // The throw leaves the job's ports open; its neighbour on the same thread keeps running.
    const { manager } = await setup(cleanups, shared);
    const log = recordEvents(manager);
    const neighbour = manager.spawn({ task: 'FAULT:slow:300 neighbour', label: 'neighbour' });
    const job = manager.spawn({ task: 'FAULT:throw_once:300', label: 'thrower' });
    const [record, other] = await Promise.all([ended(manager, job.id), ended(manager, neighbour.id)]);
    expect(record.status).toBe('failed');
    expect(record.error?.code).toBe('TASK_FAILED');
    expect(other.status).toBe('ok');
    expect(other.attempts).toBe(1);
    expect(log.filter((e) => e.type === 'requeued')).toEqual([]);
    expect(log.filter((e) => e.type === 'done' && e.id === job.id)).toHaveLength(1);
  });

  it('a poison job that kills every thread fails after maxRequeues + 1 tries and does not loop', async (context) => {
    const cleanups = cleanupOf(context);
    const maxRequeues = 2;
    const { manager } = await setup(cleanups, { ...shared, maxRequeues });
    const log = recordEvents(manager);
    const poison = manager.spawn({ task: 'FAULT:exit', label: 'poison' });
    const record = await ended(manager, poison.id);
    expect(record.status).toBe('failed');
    expect(record.endedBy).toBe('crash');
    expect(record.error?.code).toBe('THREAD_LOST');
    expect(record.error?.message).toMatch(new RegExp(`died on each of ${maxRequeues + 1} tries`));
    expect(log.filter((e) => e.type === 'requeued' && e.id === poison.id)).toHaveLength(maxRequeues);
    expect(log.filter((e) => e.type === 'done' && e.id === poison.id)).toHaveLength(1);
    await manager.onIdle();
    // And the pool still works afterwards.
    const after = manager.spawn({ task: RESEARCH_TASK, label: 'after' });
    expect((await ended(manager, after.id)).status).toBe('ok');
  });
});
