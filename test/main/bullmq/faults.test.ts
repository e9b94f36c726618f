/**
 * The fault campaign of the distributed path (issue 13, section 3): worker processes killed,
 * frozen, poisoned, Redis restarted under running jobs. Real redis-server, real `forkpool
 * worker` processes, real manager. Each test asserts what must hold whatever the timing: one
 * ending and one delivery per job, attempts counted, a stale run never running to completion.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { openSqliteLedger } from '../../../src/main/ledger/sqlite-store.js';
import type { ForkpoolConfig, ForkpoolConfigInput } from '../../../src/shared/config.js';
import type { SimServer } from '../../../src/sim/index.js';
import { BULLMQ_DEFAULTS } from '../../../src/shared/bullmq-config.js';
import type { BudgetLimits } from '../../../src/shared/budget.js';
import {
  bullManager,
  bullmqOf,
  skipWithoutRedis,
  RESEARCH_TASK,
  ended,
  watchManager,
  parseJsonLines,
  spawnCli,
  makeConfig,
  makeWorkspace,
  nextEvent,
  recordEvents,
  startRedis,
  startTcpProxy,
  startedJob,
  startSim,
  startWorker,
  cleanupOf,
  waitFor,
  type Cleanup,
  type TestWorker,
  drainedIds,
  runsOf,
} from '../../helpers/index.js';
import { BackgroundManager, engineOf, type ManagerEvents } from '../../../src/main/jobs/manager.js';
import { Deliveries } from '../../../src/main/delivery/deliveries.js';

/** The BullMQ job id of a job's launch under a manager's bullmq executor. */
function bullIdOf(manager: BackgroundManager, id: string, launch: number): string {
  return bullmqOf(manager).bullId(id, launch, engineOf(manager).owner);
}
// The default lock: the failover bound below is the one the README states for it.
const LOCK_MS = BULLMQ_DEFAULTS.lockMs;
// A shorter lock where a test only needs a lock to run out (a dead or frozen holder), not the
// README's bound: each expiry then costs about 4.5 s instead of 9. Long enough that a loaded
// machine never loses a live worker's lock (it is renewed every 1.5 s).
const SHORT_LOCK_MS = 3_000;

function bullConfig(sim: SimServer, workspace: string, redisUrl: string, extra: Partial<ForkpoolConfigInput> = {}): ForkpoolConfig {
  return makeConfig(
    sim,
    workspace,
    { maxConcurrent: 8, cancelGraceMs: 2_000 },
    { executor: 'bullmq', redisUrl, bullmq: { queue: 'fp-faults', lockMs: LOCK_MS, pollMs: 500 }, ...extra },
  );
}

/** `count` workers whose own config allows the sim and runs jobs in `workspace`. */
async function workersOn(
  cleanup: Cleanup,
  redisUrl: string,
  count: number,
  sim: SimServer,
  workspace: string,
  options: { maxStalls?: number; lockMs?: number; config?: Partial<ForkpoolConfigInput> } = {},
): Promise<TestWorker[]> {
  const { config: extra, lockMs = LOCK_MS, ...rest } = options;
  const config = { baseUrl: sim.url, workspaceRoot: workspace, ...extra };
  return Promise.all(Array.from({ length: count }, () => startWorker(cleanup, redisUrl, { queue: 'fp-faults', lockMs, concurrency: 2, config, ...rest })));
}

/** The worker process holding a job's run now (BullMQ's `processedBy` is the worker's name). */
async function holderOf(manager: BackgroundManager, workers: TestWorker[], id: string, launch = 1): Promise<TestWorker> {
  const queue = bullmqOf(manager).queue;
  let holder: TestWorker | undefined;
  for (let tries = 0; !holder && tries < 400; tries++) {
    const job = await queue.getJob(bullIdOf(manager, id, launch));
    holder = workers.find((w) => w.name === job?.processedBy);
    if (!holder) await new Promise((resolve) => setTimeout(resolve, 50));
  }
  if (!holder)
    throw new Error(
      `no worker holds ${id} (processedBy ${(await queue.getJob(bullIdOf(manager, id, launch)))?.processedBy}; workers ${workers.map((w) => w.name).join(', ')})`,
    );
  return holder;
}

