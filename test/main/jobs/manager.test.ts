/**
 * BackgroundManager through the real Piscina pool and real worker threads, with the simulated
 * model on loopback. Concurrency is checked by invariants over the event stream, never by
 * wall-clock windows.
 */
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { JobError } from '../../../src/shared/errors.js';
import { totalUsage } from '../../../src/shared/usage.js';
import {
  ended,
  fixtureExecutor,
  makeConfig,
  makeManager,
  makeWorkspace,
  ManualScheduler,
  recordEvents,
  RESEARCH_TASK,
  startedJob,
  startSim,
  cleanupOf,
} from '../../helpers/index.js';
import { Deliveries } from '../../../src/main/delivery/deliveries.js';

// Each test has its own pool, sim and cleanup list (cleanupOf): they run side by side.
describe.concurrent('BackgroundManager: one job', () => {
  it('spawn → run → done: status from the tag, text without it, usage and ordered timestamps', async (context) => {
    const cleanups = cleanupOf(context);
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups);
    const manager = makeManager(makeConfig(sim, root), cleanups);

    const handle = manager.spawn({ task: RESEARCH_TASK, label: 'retry' });
    expect(handle.state).toBe('queued');
    const record = await ended(manager, handle.id);

    expect(record.state).toBe('ended');
    expect(record.status).toBe('ok');
    expect(record.endedBy).toBe('completed');
    expect(record.stopReason).toBe('final');
    expect(record.tag?.status).toBe('ok');
    expect(record.tag?.filesTouched).toEqual(['src/retry.ts']);
    expect(record.resultText).toContain('src/retry.ts');
    expect(record.resultText).not.toContain('<result');
    expect(totalUsage(record.usage).totalTokens).toBeGreaterThan(0);
    expect(totalUsage(record.usage).requests).toBeGreaterThan(0);
    expect(record.attempts).toBe(1);
    expect(record.threadId).toBeTypeOf('number');
    const { queuedAt, startedAt, endedAt } = record;
    expect(startedAt).toBeDefined();
    expect(endedAt).toBeDefined();
    expect(queuedAt).toBeLessThanOrEqual(startedAt as number);
    expect(startedAt as number).toBeLessThanOrEqual(endedAt as number);
    // The worker asked the sim itself: system prompt of a background job, the task as the user message.
    expect(sim.requests.length).toBeGreaterThanOrEqual(2);
    expect(JSON.stringify(sim.requests[0]?.body.messages)).toContain('background research agent');
  });

  it('rejects an empty task with a clear error and leaves nothing behind', async (context) => {
    const cleanups = cleanupOf(context);
    const root = await makeWorkspace(cleanups);
    const manager = makeManager(makeConfig(undefined, root), cleanups);
    expect(() => manager.spawn({ task: '   ', label: 'x' })).toThrow(expect.objectContaining({ code: 'TOOL_ARGUMENTS_INVALID' }));
    expect(manager.jobs()).toEqual([]);
    expect(manager.pending).toBe(0);
  });

  it('rejects with QUEUE_FULL beyond the queue limit', async (context) => {
    const cleanups = cleanupOf(context);
    const root = await makeWorkspace(cleanups);
    const config = makeConfig(undefined, root, { maxConcurrent: 1, queueLimit: 1 });
    const manager = makeManager(config, cleanups, fixtureExecutor(config, cleanups));
    manager.spawn({ task: 'FAULT:slow:60000 runs', label: 'a' });
    manager.spawn({ task: 'FAULT:slow:60000 waits', label: 'b' });
    expect(() => manager.spawn({ task: 'FAULT:slow:10 overflow', label: 'c' })).toThrow(expect.objectContaining({ code: 'QUEUE_FULL' }));
    expect(manager.jobs()).toHaveLength(2);
  });
});

