/**
 * One attempt, one ending, through the real pool: a `done` still in the port when the run
 * settles is read, not lost; a worker that breaks the protocol fails only its job; no child
 * process outlives its job; close() is one promise, destroy() is immediate; result(id) and an
 * AbortSignal on spawn() need no event bookkeeping.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { MessageChannel } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { AgentSession, type SessionEvents } from '../../../src/main/session/agent-session.js';
import { createExecutor } from '../../../src/main/jobs/executor-factory.js';
import type { ExecuteOptions, Executor } from '../../../src/main/executors/executor.js';
import { BackgroundManager, type JobScheduler } from '../../../src/main/jobs/manager.js';
import type { JobTask } from '../../../src/shared/protocol.js';
import {
  cleanupOf,
  type Cleanup,
  RESEARCH_TASK,
  fixtureExecutor,
  makeConfig,
  makeManager,
  makeWorkspace,
  recordEvents,
  startSim,
  startedJob,
  nextEvent,
  skipWithoutBwrap,
} from '../../helpers/index.js';

async function setup(cleanups: Cleanup, background: Parameters<typeof makeConfig>[2] = {}) {
  const root = await makeWorkspace(cleanups);
  const sim = await startSim(cleanups);
  const config = makeConfig(sim, root, { maxConcurrent: 2, cancelGraceMs: 100, ...background });
  return { root, sim, config };
}

/** Pids of live processes whose command line contains `needle` (read from /proc, not ps). */
function processesMatching(needle: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').join(' ');
      const state = readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1]?.[0];
      if (cmdline.includes(needle) && state !== 'Z') found.push(Number(entry));
    } catch {
      // The process ended while we looked.
    }
  }
  return found;
}

/**
 * The processes still matching once SIGKILL has had its effect: a killed process lingers until
 * the kernel has run it to its end and its parent has reaped it, which takes a moment on a
 * loaded machine. Without a kill they live 1,000 s, far past this bound.
 */