/** The `run-ended` reports of every worker, once there are at least `count` of them. */
function runsReported(workers: TestWorker[], count: number): Promise<Array<Record<string, unknown>>> {
  const all = () => workers.flatMap((w) => w.runsEnded());
  return waitFor(() => all().length >= count && all(), "every run's report");
}

function startedAgain(manager: BackgroundManager, id: string): Promise<unknown> {
  if ((manager.get(id)?.attempts ?? 0) >= 2) return Promise.resolve();
  return nextEvent<ManagerEvents, 'started'>(manager, 'started', (r) => r.id === id && r.attempts >= 2);
}

/**
 * Two workers on a fresh Redis, one research job running on one of them: the start of every
 * fault below that strikes the worker holding a job.
 */
async function jobOnAWorker(cleanup: Cleanup, label: string, budget?: BudgetLimits, lockMs: number = LOCK_MS) {
  const redis = await startRedis(cleanup);
  const sim = await startSim(cleanup, { latencyMs: 1_000 });
  const workspace = await makeWorkspace(cleanup);
  const workers = await workersOn(cleanup, redis.url, 2, sim, workspace, { lockMs });
  const manager = await bullManager(bullConfig(sim, workspace, redis.url), cleanup);
  const events = recordEvents(manager);
  const { id } = manager.spawn({ task: RESEARCH_TASK, label, ...(budget ? { budget } : {}) });
  await nextEvent<ManagerEvents, 'started'>(manager, 'started', (r) => r.id === id);
  const holder = await holderOf(manager, workers, id);
  return { manager, events, id, holder, again: startedAgain(manager, id) };
}

