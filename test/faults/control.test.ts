/**
 * Control faults (issue 4, items 3 and 10–13), only what test/manager.test.ts and
 * test/cli.test.ts do not already cover: the wall-clock timeout aborting the HTTP call and the
 * tool in flight (no socket, process or thread left), a tool that throws or hangs, cancel
 * while a job is starting and through the parent's tool, a job that finishes within the grace
 * period, SIGTERM/SIGINT to `run` and `fanout` with jobs in flight, and close() over a job that
 * ignores the cooperative cancel. Real pool, real workers, the sim on loopback; processes and
 * sockets are checked in /proc and the host's active handles, not by sleeping.
 */
import { realpathSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { AgentSession } from '../../src/main/session/agent-session.js';
import type { PiscinaExecutor } from '../../src/main/executors/piscina-executor.js';
import type { FaultSpec } from '../../src/sim/index.js';
import {
  describeResult,
  ended,
  fixtureExecutor,
  HAS_PROC,
  isAlive,
  liveProcesses,
  makeConfig,
  makeManager,
  makeWorkspace,
  ManualScheduler,
  openTcpSockets,
  parseJsonLines,
  recordEvents,
  requireBuiltCli,
  RESEARCH_TASK,
  runOneJob,
  spawnCli,
  startedJob,
  startSim,
  toolMessagesOf,
  uniqueMarker,
  cleanupOf,
  waitFor,
  watchManager,
} from '../helpers/index.js';

requireBuiltCli();
beforeAll(async () => {
  if (!HAS_PROC) throw new Error('these tests read /proc (Linux)');
});

const ANSWER = 'Done.\n<result status="ok" files_touched=""/>';
/**
 * The job timeout held in the test's hand (the other timers run for real): it fires when the
 * test says the scenario is in place, however slow the machine is. A run arms one deadline, the
 * earlier of its timeout and its wall-clock budget (Attempt.armDeadline): these tests' configs
 * put the budget past the timeout ({@link LONG_BUDGET}).
 */
function heldTimeout(): ManualScheduler {
  return new ManualScheduler(['cancel-grace', 'port-close']);
}

const LONG_BUDGET = { maxWallclockMinutes: 60 };

/** Fires job `id`'s timeout now; fails if none is armed. */
function fireTimeout(scheduler: ManualScheduler, id: string): void {
  const [timer] = scheduler.find('timeout', id);
  if (timer === undefined) throw new Error(`no timeout armed for ${id}`);
  scheduler.fire(timer);
}

/** Every request from number `from` on hangs before its headers. */
const hangFrom = (from: number): Record<number, FaultSpec> =>
  Object.fromEntries(Array.from({ length: 40 }, (_, i) => [from + i, { kind: 'hang_before_headers' as const }]));

// Each test has its own sim, pool, workspace and cleanup list (cleanupOf). These two run alone:
// the first counts this process's TCP sockets. The groups below run their tests side by side.
describe('the wall-clock timeout (item 10)', () => {
  it('aborts the HTTP call in flight: the connection closes, no thread is left after close', async (context) => {
    const cleanups = cleanupOf(context);
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups, { latencyMs: 60_000 });
    const config = makeConfig(sim, root, { maxConcurrent: 1, cancelGraceMs: 60_000, budget: LONG_BUDGET }, { requestTimeoutMs: 120_000 });
    const scheduler = heldTimeout();
    const manager = makeManager(config, cleanups, undefined, scheduler);
    const executor = manager.executor as PiscinaExecutor;
    const baseline = openTcpSockets();
    const { id } = manager.spawn({ task: RESEARCH_TASK, label: 'slow model' });
    await waitFor(() => sim.requests.length === 1, 'the model request');
    // The sim's side of the job's connection is a socket of this thread.
    expect(openTcpSockets()).toBeGreaterThan(baseline);

    fireTimeout(scheduler, id);
    const record = await ended(manager, id);
    expect(record.status).toBe('timed_out');
    // Ended by the cooperative cancel: the HTTP call was aborted, no hard stop was needed.
    expect(record.endedBy).toBe('cooperative');
    expect(record.stopReason).toBe('aborted');
    await waitFor(() => openTcpSockets() === baseline, "the sim's side of the aborted connection to close");
    expect(sim.requests).toHaveLength(1);
    expect(executor.threadCount()).toBe(executor.minThreads);
    await manager.close();
    expect(executor.threadCount()).toBe(0);
  });

  it('aborts the tool in flight: a bash `sleep` running at the deadline is killed, no process left', async (context) => {
    const cleanups = cleanupOf(context);
    const root = realpathSync(await makeWorkspace(cleanups));
    const sleep = `sleep 30.${uniqueMarker()}`;
    const sim = await startSim(cleanups, {
      script: [{ toolCalls: [{ name: 'bash', arguments: { command: `${sleep}; echo never` } }] }, { content: 'unused' }],
    });
    const config = makeConfig(sim, root, { maxConcurrent: 1, cancelGraceMs: 60_000, budget: LONG_BUDGET }, { grantedTools: ['bash'] });
    const scheduler = heldTimeout();
    const manager = makeManager(config, cleanups, undefined, scheduler);
    const { id } = manager.spawn({ task: 'Sleep a while.', label: 'sleeper' });
    await waitFor(() => liveProcesses({ cmdline: sleep }).length > 0, 'the sleep to run');
    fireTimeout(scheduler, id);

    const record = await ended(manager, id);
    expect(record.status).toBe('timed_out');
    expect(record.endedBy).toBe('cooperative');
    await waitFor(() => liveProcesses({ cmdline: sleep }).length === 0, 'the sleep and its shell to be gone');
    expect(liveProcesses({ cwdUnder: root })).toEqual([]);
    // The loop stopped at the deadline: no further model request carried the tool's result.
    expect(sim.requests).toHaveLength(1);
  });
});