async function survivorsAfterKill(needle: string): Promise<number[]> {
  for (let tries = 0; tries < 200; tries++) {
    if (processesMatching(needle).length === 0) return [];
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return processesMatching(needle);
}

/** state, parent and process group of each pid, for a failure message. */
function describeProcesses(pids: number[]): string {
  return pids
    .map((pid) => {
      try {
        const [, rest = ''] = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ');
        const [state, ppid, pgrp] = rest.split(' ');
        return `${pid}: state ${state}, parent ${ppid}, group ${pgrp}`;
      } catch {
        return `${pid}: gone`;
      }
    })
    .join('; ');
}

/** Kills what a failing run of these tests may have left (never part of an assertion). */
function killLeftovers(needle: string): void {
  for (const pid of processesMatching(needle)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
}

/**
 * Runs jobs on a real executor but holds back everything the worker posts until its run has
 * returned, then puts it all in the manager's port and settles the run at once: the manager
 * sees the run settle with `done` still unread in its port (a main thread that was busy).
 */
class HeldPortExecutor implements Executor {
  readonly kind = 'piscina' as const;
  /** `done` messages put in a manager's port in the same tick as their run settled. */
  heldDone = 0;
  constructor(readonly inner: Executor) {}
  get capabilities() {
    return this.inner.capabilities;
  }
  async run(task: JobTask, options: ExecuteOptions): Promise<void> {
    const relay = new MessageChannel();
    const held: unknown[] = [];
    relay.port1.on('message', (message) => held.push(message));
    const closed = new Promise((resolve) => relay.port1.once('close', resolve));
    await this.inner.run({ ...task, port: relay.port2 }, options);
    await closed;
    for (const message of held) task.port.postMessage(message);
    this.heldDone += held.filter((m) => (m as { type?: string }).type === 'done').length;
  }
  threadCount(): number {
    return this.inner.threadCount();
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}

// Each test has its own pool, sim and cleanup list (cleanupOf); the process checks look for
// command lines of their own (`sleep 1017` …): the tests run side by side.
describe.concurrent('a result still in the port when the run settles', () => {
  it('is read before the manager decides the job ended without one', async (context) => {
    const cleanups = cleanupOf(context);
    const { config } = await setup(cleanups, { maxConcurrent: 3 });
    const inner = createExecutor(config);
    // The port-close fallback fires at once (a microtask), before the port's messages are
    // dispatched: only reading the port itself can find the `done`.
    const scheduler: JobScheduler = {
      set(callback, ms, tag) {
        if (tag.kind !== 'port-close') return setTimeout(callback, ms);
        queueMicrotask(callback);
        return undefined;
      },
      clear: (handle) => clearTimeout(handle as NodeJS.Timeout),
    };
    const executor = new HeldPortExecutor(inner);
    const manager = new BackgroundManager({ config, executor, scheduler, closeExecutor: true });
    cleanups.add(() => manager.close());
    const ids = Array.from({ length: 6 }, (_, i) => manager.spawn({ task: `${RESEARCH_TASK} (${i})`, label: `held ${i}` }).id);
    const records = await Promise.all(ids.map((id) => manager.result(id)));
    expect(executor.heldDone).toBe(ids.length);
    expect(records.map((r) => [r.status, r.error?.code])).toEqual(ids.map(() => ['ok', undefined]));
    expect(manager.listenerErrorCount).toBe(0);
  });
});

describe.concurrent('a worker that breaks the protocol', () => {
  it.for([
    ['FAULT:started_twice', /"started" twice/],
    ['FAULT:bad_message', /invalid message/],
    ['FAULT:wrong_job', /bg-someone-else/],
  ] as const)('%s fails that job with PROTOCOL_INVALID; the host carries on', async ([task, why], context) => {
    const cleanups = cleanupOf(context);
    const { config } = await setup(cleanups);
    const manager = makeManager(config, cleanups, fixtureExecutor(config, cleanups));
    const bad = manager.spawn({ task, label: 'rude' });
    const good = manager.spawn({ task: RESEARCH_TASK, label: 'polite' });
    const [badRecord, goodRecord] = await Promise.all([manager.result(bad.id), manager.result(good.id)]);
    expect(badRecord.status).toBe('failed');
    expect(badRecord.error?.code).toBe('PROTOCOL_INVALID');
    expect(badRecord.error?.message).toMatch(why);
    expect(goodRecord.status).toBe('ok');
    expect(manager.listenerErrorCount).toBe(0);
  });
});

describe.concurrent('nothing outlives its job', () => {
  it.for([
    ['a hard stop', 'FAULT:children:1017', (manager: BackgroundManager, id: string) => manager.cancel(id)],
    ['a close() straggler', 'FAULT:children:1018', (manager: BackgroundManager) => void manager.close({ timeoutMs: 50 })],
    ['its thread dying', 'FAULT:children_exit:1019', () => {}],
  ] as const)("%s kills the job's child process group, background children included", async ([_what, task, stop], context) => {
    const cleanups = cleanupOf(context);
    const needle = `sleep ${task.split(':')[2]}`;
    cleanups.add(() => killLeftovers(needle));
    const { config } = await setup(cleanups);
    const manager = makeManager(config, cleanups, fixtureExecutor(config, cleanups));
    const { id } = manager.spawn({ task, label: 'parent of sleepers' });
    await startedJob(manager, id);
    // Both sleeps (the one in the background too) are up before the stop.
    for (let tries = 0; processesMatching(needle).length < 2; tries++) {
      expect(tries).toBeLessThan(500);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    stop(manager, id);
    const record = await manager.result(id);
    expect(record.state).toBe('ended');
    expect(await survivorsAfterKill(needle)).toEqual([]);
  });
});

describe.concurrent('a job that ends normally', () => {
  it('leaves no process it started behind, even one that left its group and was never reported', async (context) => {
    const cleanups = cleanupOf(context);
    const needle = 'sleep 1027';
    cleanups.add(() => killLeftovers(needle));
    const { config } = await setup(cleanups);
    const manager = makeManager(config, cleanups, fixtureExecutor(config, cleanups));
    const record = await manager.result(manager.spawn({ task: 'FAULT:orphan:1027', label: 'leaves a sleeper' }).id);
    expect([record.status, record.resultText]).toEqual(['ok', 'left a sleeper behind']);
    const left = await survivorsAfterKill(needle);
    expect(left, describeProcesses(left)).toEqual([]);
  });
});

describe.concurrent('lifecycle calls a program can rely on', () => {
  it('result(id) resolves with the final record, at once when already ended; an unknown id rejects', async (context) => {
    const cleanups = cleanupOf(context);
    const { config } = await setup(cleanups);
    const manager = makeManager(config, cleanups);
    const { id } = manager.spawn({ task: RESEARCH_TASK, label: 'awaited' });
    const record = await manager.result(id);
    expect(record).toMatchObject({ id, state: 'ended', status: 'ok' });
    await expect(manager.result(id)).resolves.toEqual(record);
    await expect(manager.result('bg-404')).rejects.toMatchObject({ code: 'JOB_UNKNOWN' });
  });

  it('an AbortSignal on spawn() cancels the job, queued or running; an aborted one is refused', async (context) => {
    const cleanups = cleanupOf(context);
    const { config } = await setup(cleanups, { maxConcurrent: 1 });
    const manager = makeManager(config, cleanups, fixtureExecutor(config, cleanups));
    const running = new AbortController();
    const queued = new AbortController();
    const first = manager.spawn({ task: 'FAULT:ignore_cancel', label: 'running' }, { signal: running.signal });
    const second = manager.spawn({ task: RESEARCH_TASK, label: 'queued' }, { signal: queued.signal });
    await startedJob(manager, first.id);
    queued.abort();
    running.abort();
    const [a, b] = await Promise.all([manager.result(first.id), manager.result(second.id)]);
    expect([a.status, a.endedBy]).toEqual(['cancelled', 'hard']);
    expect([b.status, b.endedBy]).toEqual(['cancelled', 'queue']);
    expect(() => manager.spawn({ task: RESEARCH_TASK, label: 'late' }, { signal: AbortSignal.abort() })).toThrow(expect.objectContaining({ code: 'ABORTED' }));
  });

  it('destroy() hard-stops every job now and leaves no thread of its own', async (context) => {
    const cleanups = cleanupOf(context);
    const { config } = await setup(cleanups, { cancelGraceMs: 60_000, closeTimeoutMs: 60_000 });
    const manager = new BackgroundManager({
      config,
      executor: createExecutor(config, undefined, 'piscina', new URL('../../fixtures/faulty-worker.mjs', import.meta.url).href),
      closeExecutor: true,
    });
    const log = recordEvents(manager);
    const { id } = manager.spawn({ task: 'FAULT:ignore_cancel', label: 'stubborn' });
    await startedJob(manager, id);
    const report = await manager.destroy();
    expect(report.cancelled).toEqual([id]);
    expect(manager.get(id)).toMatchObject({ status: 'cancelled', endedBy: 'hard' });
    expect(manager.executor.threadCount()).toBe(0);
    expect(log.filter((e) => e.type === 'done')).toHaveLength(1);
    await expect(manager.close()).resolves.toBe(report);
  });

  it('closes the executor it created, and leaves one it was given running', async (context) => {
    const cleanups = cleanupOf(context);
    const { config } = await setup(cleanups);
    const shared = createExecutor(config);
    cleanups.add(() => shared.close());
    const borrower = new BackgroundManager({ config, executor: shared });
    await borrower.result(borrower.spawn({ task: RESEARCH_TASK, label: 'one' }).id);
    await borrower.close();
    // The executor still runs jobs for its next user.
    const next = new BackgroundManager({ config, executor: shared });
    await expect(next.result(next.spawn({ task: RESEARCH_TASK, label: 'two' }).id)).resolves.toMatchObject({ status: 'ok' });
    await next.close();
    const owner = new BackgroundManager({ config });
    await owner.result(owner.spawn({ task: RESEARCH_TASK, label: 'three' }).id);
    await owner.close();
    expect(owner.executor.threadCount()).toBe(0);
  });
});

describe.concurrent('AgentSession turns a program can stop', () => {
  async function slowSession(cleanups: Cleanup) {
    const root = await makeWorkspace(cleanups);
    // The model takes a minute to answer: any ending before that is the abort's doing.
    const sim = await startSim(cleanups, { latencyMs: 60_000 });
    const session = new AgentSession({ config: makeConfig(sim, root), closeExecutor: true });
    cleanups.add(() => session.close({ timeoutMs: 2_000 }));
    const waitingOnModel = nextEvent<SessionEvents, 'parent'>(session, 'parent', (e) => e.type === 'loop' && e.event.type === 'model_request');
    return { session, waitingOnModel };
  }

  it('an AbortSignal ends the running turn at once and takes a queued one off the queue', async (context) => {
    const cleanups = cleanupOf(context);
    const { session, waitingOnModel } = await slowSession(cleanups);
    const running = new AbortController();
    const queued = new AbortController();
    const first = session.submit('Where is the retry backoff implemented?', { signal: running.signal });
    const second = session.submit('And the cache?', { signal: queued.signal });
    await waitingOnModel;
    queued.abort();
    running.abort();
    await expect(first).resolves.toMatchObject({ stopReason: 'aborted' });
    await expect(second).rejects.toMatchObject({ code: 'ABORTED' });
    await expect(session.submit('never', { signal: AbortSignal.abort() })).rejects.toMatchObject({ code: 'ABORTED' });
  });

  it('close() aborts the running turn, so a stop path never waits on the model', async (context) => {
    const cleanups = cleanupOf(context);
    const { session, waitingOnModel } = await slowSession(cleanups);
    const turn = session.submit('Where is the retry backoff implemented?');
    await waitingOnModel;
    await session.close({ timeoutMs: 1_000 });
    await expect(turn).resolves.toMatchObject({ stopReason: 'aborted' });
  });
});

describe.concurrent('the real bash tool: nothing outlives a hard-stopped job', () => {
  const sandboxes = [
    ['bubblewrap', 'bwrap' as const, '1023', '1024'],
    ['no sandbox', 'none' as const, '1025', '1026'],
  ] as const;
  it.for(sandboxes.filter(([, sandbox]) => sandbox !== 'bwrap' || !skipWithoutBwrap()))(
    '%s: destroy() mid-command kills the command and its background child',
    async ([_what, sandbox, inGroup, escaped], context) => {
      const cleanups = cleanupOf(context);
      const group = `sleep ${inGroup}`;
      const setsid = `sleep ${escaped}`;
      cleanups.add(() => killLeftovers(group));
      cleanups.add(() => killLeftovers(setsid));
      const root = await makeWorkspace(cleanups);
      const command = `(setsid ${setsid} &); ${group} & ${group}`;
      const sim = await startSim(cleanups, { script: [{ toolCalls: [{ name: 'bash', arguments: { command } }] }, { content: 'unused' }] });
      const config = makeConfig(sim, root, { maxConcurrent: 1, cancelGraceMs: 60_000 }, { grantedTools: ['bash'], sandbox });
      const manager = new BackgroundManager({ config });
      const { id } = manager.spawn({ task: 'Sleep a long while.', label: 'sleeper' });
      await startedJob(manager, id);
      for (let tries = 0; processesMatching(group).length < 2 || processesMatching(setsid).length < 1; tries++) {
        expect(tries).toBeLessThan(1_000);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      // A hard stop: the job's thread is terminated, its own cleanup never runs.
      await manager.destroy();
      expect(manager.get(id)).toMatchObject({ status: 'cancelled', endedBy: 'hard' });
      const left = await survivorsAfterKill(group);
      expect(left, describeProcesses(left)).toEqual([]);
      // `setsid` leaves the process group; bubblewrap's PID namespace ends it, and without a
      // sandbox the main thread's sweep of the job's tagged processes (FP_JOB_TAG) does.
      const escapedLeft = await survivorsAfterKill(setsid);
      expect(escapedLeft, describeProcesses(escapedLeft)).toEqual([]);
    },
  );
});
