/**
 * A spawn's between-turn scheduler (core-agent's `Spec.Scheduler`) through the real manager,
 * pool and worker threads on the sim: which jobs get `schedule_next_turn`, a `sleep` job that
 * sleeps (its attempt ended: sleeps.test.ts) and takes its next turn, an `exit_on_defer` job that ends `deferred` with its wake-up
 * time, a cancel that ends a sleeping job, and SCHEDULER_UNKNOWN at spawn and at config load.
 */
import { describe, expect, it } from 'vitest';
import { parseConfig, type ForkpoolConfigInput } from '../../../src/shared/config.js';
import type { ScriptStep } from '../../../src/sim/index.js';
import type { LoopEvent } from '../../../src/shared/loop-events.js';
import { jobJson, jobView } from '../../../src/main/views/job-view.js';
import { ended, makeConfig, makeManager, makeWorkspace, startSim, toolMessagesOf, toolNames, useCleanup, waitFor } from '../../helpers/index.js';

const cleanups = useCleanup();
const TASK = 'Watch the queue: scan it, then sleep, then scan again.';

async function managerWith(script: ScriptStep[], background: NonNullable<ForkpoolConfigInput['background']> = {}) {
  const root = await makeWorkspace(cleanups);
  const sim = await startSim(cleanups, { script });
  const manager = makeManager(makeConfig(sim, root, { maxAlertsPerJob: 0, ...background }), cleanups);
  return { sim, manager };
}

describe('schedulers', () => {
  it('none (the default default) offers no schedule_next_turn; sleep, exit_on_defer and a configured default do', async () => {
    const answer = { content: 'Queue scanned: nothing to do.' };
    const { sim, manager } = await managerWith([answer, answer, answer, answer]);
    for (const scheduler of [undefined, 'none', 'sleep', 'exit_on_defer'] as const) {
      const { id } = manager.spawn({ task: `${TASK} (${scheduler ?? 'unset'})`, label: String(scheduler), ...(scheduler ? { scheduler } : {}) });
      expect((await ended(manager, id)).status).toBe('ok');
    }
    const offered = sim.requests.map((r) => toolNames(r).includes('schedule_next_turn'));
    expect(offered).toEqual([false, false, true, true]);

    const configured = await managerWith([answer, answer], { scheduler: 'sleep' });
    for (const scheduler of [undefined, 'default'] as const) {
      const { id } = configured.manager.spawn({ task: `${TASK} ${String(scheduler)}`, label: 'default', ...(scheduler ? { scheduler } : {}) });
      await ended(configured.manager, id);
    }
    expect(configured.sim.requests.map((r) => toolNames(r).includes('schedule_next_turn'))).toEqual([true, true]);
  });

  it('sleep: schedule_next_turn ends the run; the job takes its next turn after the time, each turn counted (more in sleeps.test.ts)', async () => {
    const { sim, manager } = await managerWith([
      { toolCalls: [{ name: 'schedule_next_turn', arguments: { after: '1s', reason: 'scan the queue again' } }] },
      { content: 'Second scan done: still nothing to do.' },
    ]);
    const before = Date.now();
    const { id } = manager.spawn({ task: TASK, label: 'supervisor', scheduler: 'sleep' });
    const record = await ended(manager, id);
    expect(record).toMatchObject({ status: 'ok', resultText: expect.stringContaining('Second scan'), iterations: 2 });
    // It slept at least the second it asked for before its next model call.
    expect(Date.now() - before).toBeGreaterThanOrEqual(1_000);
    expect(toolMessagesOf(sim.requests[1]!.body)[0]).toMatch(/^Sleeping until .* \(scan the queue again\)/);
    const woken = (sim.requests[1]!.body as { messages: Array<{ role: string; content: unknown }> }).messages.at(-1);
    expect(woken).toMatchObject({ role: 'user', content: expect.stringMatching(/the turn you scheduled has come \(scan the queue again\)/) });
    sim.assertScriptDone();
  });

  it('exit_on_defer: the job ends deferred with the wake-up time it asked for, on the record, the view and the CLI line', async () => {
    const { sim, manager } = await managerWith([
      { toolCalls: [{ name: 'schedule_next_turn', arguments: { after: '2h', reason: 'the nightly build is done by then' } }] },
      { content: 'Deferred: waiting for the nightly build.' },
    ]);
    const before = Date.now();
    const { id } = manager.spawn({ task: TASK, label: 'deferring', scheduler: 'exit_on_defer' });
    const record = await ended(manager, id);
    const after = Date.now();
    expect(record).toMatchObject({ status: 'deferred', endedBy: 'completed', deferReason: 'the nightly build is done by then' });
    expect(record.deferredUntil).toBeGreaterThanOrEqual(before + 2 * 3600_000);
    expect(record.deferredUntil).toBeLessThanOrEqual(after + 2 * 3600_000);
    expect(jobView(record)).toMatchObject({ status: 'deferred', deferredUntil: record.deferredUntil });
    expect(jobJson(record)).toMatchObject({ status: 'deferred', deferredUntil: new Date(record.deferredUntil!).toISOString() });
    expect(toolMessagesOf(sim.requests[1]!.body)[0]).toMatch(/End your turn now/);
    sim.assertScriptDone();
  });

  it('a cancel while the job sleeps wakes it and ends it cancelled, with no further model call', async () => {
    const { sim, manager } = await managerWith(
      [
        { toolCalls: [{ name: 'schedule_next_turn', arguments: { after: '6h', reason: 'scan again' } }] },
        { content: 'never reached' },
        // A long grace: under a busy core the cooperative stop still comes before any hard stop.
      ],
      { cancelGraceMs: 30_000 },
    );
    const events: LoopEvent[] = [];
    manager.on('progress', ({ event }) => events.push(event));
    const { id } = manager.spawn({ task: TASK, label: 'sleeper', scheduler: 'sleep' });
    await waitFor(() => events.some((e) => e.type === 'tool_call' && e.name === 'schedule_next_turn'), 'the job called schedule_next_turn');
    manager.cancel(id);
    const record = await ended(manager, id);
    // Asleep it holds no thread: it ends at once, never by a hard stop after the grace.
    expect(record).toMatchObject({ status: 'cancelled', endedBy: 'cooperative' });
    expect(sim.requests).toHaveLength(1);
  });

  it('an unknown scheduler is SCHEDULER_UNKNOWN at spawn (nothing starts) and at config load', async () => {
    const { manager } = await managerWith([]);
    let thrown: unknown;
    try {
      manager.spawn({ task: TASK, label: 'bad', scheduler: 'cron' });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toMatchObject({
      code: 'SCHEDULER_UNKNOWN',
      message: expect.stringMatching(/scheduler: unknown scheduler "cron"; expected one of default, sleep, exit_on_defer, none/),
    });
    expect(manager.jobs()).toHaveLength(0);
    const root = await makeWorkspace(cleanups);
    expect(() => parseConfig({ workspaceRoot: root, background: { scheduler: 'cron' } })).toThrow(
      expect.objectContaining({ code: 'SCHEDULER_UNKNOWN', message: expect.stringMatching(/background\.scheduler.*"cron"/) }),
    );
  });
});