// Worker processes start, die and lose locks on purpose: slow on a loaded machine, never hung.
// The tests run side by side (`concurrent`; each its own Redis, sim, workers and cleanupOf list):
// their time is lock expiries, stall checks and model latency, little CPU.
describe.skipIf(skipWithoutRedis())('bullmq fault campaign', { timeout: 180_000, concurrent: true }, () => {
  it('a worker SIGTERMed mid-job hands its job back: another worker completes it and that completion is accepted (ok, the real result), no attempt spent', async (context) => {
    const cleanup = cleanupOf(context);
    // A refused completion would leave the job waiting for its wall clock: a short one makes
    // that bug end the job `partial` here instead of hanging the test.
    const { manager, events, id, holder } = await jobOnAWorker(cleanup, 'handed back', { maxWallclockMinutes: 1 });
    process.kill(holder.pid, 'SIGTERM');
    const record = await ended(manager, id);
    expect(record).toMatchObject({ status: 'ok', endedBy: 'completed' });
    expect(record.resultText?.length ?? 0).toBeGreaterThan(0);
    expect(holder.runsEnded().find((r) => r.jobId === id)).toMatchObject({ evicted: true });
    // Handed back, not failed: the one attempt BullMQ counted is the run that completed it.
    const bullJob = await bullmqOf(manager).queue.getJob(bullIdOf(manager, id, 1));
    expect(bullJob?.attemptsMade).toBe(1);
    expect(bullJob?.failedReason).toBeFalsy();
    expect(events.filter((e) => e.type === 'done' && e.id === id)).toHaveLength(1);
    expect(new Deliveries(manager).drain(1).map((r) => r.id)).toEqual([id]);
  });

  it('a poison job that kills every worker it lands on is failed after N stalls with that reason, not looped', async (context) => {
    const cleanup = cleanupOf(context);
    const redis = await startRedis(cleanup);
    // Every model answer is a bash call that kills the worker process running the job.
    const kill = { toolCalls: [{ name: 'bash', arguments: { command: 'kill -9 $PPID' } }] };
    const sim = await startSim(cleanup, { script: [kill, kill, kill, kill] });
    const workspace = await makeWorkspace(cleanup);
    // The grant and the sandbox are the workers' own (a job can only narrow them).
    const workers = await workersOn(cleanup, redis.url, 3, sim, workspace, {
      maxStalls: 1,
      lockMs: SHORT_LOCK_MS,
      config: { grantedTools: ['bash'], sandbox: 'none' },
    });
    const manager = await bullManager(bullConfig(sim, workspace, redis.url, { grantedTools: ['bash'] }), cleanup);
    const { id } = manager.spawn({ task: 'Run the command.', label: 'poison' });
    const record = await ended(manager, id);
    expect(record).toMatchObject({ status: 'failed', endedBy: 'crash', attempts: 2 });
    expect(record.error?.message).toMatch(/stalled more than allowable limit/);
    // Two runs (maxStalls 1), two dead workers, one left standing; no third run.
    expect(sim.requests).toHaveLength(2);
    const alive = workers.filter((w) => w.cli.child.exitCode === null && w.cli.child.signalCode === null);
    expect(alive).toHaveLength(1);
  });

  it("a worker's event loop frozen past its lock: the job runs elsewhere, the stale run is aborted when it wakes, one result", async (context) => {
    const cleanup = cleanupOf(context);
    const { manager, events, id, holder, again } = await jobOnAWorker(cleanup, 'outlives a frozen worker', undefined, SHORT_LOCK_MS);
    process.kill(holder.pid, 'SIGSTOP');
    cleanup.add(() => holder.cli.child.kill('SIGCONT'));
    await again;
    // Wake it while the job's new run is still going: its lock renewal fails and must abort its run.
    process.kill(holder.pid, 'SIGCONT');
    const record = await ended(manager, id);
    expect(record).toMatchObject({ status: 'ok', attempts: 2 });
    const staleRun = await waitFor(() => holder.runsEnded().find((r) => r.bullId === bullIdOf(manager, id, 1)), "the stale run's report");
    // Aborted (its thread was stopped), not run to completion a second time.
    expect(staleRun).toMatchObject({ run: 1, lockLost: true, end: 'lost' });
    expect(events.filter((e) => e.type === 'done' && e.id === id)).toHaveLength(1);
    expect(new Deliveries(manager).drain(1).map((r) => r.id)).toEqual([id]);
  });

  it('the network between the producer and Redis cut mid-run, then back: every job ends once, none lost, none run twice', async (context) => {
    const cleanup = cleanupOf(context);
    const redis = await startRedis(cleanup);
    const proxy = await startTcpProxy(cleanup, redis.port);
    const sim = await startSim(cleanup, { latencyMs: 500 });
    const workspace = await makeWorkspace(cleanup);
    // The workers reach Redis directly; only the producer is behind the proxy.
    const workers = await workersOn(cleanup, redis.url, 2, sim, workspace);
    const manager = await bullManager(bullConfig(sim, workspace, `redis://127.0.0.1:${proxy.port}`), cleanup);
    const events = recordEvents(manager);
    const ids = Array.from({ length: 4 }, (_, i) => manager.spawn({ task: RESEARCH_TASK, label: `cut off ${i}` }).id);
    await Promise.all(ids.map((id) => startedJob(manager, id)));
    proxy.cut();
    // Results arrive in Redis while the producer cannot hear them.
    await waitFor(() => workers.flatMap((w) => w.runsEnded()).length >= 2, 'runs ending while the producer is cut off', { timeoutMs: 90_000 });
    proxy.restore();
    const records = await Promise.all(ids.map((id) => ended(manager, id)));
    for (const record of records) expect(record).toMatchObject({ status: 'ok', endedBy: 'completed', attempts: 1 });
    for (const id of ids) expect(events.filter((e) => e.type === 'done' && e.id === id)).toHaveLength(1);
    expect(drainedIds(manager, 1)).toEqual([...ids].sort());
    const runs = await runsReported(workers, ids.length);
    expect(runs.map((r) => r.bullId).sort()).toEqual(ids.map((id) => bullIdOf(manager, id, 1)).sort());
  });

  it('Redis with persistence killed and restarted mid-run: every job ends once, none lost, none run twice', async (context) => {
    const cleanup = cleanupOf(context);
    const redis = await startRedis(cleanup, { persist: true });
    const sim = await startSim(cleanup, { latencyMs: 500 });
    const workspace = await makeWorkspace(cleanup);
    const workers = await workersOn(cleanup, redis.url, 2, sim, workspace);
    const manager = await bullManager(bullConfig(sim, workspace, redis.url), cleanup);
    const events = recordEvents(manager);
    const ids = Array.from({ length: 4 }, (_, i) => manager.spawn({ task: RESEARCH_TASK, label: `kept ${i}` }).id);
    await Promise.all(ids.map((id) => startedJob(manager, id)));
    await redis.restart();
    const records = await Promise.all(ids.map((id) => ended(manager, id)));
    for (const record of records) expect(record).toMatchObject({ status: 'ok' });
    for (const id of ids) expect(events.filter((e) => e.type === 'done' && e.id === id)).toHaveLength(1);
    expect(drainedIds(manager, 1)).toEqual([...ids].sort());
    // Redis kept the jobs: the runs went on (or were re-run once after a lost lock), never queued anew by the producer.
    const runs = await runsReported(workers, ids.length);
    expect(new Set(runs.map((r) => r.bullId))).toEqual(new Set(ids.map((id) => bullIdOf(manager, id, 1))));
    expect(runs.filter((r) => r.end === 'done' && !r.lockLost && !r.evicted)).toHaveLength(ids.length);
  });

  it('Redis restarted (empty) mid-run: every job resumes and ends once, none lost', async (context) => {
    const cleanup = cleanupOf(context);
    const redis = await startRedis(cleanup);
    const sim = await startSim(cleanup, { latencyMs: 800 });
    const workspace = await makeWorkspace(cleanup);
    await workersOn(cleanup, redis.url, 2, sim, workspace);
    const manager = await bullManager(bullConfig(sim, workspace, redis.url), cleanup);
    const events = recordEvents(manager);
    const ids = Array.from({ length: 4 }, (_, i) => manager.spawn({ task: RESEARCH_TASK, label: `through a restart ${i}` }).id);
    await waitFor(() => ids.every((id) => manager.get(id)?.state === 'running'), 'every job running', { timeoutMs: 60_000 });
    await redis.restart();
    const records = await Promise.all(ids.map((id) => ended(manager, id)));
    for (const record of records) expect(record).toMatchObject({ status: 'ok', endedBy: 'completed' });
    for (const id of ids) expect(events.filter((e) => e.type === 'done' && e.id === id)).toHaveLength(1);
    expect(drainedIds(manager, 1)).toEqual([...ids].sort());
  });
});