describe.concurrent('BackgroundManager: cap and order', () => {
  it('never runs more than maxConcurrent jobs and ends every job exactly once', async (context) => {
    const cleanups = cleanupOf(context);
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups, { latencyMs: 50 });
    // Twice as many threads as slots: the pool could run 6 at once, so only the dispatcher's cap
    // keeps it at 3 (with threads = maxConcurrent an off-by-one there was hidden by the pool).
    const manager = makeManager(makeConfig(sim, root, { maxConcurrent: 3, threads: 6 }), cleanups);
    const log = recordEvents(manager);

    const ids = Array.from({ length: 12 }, (_, i) => manager.spawn({ task: `${RESEARCH_TASK} (${i})`, label: `job ${i}` }).id);
    expect(manager.pending).toBe(12);
    await manager.onIdle();

    // Concurrency from the event stream: a job runs from its `started` to its `done`.
    const running = new Set<string>();
    const seen: number[] = [];
    for (const e of log) {
      if (e.type === 'started') running.add(e.id as string);
      else if (e.type === 'done') running.delete(e.id as string);
      else continue;
      seen.push(running.size);
    }
    expect(seen.length).toBe(24);
    expect(Math.max(...seen)).toBeLessThanOrEqual(3);
    expect(Math.max(...seen)).toBeGreaterThan(1); // the jobs did overlap
    for (const id of ids) expect(log.filter((e) => e.type === 'done' && e.id === id)).toHaveLength(1);
    expect(manager.jobs().every((r) => r.state === 'ended' && r.status === 'ok')).toBe(true);
    expect(manager.pending).toBe(0);
  });

  it('starts jobs in spawn order with maxConcurrent 1 (FIFO)', async (context) => {
    const cleanups = cleanupOf(context);
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups, { latencyMs: 5 });
    const manager = makeManager(makeConfig(sim, root, { maxConcurrent: 1 }), cleanups);
    const log = recordEvents(manager);
    const ids = Array.from({ length: 5 }, (_, i) => manager.spawn({ task: `${RESEARCH_TASK} #${i}`, label: `fifo ${i}` }).id);
    await manager.onIdle();
    const lifecycle = log.filter((e) => e.type === 'started' || e.type === 'done');
    // One at a time, in spawn order: started 1, done 1, started 2, done 2, ...
    expect(lifecycle).toEqual(
      ids.flatMap((id) => [
        { type: 'started', id },
        { type: 'done', id },
      ]),
    );
  });

  it('onIdle resolves at once when nothing is pending', async (context) => {
    const cleanups = cleanupOf(context);
    const root = await makeWorkspace(cleanups);
    const manager = makeManager(makeConfig(undefined, root), cleanups);
    await expect(manager.onIdle()).resolves.toBeUndefined();
  });
});

