/**
 * `scheduler: "sleep"` and `approvals: "ask"` in one batch, through the real pool and worker
 * threads on the sim (docs/delivery.md "A sleeping job"): the batch held a gated call and
 * schedule_next_turn (the model was told "Sleeping until…"). The approval pauses the job first;
 * once it is answered the approved call runs and the job sleeps as it was told, until the turn it
 * asked for, with no model call between.
 */
import { describe, expect, it } from 'vitest';
import type { ScriptStep } from '../../../src/sim/types.js';
import type { ManagerEvents } from '../../../src/main/jobs/manager.js';
import { ended, makeConfig, makeManager, makeWorkspace, messagesOf, nextEvent, startSim, useCleanup } from '../../helpers/index.js';
import { ManualScheduler } from '../../helpers/fake-executor.js';

const cleanups = useCleanup();

describe('a sleep asked for in a batch that paused for an approval', () => {
  it('is kept: after the approval the approved call runs, then the job sleeps until its turn (no model call between), then goes on', async () => {
    const root = await makeWorkspace(cleanups);
    const script: ScriptStep[] = [
      {
        toolCalls: [
          { id: 'gated', name: 'bash', arguments: { command: 'echo approved-ran' } },
          { name: 'schedule_next_turn', arguments: { after: '1h', reason: 'check the build again' } },
        ],
      },
      { content: 'Checked the build again: green.' },
    ];
    const sim = await startSim(cleanups, { script, recordBodies: true });
    const scheduler = new ManualScheduler(['timeout', 'cancel-grace', 'port-close', 'budget', 'wave-deadline', 'approval']);
    const config = makeConfig(sim, root, { maxConcurrent: 1, maxAlertsPerJob: 0 }, { approvals: 'ask', sandbox: 'none' });
    const manager = makeManager(config, cleanups, undefined, scheduler);
    const asked = nextEvent<ManagerEvents, 'approval-requested'>(manager, 'approval-requested');
    const { id } = manager.spawn({ task: 'Run the check, then look again in an hour.', label: 'watcher', scheduler: 'sleep' });
    await asked;
    expect(manager.get(id)?.approvalWait?.scheduledTurn).toMatchObject({ reason: 'check the build again' });

    // Whichever comes first after the answer: it must be the sleep, not an ending.
    const next = Promise.race([
      nextEvent<ManagerEvents, 'sleeping'>(manager, 'sleeping', (r) => r.id === id).then(([r]) => ({ event: 'sleeping', record: r })),
      nextEvent<ManagerEvents, 'done'>(manager, 'done', (r) => r.id === id).then(([r]) => ({ event: 'done', record: r })),
    ]);
    manager.approve(id, 'gated', { decision: 'allow' });
    const first = await next;
    expect(first.event).toBe('sleeping');
    expect(first.record.sleepWait).toMatchObject({ reason: 'check the build again' });
    expect(sim.requests).toHaveLength(1);

    scheduler.fire(scheduler.find('sleep', id)[0] as number);
    const record = await ended(manager, id);
    expect(record).toMatchObject({ status: 'ok', resultText: 'Checked the build again: green.' });
    const messages = messagesOf(sim.requests[1] as Parameters<typeof messagesOf>[0]);
    expect(messages.some((m) => m.role === 'tool' && String(m.content).includes('approved-ran'))).toBe(true);
    expect(messages.filter((m) => m.role === 'tool' && /^Sleeping until/.test(String(m.content)))).toHaveLength(1);
    expect(String(messages.at(-1)?.content)).toMatch(/the turn you scheduled has come \(check the build again\)/);
    sim.assertScriptDone();
  });
});