describe.skipIf(skipWithoutRedis())('bullmq: the main process restarted while workers keep running', { timeout: 180_000, concurrent: true }, () => {
  it('results wait in Redis; the restarted main process launching the same jobs takes them over and delivers each once, nothing runs twice', async (context) => {
    const cleanup = cleanupOf(context);
    const redis = await startRedis(cleanup);
    const sim = await startSim(cleanup, { latencyMs: 700 });
    const workspace = await makeWorkspace(cleanup);
    const workers = await workersOn(cleanup, redis.url, 2, sim, workspace);
    // The restarted process takes over the first one's launches: the same namespace names them.
    const config = bullConfig(sim, workspace, redis.url, { bullmq: { queue: 'fp-faults', lockMs: LOCK_MS, pollMs: 500, namespace: 'main-a' } });
    const tasks = Array.from({ length: 4 }, (_, i) => ({ task: RESEARCH_TASK, label: `outlives main ${i}` }));
    const first = spawnCli([], {
      script: 'test/fixtures/bullmq-main-child.mjs',
      cleanup,
      timeoutMs: 120_000,
      env: { FORKPOOL_TEST_CONFIG: JSON.stringify(config), FORKPOOL_TEST_TASKS: JSON.stringify(tasks) },
    });
    await first.waitForStdout((out) => out.split('\n').filter((l) => l.includes('"started"')).length === 4);
    first.child.kill('SIGKILL');
    await first.exited;
    const ids = parseJsonLines(first.stdout())
      .filter((l) => l.type === 'spawned')
      .map((l) => l.id as string);
    // Some runs finish while no main process is there: their results wait in Redis.
    await waitFor(() => workers.flatMap((w) => w.runsEnded()).length >= 1, 'a run to end with no main process', { timeoutMs: 60_000 });
    // The restarted main process launches the same jobs (same ids, same launch: same BullMQ jobs).
    const manager = await bullManager(config, cleanup);
    const events = recordEvents(manager);
    const again = tasks.map((task) => manager.spawn(task).id);
    expect(again).toEqual(ids);
    const records = await Promise.all(ids.map((id) => ended(manager, id)));
    for (const record of records) expect(record).toMatchObject({ status: 'ok', endedBy: 'completed', attempts: 1 });
    for (const id of ids) expect(events.filter((e) => e.type === 'done' && e.id === id)).toHaveLength(1);
    expect(drainedIds(manager, 1)).toEqual([...ids].sort());
    // Taken over, not run again: one run per job across the workers.
    const runs = await runsReported(workers, ids.length);
    expect(runs.map((r) => r.bullId).sort()).toEqual(ids.map((id) => bullIdOf(manager, id, 1)).sort());
  });
});