describe.concurrent('BackgroundManager: cancel', () => {
  it('cancels a queued job at once: it never starts', async (context) => {
    const cleanups = cleanupOf(context);
    const root = await makeWorkspace(cleanups);
    const config = makeConfig(undefined, root, { maxConcurrent: 1 });
    const manager = makeManager(config, cleanups, fixtureExecutor(config, cleanups));
    const log = recordEvents(manager);
    const a = manager.spawn({ task: 'FAULT:slow:300 holds the slot', label: 'a' });
    const b = manager.spawn({ task: 'FAULT:slow:10 waits', label: 'b' });

    const handle = manager.cancel(b.id);
    expect(handle.state).toBe('ended');
    const record = manager.get(b.id);
    expect(record?.status).toBe('cancelled');
    expect(record?.endedBy).toBe('queue');
    expect(record?.error?.code).toBe('JOB_CANCELLED');
    expect(record?.startedAt).toBeUndefined();

    // Idempotent: no throw, same state, no second `done`.
    expect(manager.cancel(b.id)).toEqual(handle);
    expect(manager.get(b.id)).toEqual(record);

    expect((await ended(manager, a.id)).status).toBe('ok');
    await manager.onIdle();
    expect(log.filter((e) => e.type === 'started' && e.id === b.id)).toEqual([]);
    expect(log.filter((e) => e.type === 'done' && e.id === b.id)).toHaveLength(1);
  });

  it('cancels a running job cooperatively while it waits on the model', async (context) => {
    const cleanups = cleanupOf(context);
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups, { latencyMs: 30_000 });
    const config = makeConfig(sim, root, { cancelGraceMs: 10_000 });
    const manager = makeManager(config, cleanups);
    const log = recordEvents(manager);
    const { id } = manager.spawn({ task: RESEARCH_TASK, label: 'long' });
    await startedJob(manager, id);

    expect(manager.cancel(id).state).toBe('running');
    const second = manager.cancel(id); // idempotent while the cancel is in flight
    expect(second.id).toBe(id);
    const record = await ended(manager, id);

    expect(record.status).toBe('cancelled');
    expect(record.endedBy).toBe('cooperative');
    expect(record.stopReason).toBe('aborted');
    expect(manager.cancel(id).state).toBe('ended');
    expect(manager.get(id)).toEqual(record);
    expect(log.filter((e) => e.type === 'done' && e.id === id)).toHaveLength(1);
  });

  it('throws JOB_UNKNOWN for an unknown id', async (context) => {
    const cleanups = cleanupOf(context);
    const root = await makeWorkspace(cleanups);
    const manager = makeManager(makeConfig(undefined, root), cleanups);
    let caught: unknown;
    try {
      manager.cancel('bg-999');
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(JobError);
    expect((caught as JobError).code).toBe('JOB_UNKNOWN');
    expect((caught as JobError).jobId).toBe('bg-999');
  });

  it('hard-stops a job that ignores the cooperative cancel; the next job still runs', async (context) => {
    const cleanups = cleanupOf(context);
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups);
    const config = makeConfig(sim, root, { maxConcurrent: 1, cancelGraceMs: 100 });
    const manager = makeManager(config, cleanups, fixtureExecutor(config, cleanups));
    const stubborn = manager.spawn({ task: 'FAULT:ignore_cancel', label: 'stubborn' });
    const next = manager.spawn({ task: RESEARCH_TASK, label: 'next' });
    await startedJob(manager, stubborn.id);
    manager.cancel(stubborn.id);

    const record = await ended(manager, stubborn.id);
    expect(record.status).toBe('cancelled');
    expect(record.endedBy).toBe('hard');
    expect(record.error?.code).toBe('JOB_CANCELLED');
    expect((await ended(manager, next.id)).status).toBe('ok');
  });
});

