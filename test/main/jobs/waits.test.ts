/**
 * BackgroundManager.wait through the real pool (the fault fixture's worker, real jobs on the
 * sim): `any` ends at the first ending, `all` only at the last, the timeout answers with what
 * still runs, an abort ends the wait at once, and a bad call (an unknown job, a bad option) is
 * refused before anything waits. No wait leaves a listener behind, and none delivers anything.
 */
import { describe, expect, it } from 'vitest';
import { WAIT_LIMITS } from '../../../src/shared/fixed-limits.js';
import { ForkpoolError } from '../../../src/shared/errors.js';
import type { BackgroundManager } from '../../../src/main/jobs/manager.js';
import { RESEARCH_TASK, ended, fixtureExecutor, makeConfig, makeManager, makeWorkspace, startSim, startedJob, useCleanup } from '../../helpers/index.js';

const cleanups = useCleanup();

async function setUp(): Promise<BackgroundManager> {
  const root = await makeWorkspace(cleanups);
  const sim = await startSim(cleanups);
  const config = makeConfig(sim, root, { maxConcurrent: 3, cancelGraceMs: 100 });
  return makeManager(config, cleanups, fixtureExecutor(config, cleanups));
}

/** A promise's outcome once it settles, readable without awaiting it. */
function track<T>(promise: Promise<T>): { settled: () => boolean } {
  let settled = false;
  promise.then(
    () => (settled = true),
    () => (settled = true),
  );
  return { settled: () => settled };
}

const nextMacrotask = () => new Promise((resolve) => setImmediate(resolve));

async function refusal(promise: Promise<unknown>): Promise<ForkpoolError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(ForkpoolError);
  return error as ForkpoolError;
}

describe('BackgroundManager.wait', () => {
  it('mode any: resolves at the first ending, with the other job still running; names work as ids; nothing is delivered', async () => {
    const manager = await setUp();
    const listeners = manager.listenerCount('done');
    const quick = manager.spawn({ task: RESEARCH_TASK, label: 'quick' });
    const long = manager.spawn({ task: 'FAULT:finish_on_cancel', label: 'long', name: 'long-one' });
    const outcome = await manager.parentControls.wait([quick.id, 'long-one'], { timeoutMs: 30_000, mode: 'any' });

    expect(outcome.timedOut).toBe(false);
    expect(outcome.ended.map((r) => r.id)).toEqual([quick.id]);
    expect(outcome.running.map((r) => r.id)).toEqual([long.id]);
    expect(outcome.ended[0]?.deliveredInTurn).toBeUndefined();
    expect(manager.listenerCount('done')).toBe(listeners);
  });

  it('mode all: still waiting after the first ending, resolves once the last has ended', async () => {
    const manager = await setUp();
    const quick = manager.spawn({ task: RESEARCH_TASK, label: 'quick' });
    const long = manager.spawn({ task: 'FAULT:finish_on_cancel', label: 'long' });
    const waiting = manager.parentControls.wait([quick.id, long.id, quick.id], { timeoutMs: 30_000 });
    const state = track(waiting);
    await ended(manager, quick.id);
    await nextMacrotask();
    expect(state.settled()).toBe(false);

    await startedJob(manager, long.id);
    manager.cancel(long.id);
    const outcome = await waiting;
    expect(outcome.timedOut).toBe(false);
    // Named twice, waited for once.
    expect(outcome.ended.map((r) => r.id)).toEqual([quick.id, long.id]);
    expect(outcome.running).toEqual([]);
  });

  it('the timeout answers with the jobs still running; timeoutMs 0 only looks; an ended job satisfies at once', async () => {
    const manager = await setUp();
    const listeners = manager.listenerCount('done');
    const stuck = manager.spawn({ task: 'FAULT:ignore_cancel', label: 'stuck' });
    const outcome = await manager.parentControls.wait([stuck.id], { timeoutMs: 50, mode: 'any' });
    expect(outcome).toMatchObject({ timedOut: true, ended: [] });
    expect(outcome.running.map((r) => r.id)).toEqual([stuck.id]);
    expect((await manager.parentControls.wait([stuck.id], { timeoutMs: 0 })).timedOut).toBe(true);

    const quick = manager.spawn({ task: RESEARCH_TASK, label: 'quick' });
    await ended(manager, quick.id);
    const already = await manager.parentControls.wait([quick.id], { timeoutMs: 0 });
    expect(already).toMatchObject({ timedOut: false, running: [] });
    expect(already.ended.map((r) => r.id)).toEqual([quick.id]);
    expect(manager.listenerCount('done')).toBe(listeners);
  });

  it('an abort ends the wait at once with ABORTED and its reason; an aborted signal never waits', async () => {
    const manager = await setUp();
    const listeners = manager.listenerCount('done');
    const stuck = manager.spawn({ task: 'FAULT:ignore_cancel', label: 'stuck' });
    const controller = new AbortController();
    const waiting = manager.parentControls.wait([stuck.id], { timeoutMs: 30_000, signal: controller.signal });
    await nextMacrotask();
    controller.abort('esc pressed');
    const error = await refusal(waiting);
    expect(error.code).toBe('ABORTED');
    expect(error.message).toContain('esc pressed');
    expect(manager.listenerCount('done')).toBe(listeners);
    expect((await refusal(manager.parentControls.wait([stuck.id], { timeoutMs: 30_000, signal: controller.signal }))).code).toBe('ABORTED');
    expect(manager.get(stuck.id)?.state).not.toBe('ended');
  });

  it('an unknown job or a bad option is refused before anything waits, naming it', async () => {
    const manager = await setUp();
    const listeners = manager.listenerCount('done');
    const stuck = manager.spawn({ task: 'FAULT:ignore_cancel', label: 'stuck' });
    const unknown = await refusal(manager.parentControls.wait([stuck.id, 'nobody'], { timeoutMs: 30_000 }));
    expect(unknown).toMatchObject({ code: 'JOB_UNKNOWN', jobId: 'nobody' });
    expect(unknown.message).toContain('"nobody"');
    const bad: Array<[readonly string[], number, string | undefined, RegExp]> = [
      [[], 10, undefined, /jobs/],
      [[stuck.id], -1, undefined, /timeoutMs/],
      [[stuck.id], 1.5, undefined, /timeoutMs/],
      [[stuck.id], WAIT_LIMITS.maxTimeoutMs + 1, undefined, /timeoutMs/],
      [[stuck.id], 10, 'some', /mode/],
    ];
    for (const [jobs, timeoutMs, mode, field] of bad) {
      const error = await refusal(manager.parentControls.wait(jobs, { timeoutMs, ...(mode ? { mode: mode as 'all' } : {}) }));
      expect(error.code).toBe('TOOL_ARGUMENTS_INVALID');
      expect(error.message).toMatch(field);
    }
    expect(manager.listenerCount('done')).toBe(listeners);
  });
});