describe.concurrent('tool faults (item 3)', () => {
  it("a tool that throws: its error comes back to the model as that call's result; the job ends ok", async (context) => {
    const cleanups = cleanupOf(context);
    const { record, sim } = await runOneJob(cleanups, {
      sim: { script: [{ toolCalls: [{ name: 'read_file', arguments: { path: 'no/such/file.ts' } }] }, { content: ANSWER }] },
    });
    expect(record.status).toBe('ok');
    expect(toolMessagesOf(sim.requests[1]?.body)).toEqual([expect.stringMatching(/^Error: .*no\/such\/file\.ts/)]);
  });

  it("a tool that hangs: its own timeout ends it and comes back as that call's result; the process is gone; the job ends ok", async (context) => {
    const cleanups = cleanupOf(context);
    const sleep = `sleep 30.${uniqueMarker()}`;
    const { record, sim } = await runOneJob(cleanups, {
      sim: { script: [{ toolCalls: [{ name: 'bash', arguments: { command: sleep } }] }, { content: ANSWER }] },
      // The generic tool timeout, well below bash's own 30 s.
      config: { grantedTools: ['bash'], toolLimits: { toolTimeoutMs: 500 } },
    });
    expect(record.status).toBe('ok');
    expect(toolMessagesOf(sim.requests[1]?.body)).toEqual(['Error: tool bash timed out after 500 ms']);
    await waitFor(() => liveProcesses({ cmdline: sleep }).length === 0, 'the hung sleep to be gone');
  });
});