describe.concurrent('BackgroundManager: timeout counts from start', () => {
  // The timeout timer is held in the test's hand (cancel grace and the port fallback run for
  // real): what is checked is when it is armed and what firing it does, never how long a job took.
  // A run arms one deadline, the earlier of its timeout and its wall-clock budget (Attempt.armDeadline):
  // the budget here is past the timeout.

  it('times out a running job that outlives the timeout (hard stop when it ignores the cancel)', async (context) => {
    const cleanups = cleanupOf(context);
    const root = await makeWorkspace(cleanups);
    const config = makeConfig(undefined, root, { maxConcurrent: 1, cancelGraceMs: 100, budget: { maxWallclockMinutes: 60 } });
    const scheduler = new ManualScheduler(['cancel-grace', 'port-close']);
    const manager = makeManager(config, cleanups, fixtureExecutor(config, cleanups), scheduler);
    const { id } = manager.spawn({ task: 'FAULT:ignore_cancel', label: 'too slow' });
    await startedJob(manager, id);
    const [timer] = scheduler.find('timeout', id);
    expect(timer).toBeDefined();
    scheduler.fire(timer as number);
    const record = await ended(manager, id);
    expect(record.status).toBe('timed_out');
    expect(record.endedBy).toBe('hard');
    expect(record.error?.code).toBe('JOB_TIMEOUT');
  });

  it('a run arms one deadline timer: the earlier of its timeout and its wall-clock budget, which stops it with its own reason', async (context) => {
    const cleanups = cleanupOf(context);
    const root = await makeWorkspace(cleanups);
    const cases = [
      { background: { timeoutMinutes: 20, budget: { maxWallclockMinutes: 10 } }, kind: 'budget' },
      { background: { timeoutMinutes: 5, budget: { maxWallclockMinutes: 10 } }, kind: 'timeout' },
    ] as const;
    for (const { background, kind } of cases) {
      const config = makeConfig(undefined, root, { maxConcurrent: 1, cancelGraceMs: 100, ...background });
      const scheduler = new ManualScheduler(['cancel-grace', 'port-close']);
      const manager = makeManager(config, cleanups, fixtureExecutor(config, cleanups), scheduler);
      // The fixture answers the cooperative stop with a final result naming the stop's reason.
      const { id } = manager.spawn({ task: 'FAULT:finish_on_cancel', label: kind });
      await startedJob(manager, id);
      expect(scheduler.log.filter((tag) => tag.jobId === id && (tag.kind === 'timeout' || tag.kind === 'budget'))).toEqual([{ jobId: id, kind }]);
      scheduler.fire(scheduler.find(kind, id)[0] as number);
      const record = await ended(manager, id);
      expect(record.resultText).toBe(`fixture finished on ${kind}`);
    }
  });

  it("does not count queue time: a queued job's timeout is armed only once it has started", async (context) => {
    const cleanups = cleanupOf(context);
    const root = await makeWorkspace(cleanups);
    const config = makeConfig(undefined, root, { maxConcurrent: 1, cancelGraceMs: 100, budget: { maxWallclockMinutes: 60 } });
    const scheduler = new ManualScheduler(['cancel-grace', 'port-close']);
    const manager = makeManager(config, cleanups, fixtureExecutor(config, cleanups), scheduler);
    // What each job's state was when its timeout was armed, in the order they were armed.
    const armed: Array<{ jobId: string; state: string | undefined; others: string[] }> = [];
    scheduler.onSet = (tag) => {
      if (tag.kind === 'timeout')
        armed.push({
          jobId: tag.jobId,
          state: manager.get(tag.jobId)?.state,
          others: manager
            .jobs()
            .filter((j) => j.id !== tag.jobId)
            .map((j) => j.state),
        });
    };
    const a = manager.spawn({ task: 'FAULT:slow:50', label: 'a' });
    const b = manager.spawn({ task: 'FAULT:slow:50', label: 'b' });
    const [ra, rb] = await Promise.all([ended(manager, a.id), ended(manager, b.id)]);
    expect(ra.status).toBe('ok');
    expect(rb.status).toBe('ok');
    // Armed at start, not at spawn: a's while b waited in the queue, b's only after a had ended.
    expect(armed).toEqual([
      { jobId: a.id, state: 'running', others: ['queued'] },
      { jobId: b.id, state: 'running', others: ['ended'] },
    ]);
  });
});

describe.concurrent('BackgroundManager: drain', () => {
  it('delivers each ended job exactly once and records the turn', async (context) => {
    const cleanups = cleanupOf(context);
    const root = await makeWorkspace(cleanups);
    const config = makeConfig(undefined, root);
    const manager = makeManager(config, cleanups, fixtureExecutor(config, cleanups));
    const ids = [1, 2, 3].map((i) => manager.spawn({ task: `FAULT:slow:${i * 20}`, label: `d${i}` }).id);
    expect(new Deliveries(manager).drain(0)).toEqual([]); // nothing has ended yet
    await manager.onIdle();

    const first = new Deliveries(manager).drain(1);
    expect(first.map((r) => r.id).sort()).toEqual([...ids].sort());
    expect(first.every((r) => r.deliveredInTurn === 1)).toBe(true);
    // Later turns get nothing: over all drains, each job was handed over exactly once.
    const later = [...new Deliveries(manager).drain(2), ...new Deliveries(manager).drain(3)];
    expect(later).toEqual([]);
    for (const id of ids) expect(manager.get(id)?.deliveredInTurn).toBe(1);
  });
});