describe.skipIf(skipWithoutRedis())(
  'bullmq with the durable ledger: the main process restarted while workers keep running',
  { timeout: 180_000, concurrent: true },
  () => {
    it('the reopened ledger re-launches the interrupted jobs, which take over their runs and waiting results: each delivered once, none run twice', async (context) => {
      const cleanup = cleanupOf(context);
      const redis = await startRedis(cleanup);
      const sim = await startSim(cleanup, { latencyMs: 700 });
      const workspace = await makeWorkspace(cleanup);
      const workers = await workersOn(cleanup, redis.url, 2, sim, workspace);
      const ledger = path.join(mkdtempSync(path.join(os.tmpdir(), 'forkpool-bullmq-ledger-')), 'forkpool.db');
      cleanup.add(() => rmSync(path.dirname(ledger), { recursive: true, force: true }));
      // No namespace given: it follows the ledger file and scope, the same after the restart.
      const config = bullConfig(sim, workspace, redis.url, { ledger: { path: ledger } });
      const tasks = Array.from({ length: 4 }, (_, i) => ({ task: RESEARCH_TASK, label: `durable ${i}` }));
      const first = spawnCli([], {
        script: 'test/fixtures/bullmq-main-child.mjs',
        cleanup,
        timeoutMs: 120_000,
        env: { FORKPOOL_TEST_CONFIG: JSON.stringify(config), FORKPOOL_TEST_TASKS: JSON.stringify(tasks), FORKPOOL_TEST_LEDGER: ledger },
      });
      await first.waitForStdout((out) => out.split('\n').filter((l) => l.includes('"started"')).length === 4);
      first.child.kill('SIGKILL');
      await first.exited;
      const ids = parseJsonLines(first.stdout())
        .filter((l) => l.type === 'spawned')
        .map((l) => l.id as string);
      await waitFor(() => workers.flatMap((w) => w.runsEnded()).length >= 1, 'a run to end with no main process', { timeoutMs: 60_000 });
      const store = openSqliteLedger(ledger).jobs('main');
      const manager = watchManager(new BackgroundManager({ config, store, closeExecutor: true }));
      cleanup.add(() => manager.close({ timeoutMs: 2_000 }));
      const events = recordEvents(manager);
      expect(manager.recovery?.rerun.sort()).toEqual([...ids].sort());
      const records = await Promise.all(ids.map((id) => ended(manager, id)));
      for (const record of records) expect(record).toMatchObject({ status: 'ok', endedBy: 'completed' });
      for (const id of ids) expect(events.filter((e) => e.type === 'done' && e.id === id)).toHaveLength(1);
      expect(drainedIds(manager, 1)).toEqual([...ids].sort());
      expect(new Deliveries(manager).drain(2)).toEqual([]);
      const runs = await runsReported(workers, ids.length);
      expect(runs.map((r) => r.bullId).sort()).toEqual(ids.map((id) => bullIdOf(manager, id, 1)).sort());
    });
  },
);