describe.concurrent('cancel (item 11; queued, running, twice and unknown id are in test/manager.test.ts)', () => {
  it('cancel while starting (handed to a worker, not yet started): it ends once, cooperatively, as cancelled', async (context) => {
    const cleanups = cleanupOf(context);
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups, { latencyMs: 60_000 });
    const manager = makeManager(makeConfig(sim, root, { maxConcurrent: 1, cancelGraceMs: 10_000 }), cleanups);
    const log = recordEvents(manager);
    const { id } = manager.spawn({ task: RESEARCH_TASK, label: 'starting' });
    // Launched at the next microtask; its worker has not said `started` yet.
    await Promise.resolve();
    expect(manager.cancel(id).state).toBe('queued');
    const record = await ended(manager, id);
    expect(record.status).toBe('cancelled');
    expect(record.endedBy).toBe('cooperative');
    await manager.onIdle();
    expect(log.filter((e) => e.type === 'done' && e.id === id)).toHaveLength(1);
    expect(manager.pending).toBe(0);
  });

  it.for(['cancel', 'timeout'] as const)('a job that finishes within the grace period after a %s keeps its real status', async (stop, context) => {
    const cleanups = cleanupOf(context);
    const root = await makeWorkspace(cleanups);
    const config = makeConfig(undefined, root, { maxConcurrent: 1, budget: LONG_BUDGET });
    // Every job timer in the test's hand: the grace period never runs out on its own.
    const scheduler = new ManualScheduler(['port-close']);
    const manager = makeManager(config, cleanups, fixtureExecutor(config, cleanups), scheduler);
    // The fixture answers the cooperative stop with its real, final result (not `aborted`).
    const { id } = manager.spawn({ task: 'FAULT:finish_on_cancel', label: 'finisher' });
    await startedJob(manager, id);
    if (stop === 'cancel') manager.cancel(id);
    else fireTimeout(scheduler, id);
    // The stop was asked and its grace period is running when the result arrives.
    expect(scheduler.find('cancel-grace', id)).toHaveLength(1);
    const record = await ended(manager, id);
    expect(record.status).toBe('ok');
    expect(record.endedBy).toBe('completed');
    expect(record.resultText).toBe(`fixture finished on ${stop}`);
  });

  it("an unknown id through the parent's cancel_background_agent tool: a tool error to the model, nothing else changes", async (context) => {
    const cleanups = cleanupOf(context);
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups, {
      script: [{ toolCalls: [{ name: 'cancel_background_agent', arguments: { job_id: 'bg-404' } }] }, { content: 'There was no such job.' }],
    });
    const session = new AgentSession({ config: makeConfig(sim, root) });
    watchManager(session.manager);
    cleanups.add(() => session.close({ timeoutMs: 2_000 }));
    const result = await session.submit('Cancel job bg-404.');
    expect(result.stopReason).toBe('final');
    expect(toolMessagesOf(sim.requests[1]?.body)).toEqual(['Error: no background job with id "bg-404"']);
    expect(session.manager.jobs()).toEqual([]);
  });
});