// Alone, after the groups above: a child process must exit by itself within a 30 s bound.
describe('BackgroundManager: close', () => {
  it('stops intake, cancels queued and running jobs, reports them, and leaves no thread', async (context) => {
    const cleanups = cleanupOf(context);
    const root = await makeWorkspace(cleanups);
    const config = makeConfig(undefined, root, { maxConcurrent: 1, cancelGraceMs: 100 });
    const executor = fixtureExecutor(config, cleanups);
    const manager = makeManager(config, cleanups, executor);
    const running = manager.spawn({ task: 'FAULT:slow:60000', label: 'running' });
    const queued = [manager.spawn({ task: 'FAULT:slow:10 q1', label: 'q1' }), manager.spawn({ task: 'FAULT:slow:10 q2', label: 'q2' })];
    await startedJob(manager, running.id);
    expect(executor.threadCount()).toBeGreaterThan(0);

    const report = await manager.close({ timeoutMs: 5_000 });
    expect(report.cancelled.sort()).toEqual([running.id, ...queued.map((q) => q.id)].sort());
    expect(report.stragglers).toEqual([]);
    expect(manager.closed).toBe(true);
    expect(() => manager.spawn({ task: 'late', label: 'late' })).toThrow(expect.objectContaining({ code: 'MANAGER_CLOSED' }));

    const byId = new Map(manager.jobs().map((r) => [r.id, r]));
    expect(byId.get(running.id)?.status).toBe('cancelled');
    expect(byId.get(running.id)?.endedBy).toBe('hard');
    for (const q of queued) {
      expect(byId.get(q.id)?.status).toBe('cancelled');
      expect(byId.get(q.id)?.endedBy).toBe('queue');
      expect(byId.get(q.id)?.startedAt).toBeUndefined();
    }
    expect(manager.pending).toBe(0);
    expect(executor.threadCount()).toBe(0);
    // A second close returns the same promise and the same report; destroy() too.
    expect(manager.close()).toBe(manager.close());
    await expect(manager.close()).resolves.toBe(report);
    await expect(manager.destroy()).resolves.toBe(report);
  });

  it('leaves no handle behind: a process that closes its manager (one job still running) exits on its own', async (context) => {
    const cleanups = cleanupOf(context);
    const root = await makeWorkspace(cleanups);
    const dist = new URL('../../../dist/', import.meta.url).href;
    // No process.exit: the child must end because nothing (thread, socket, timer) keeps it alive.
    const script = `
      import { BackgroundManager } from '${dist}index.js';
      import { parseConfig } from '${dist}protocol.js';
      import { startSimServer } from '${dist}sim/index.js';
      const sim = await startSimServer();
      const config = parseConfig({ workspaceRoot: process.env.FORKPOOL_TEST_ROOT, baseUrl: sim.url, apiKey: 'k' });
      const manager = new BackgroundManager({ config });
      manager.spawn({ task: ${JSON.stringify(RESEARCH_TASK)}, label: 'one' });
      manager.spawn({ task: ${JSON.stringify(RESEARCH_TASK)}, label: 'two' });
      await manager.onIdle();
      // A third job is mid-request (and its thread busy) when close() runs.
      sim.setOptions({ latencyMs: 60_000 });
      const started = new Promise((resolve) => manager.on('started', resolve));
      manager.spawn({ task: ${JSON.stringify(RESEARCH_TASK)}, label: 'three' });
      await started;
      const report = await manager.close({ timeoutMs: 5_000 });
      await sim.close();
      console.log(JSON.stringify({ statuses: manager.jobs().map((j) => j.status), report, threads: manager.executor.threadCount() }));
    `;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      env: { ...process.env, FORKPOOL_TEST_ROOT: root },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    let timer: NodeJS.Timeout | undefined;
    const hung = new Promise<'hung'>((resolve) => (timer = setTimeout(() => resolve('hung'), 30_000)));
    cleanups.add(() => {
      clearTimeout(timer);
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    });

    const outcome = await Promise.race([exited, hung]);
    expect(outcome, `child did not exit on its own; stderr: ${stderr}`).toBe(0);
    const summary = JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}') as { statuses: string[]; report: unknown; threads: number };
    expect(summary.statuses).toEqual(['ok', 'ok', 'cancelled']);
    expect(summary.report).toEqual({ cancelled: ['bg-3'], stragglers: [] });
    expect(summary.threads).toBe(0);
  });
});
