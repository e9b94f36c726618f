/**
 * The `sleep` scheduler through the real manager, pool and worker threads on the sim
 * (docs/delivery.md "Schedulers"): a job's schedule_next_turn ends its attempt, so its slot and
 * thread go back while it sleeps (another job runs in the one slot); it is `running` with its
 * wake time on the record and the views; at its time it is queued and goes on with its
 * conversation; its turns count across sleeps; a close with a durable ledger leaves it asleep
 * on disk, and the next manager on that ledger wakes it at its own time and delivers it once.
 */
import { describe, expect, it } from 'vitest';
import type { ForkpoolConfigInput } from '../../../src/shared/config.js';
import type { ScriptStep } from '../../../src/sim/index.js';
import { BackgroundManager } from '../../../src/main/jobs/manager.js';
import { Deliveries } from '../../../src/main/delivery/deliveries.js';
import { openSqliteLedger } from '../../../src/main/ledger/sqlite-store.js';
import type { JobRecord } from '../../../src/main/ledger/ledger.js';
import { jobJson, jobView } from '../../../src/main/views/job-view.js';
import { statusText } from '../../../src/tui/jobs-view.js';
import { ended, ledgerFile, makeConfig, makeManager, makeWorkspace, startSim, watchManager, cleanupOf, type Cleanup } from '../../helpers/index.js';

const TASK = 'Watch the queue: scan it, then sleep, then scan again.';
const sleepCall = (after: string, reason = 'scan the queue again'): ScriptStep => ({
  toolCalls: [{ name: 'schedule_next_turn', arguments: { after, reason } }],
});

async function managerWith(cleanups: Cleanup, script: ScriptStep[], background: NonNullable<ForkpoolConfigInput['background']> = {}) {
  const root = await makeWorkspace(cleanups);
  const sim = await startSim(cleanups, { script });
  const manager = makeManager(makeConfig(sim, root, { maxAlertsPerJob: 0, ...background }), cleanups);
  return { sim, manager, root };
}

type Body = { messages: Array<{ role: string; content?: unknown }> };