describe.skipIf(skipWithoutRedis())('fanout --executor bullmq --ledger: the producer killed, then --resume', { timeout: 240_000, concurrent: true }, () => {
  it('the resumed fan-out adopts the jobs still queued or running in Redis (ids derived from the ledger): every task runs once and is printed once', async (context) => {
    const cleanup = cleanupOf(context);
    const redis = await startRedis(cleanup);
    const sim = await startSim(cleanup, { latencyMs: 500 });
    const workspace = await makeWorkspace(cleanup);
    const workers = await workersOn(cleanup, redis.url, 2, sim, workspace);
    const dir = mkdtempSync(path.join(os.tmpdir(), 'forkpool-bullmq-fanout-'));
    cleanup.add(() => rmSync(dir, { recursive: true, force: true }));
    const configFile = path.join(dir, 'forkpool.config.json');
    writeFileSync(configFile, JSON.stringify({ executor: 'bullmq', redisUrl: redis.url, bullmq: { queue: 'fp-faults', pollMs: 500 } }));
    const count = 8;
    const tasks = Array.from({ length: count }, (_, i) => JSON.stringify({ task: `Where is the tool loop? (fan ${i + 1}.)`, label: `t${i + 1}` })).join('\n');
    const args = [
      'fanout',
      '-',
      '--executor',
      'bullmq',
      '--config',
      configFile,
      '--base-url',
      sim.url,
      '--workspace',
      workspace,
      '--concurrency',
      '4',
      '--ledger',
      path.join(dir, 'fan.db'),
      '--no-progress',
    ];
    const first = spawnCli(args, { input: tasks, cleanup, timeoutMs: 120_000 });
    await first.waitForStdout((out) => parseJsonLines(out).length >= 1);
    first.child.kill('SIGKILL');
    const printedBefore = parseJsonLines((await first.exited).stdout) as Array<{ line: number }>;
    const resumed = await spawnCli([...args, '--resume'], { input: tasks, cleanup, timeoutMs: 180_000 }).exited;
    expect(resumed.code, resumed.stderr).toBe(0);
    const out = parseJsonLines(resumed.stdout) as Array<{ line: number; status: string; fromLedger?: boolean }>;
    // One reported ending per task: the ones printed before come back from the ledger, marked so.
    expect(out.map((r) => r.line).sort((x, y) => x - y)).toEqual(Array.from({ length: count }, (_, i) => i + 1));
    for (const { line } of printedBefore) expect(out.find((r) => r.line === line)?.fromLedger, `line ${line}`).toBe(true);
    // This task ends partial on the sim (its answer is a summary of what it found), never failed.
    expect(out.filter((r) => r.status !== 'ok' && r.status !== 'partial')).toEqual([]);
    // Adopted, not queued again: each task reached the model as one run (a second run would start over).
    for (let line = 1; line <= count; line++)
      expect(runsOf(sim, `(fan ${line}.)`), `line ${line}; runs: ${workers.flatMap((w) => w.runsEnded().map((r) => String(r.bullId))).join(' ')}`).toBe(1);
  });
});

// Alone, after the groups above: it bounds the failover in wall time (the README's 9 s, plus half).
describe.skipIf(skipWithoutRedis())('bullmq fault campaign: failover time', { timeout: 180_000 }, () => {
  it('a worker SIGKILLed mid-job: another worker runs it again within 10 s (the default lock), one final result, attempt count visible', async (context) => {
    const cleanup = cleanupOf(context);
    const { manager, events, id, holder, again } = await jobOnAWorker(cleanup, 'survives its worker');
    const killedAt = Date.now();
    process.kill(holder.pid, 'SIGKILL');
    await again;
    const rerunAfterMs = Date.now() - killedAt;
    const record = await ended(manager, id);
    expect(record).toMatchObject({ status: 'ok', endedBy: 'completed', attempts: 2 });
    expect(record.notes.join('\n')).toMatch(/run again by the bullmq executor/);
    expect(events.filter((e) => e.type === 'done' && e.id === id)).toHaveLength(1);
    expect(new Deliveries(manager).drain(1).map((r) => r.id)).toEqual([id]);
    // The README's bound (the 6 s lock expires; the next stall check, at most 3 s later,
    // re-queues it): 9 s; with half again for a loaded machine.
    expect(rerunAfterMs).toBeLessThan(14_000);
  });
});