describe.concurrent('SIGTERM and SIGINT with jobs in flight (item 12)', () => {
  const tasks = [1, 2, 3, 4, 5, 6].map((i) => JSON.stringify({ task: `Where is the retry backoff? (${i})`, label: `job ${i}` })).join('\n');
  const THREE_QUESTIONS = 'Answer these:\n1. Where is the retry backoff implemented?\n2. Where is the LRU cache?\n3. What does the README say?';

  it.for([
    ['SIGTERM', 143],
    ['SIGINT', 130],
  ] as const)('%s to forkpool fanout: bounded stop, exit %i, every result printed as a JSON line, no orphan', async ([signal, code], context) => {
    const cleanups = cleanupOf(context);
    // Requests 1 and 2 each finish a job (whichever asks first); every later request hangs, so
    // two more jobs are in flight and two are queued when the signal comes.
    const sim = await startSim(cleanups, { script: [{ content: ANSWER }, { content: 'Second done.' }], faults: hangFrom(3) });
    const cwd = realpathSync(await makeWorkspace(cleanups));
    writeFileSync(path.join(cwd, 'six.jsonl'), `${tasks}\n`);
    const p = spawnCli(['fanout', '--concurrency', '2', '--base-url', sim.url, 'six.jsonl'], { cwd, cleanup: cleanups });
    const finishedBefore = parseJsonLines(await p.waitForStdout((s) => s.split('\n').filter(Boolean).length >= 2));
    await waitFor(() => sim.requests.length >= 4, 'two more jobs in flight');

    p.child.kill(signal);
    const r = await p.exited;
    expect(r.code, describeResult(r)).toBe(code);
    // Bounded: fanout gives running jobs 2 s, then hard-stops them; the jobs' requests hang for
    // good, so exiting at all (before the helper's 45 s kill) proves the bound was applied.
    expect(r.timedOut).toBe(false);
    const results = parseJsonLines(r.stdout);
    expect(results.map((x) => x.line).sort()).toEqual([1, 2, 3, 4, 5, 6]);
    expect(new Set(results.map((x) => x.id)).size).toBe(6);
    // What finished before the signal is printed as it was; everything else was cancelled.
    expect(finishedBefore.map((x) => x.status)).toEqual(['ok', 'ok']);
    expect(results.slice(0, 2)).toEqual(finishedBefore);
    for (const result of results.slice(2)) expect(result.status).toBe('cancelled');
    expect(r.stderr).toContain(signal);
    expect(isAlive(p.child.pid)).toBe(false);
    expect(liveProcesses({ cwdUnder: cwd })).toEqual([]);
  });

  it.for([
    ['SIGTERM', 143],
    ['SIGINT', 130],
  ] as const)('%s to forkpool run: bounded stop, exit %i, one job_done per job, no orphan', async ([signal, code], context) => {
    const cleanups = cleanupOf(context);
    // Concurrency 1: the first job (3 model calls) finishes within requests 2–5, beside the
    // parent's second call; from request 6 on everything hangs, so a job is in flight.
    const sim = await startSim(cleanups, { faults: hangFrom(6) });
    const cwd = realpathSync(await makeWorkspace(cleanups));
    const p = spawnCli(['run', '--json', '--concurrency', '1', '--base-url', sim.url, THREE_QUESTIONS], { cwd, cleanup: cleanups });
    await p.waitForStdout((s) => s.includes('"type":"job_done"'));
    await waitFor(() => sim.requests.some((req) => req.fault === 'hang_before_headers'), 'a request in flight');

    p.child.kill(signal);
    const r = await p.exited;
    expect(r.code, describeResult(r)).toBe(code);
    expect(r.timedOut).toBe(false);
    const events = parseJsonLines(r.stdout);
    const spawned = events.filter((e) => e.type === 'job_spawned').map((e) => String(e.id));
    const done = events.filter((e) => e.type === 'job_done');
    expect(spawned).toHaveLength(3);
    expect(done.map((e) => String(e.id)).sort()).toEqual([...spawned].sort());
    // At least the first job finished before the signal; whatever had not was cancelled.
    const finished = done.filter((e) => e.status === 'ok' || e.status === 'partial');
    const cancelled = done.filter((e) => e.status === 'cancelled');
    expect(finished.length).toBeGreaterThanOrEqual(1);
    expect(cancelled.length).toBeGreaterThanOrEqual(1);
    expect(finished.length + cancelled.length).toBe(3);
    expect(events.filter((e) => e.type === 'usage')).toHaveLength(1);
    expect(isAlive(p.child.pid)).toBe(false);
    expect(liveProcesses({ cwdUnder: cwd })).toEqual([]);
  });
});

describe.concurrent('close() over a job that ignores the cooperative cancel (item 13)', () => {
  it.for(['thread', 'shared'] as const)(
    '%s isolation: the hard stop ends it within the bound, reported as a straggler, no thread left',
    async (isolation, context) => {
      const cleanups = cleanupOf(context);
      const root = await makeWorkspace(cleanups);
      // A grace period longer than the close bound: only close's own hard stop can end the job.
      const config = makeConfig(undefined, root, { isolation, maxConcurrent: 2, tasksPerThread: 2, threads: 1, closeTimeoutMs: 300 });
      const executor = fixtureExecutor(config, cleanups);
      // The grace timer is in the test's hand and never fires: only close's own hard stop can end the job.
      const scheduler = new ManualScheduler(['port-close']);
      const manager = makeManager(config, cleanups, executor, scheduler);
      const { id } = manager.spawn({ task: 'FAULT:ignore_cancel', label: 'stubborn' });
      await startedJob(manager, id);

      const report = await manager.close();
      // Close asked cooperatively first (a grace timer was armed), and that timer never fired.
      expect(scheduler.log).toContainEqual({ jobId: id, kind: 'cancel-grace' });
      expect(report).toEqual({ cancelled: [id], stragglers: [id] });
      const record = manager.get(id);
      expect(record?.status).toBe('cancelled');
      expect(record?.endedBy).toBe('hard');
      expect(manager.pending).toBe(0);
      expect(executor.threadCount()).toBe(0);
    },
  );
});