// Side by side (concurrent): each test has its own sim, manager, workspace and cleanup list; their time is the sleeps.
describe.concurrent('sleep scheduler', () => {
  it('a sleeping job gives its slot back (another job runs in the one slot), shows its wake time, and at its time goes on with its conversation', async (context) => {
    const cleanups = cleanupOf(context);
    const { sim, manager } = await managerWith(
      cleanups,
      [sleepCall('2s'), { content: 'The other job is done.' }, { content: 'Second scan done: still nothing to do.' }],
      { maxConcurrent: 1 },
    );
    const order: string[] = [];
    let asleep: Readonly<JobRecord> | undefined;
    const views: unknown[] = [];
    manager.on('started', (record) => order.push(`started ${record.label}`));
    manager.on('done', (record) => order.push(`done ${record.label}`));
    manager.on('sleeping', (record) => {
      order.push(`sleeping ${record.label}`);
      asleep = record;
      views.push(jobView(record).sleepingUntil, jobJson(record).sleepingUntil, statusText(record));
    });
    const { id } = manager.spawn({ task: TASK, label: 'supervisor', scheduler: 'sleep' });
    const other = manager.spawn({ task: 'Say you are done.', label: 'other' });
    const record = await ended(manager, id);
    expect((await ended(manager, other.id)).status).toBe('ok');

    // The other job started while the supervisor slept: the one slot was given back.
    expect(order.slice(0, 4)).toEqual(['started supervisor', 'sleeping supervisor', 'started other', 'done other']);
    expect(order.slice(4)).toEqual(['started supervisor', 'done supervisor']);
    // While asleep: `running`, holding its wake time on the record and every view of it.
    const at = asleep?.sleepWait?.at as number;
    expect(asleep).toMatchObject({ state: 'running', sleepWait: { reason: 'scan the queue again', iterations: 1 } });
    expect(views).toEqual([at, new Date(at).toISOString(), `sleeping until ${new Date(at).toISOString().slice(11, 19)}`]);

    expect(record).toMatchObject({ status: 'ok', resultText: expect.stringContaining('Second scan'), iterations: 2, attempts: 2 });
    expect(record.sleepWait).toBeUndefined();
    expect(jobView(record).sleepingUntil).toBeNull();
    // Woken at its time, not before; and its next model call had its whole conversation, then the wake message.
    const woken = sim.requests[2];
    expect(woken?.receivedAt).toBeGreaterThanOrEqual(at);
    const messages = (woken?.body as Body).messages;
    expect(messages.filter((m) => m.role === 'tool').map((m) => String(m.content))).toEqual([
      expect.stringMatching(/^Sleeping until .* \(scan the queue again\)/),
    ]);
    expect(messages.at(-1)).toMatchObject({ role: 'user', content: expect.stringMatching(/the turn you scheduled has come \(scan the queue again\)/) });
    expect(String(messages[1]?.content)).toContain(TASK);
    sim.assertScriptDone();
  });

  it('its turns count across sleeps: maxTurns 2 stops it when it wakes the second time, with no third model call', async (context) => {
    const cleanups = cleanupOf(context);
    const { sim, manager } = await managerWith(cleanups, [sleepCall('1s'), sleepCall('1s', 'scan once more'), { content: 'never reached' }]);
    const { id } = manager.spawn({ task: TASK, label: 'budgeted', scheduler: 'sleep', budget: { maxTurns: 2 } });
    const record = await ended(manager, id);
    expect(record).toMatchObject({ status: 'partial', budgetExceeded: 'maxTurns', iterations: 2 });
    expect(sim.requests).toHaveLength(2);
  });

  it('a cancel while it sleeps ends it at once (cancelled, cooperative), with no further model call and no thread to stop', async (context) => {
    const cleanups = cleanupOf(context);
    const { sim, manager } = await managerWith(cleanups, [sleepCall('6h', 'scan again'), { content: 'never reached' }]);
    const { id } = manager.spawn({ task: TASK, label: 'sleeper', scheduler: 'sleep' });
    const [asleep] = await new Promise<[Readonly<JobRecord>]>((resolve) => manager.on('sleeping', (r) => resolve([r])));
    expect(asleep.id).toBe(id);
    expect(manager.get(id)?.state).toBe('running');
    manager.cancel(id);
    // Ended within the cancel itself: nothing was left to stop.
    const record = manager.get(id) as JobRecord;
    expect(record).toMatchObject({ state: 'ended', status: 'cancelled', endedBy: 'cooperative', error: { code: 'JOB_CANCELLED' } });
    expect(record.error?.message).toMatch(/while asleep until/);
    expect(sim.requests).toHaveLength(1);
  });

  it('close() while it sleeps, durable: it stays asleep in the ledger; the next manager wakes it at its own time, runs the rest and delivers it once', async (context) => {
    const cleanups = cleanupOf(context);
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups, { script: [sleepCall('3s'), { content: 'Woke and scanned.' }] });
    const file = ledgerFile(cleanups, 'sleep.db');
    const config = makeConfig(sim, root, { maxAlertsPerJob: 0 }, { ledger: { path: file } });
    const open = () => {
      const store = openSqliteLedger(file);
      cleanups.add(() => store.close());
      const manager = watchManager(new BackgroundManager({ config, store: store.jobs('s'), closeExecutor: true }));
      cleanups.add(() => manager.close({ timeoutMs: 2_000 }));
      return manager;
    };
    const first = open();
    const { id } = first.spawn({ task: TASK, label: 'durable sleeper', scheduler: 'sleep' });
    const [asleep] = await new Promise<[Readonly<JobRecord>]>((resolve) => first.on('sleeping', (r) => resolve([r])));
    const at = asleep.sleepWait?.at as number;
    await first.close();

    const second = open();
    expect(second.recovery?.sleeping).toEqual([id]);
    // Not woken at once: still asleep with the same wake time, and the model not asked again.
    expect(second.get(id)).toMatchObject({ state: 'running', sleepWait: { at } });
    expect(sim.requests).toHaveLength(1);
    const record = await ended(second, id);
    expect(record).toMatchObject({ status: 'ok', resultText: 'Woke and scanned.', iterations: 2 });
    expect(sim.requests[1]?.receivedAt).toBeGreaterThanOrEqual(at);
    const deliveries = new Deliveries(second);
    expect(deliveries.drain(1).map((r) => r.id)).toEqual([id]);
    expect(deliveries.drain(2)).toEqual([]);
    sim.assertScriptDone();
  });
});
