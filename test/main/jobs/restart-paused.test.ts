/**
 * A restart of a job whose run is over but which has not ended (asleep until its scheduled turn)
 * is refused with an error naming its state, through the real pool on the sim; the job is left
 * as it was and wakes and ends at its turn (docs/agents.md, restart_background_agent).
 */
import { describe, expect, it } from 'vitest';
import { BackgroundManager, type ManagerEvents } from '../../../src/main/jobs/manager.js';
import { ended, makeConfig, makeWorkspace, nextEvent, startSim, useCleanup, watchManager } from '../../helpers/index.js';
import { ManualScheduler } from '../../helpers/fake-executor.js';

const cleanups = useCleanup();

describe('restart of a job that waits', () => {
  it('asleep: manager.restart is refused naming its state, and the job sleeps on and ends at its turn', async () => {
    const workspace = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups, {
      script: [{ toolCalls: [{ name: 'schedule_next_turn', arguments: { after: '1h', reason: 'scan again' } }] }, { content: 'Scanned.' }],
    });
    const config = makeConfig(sim, workspace, { maxConcurrent: 1, maxAlertsPerJob: 0 });
    const scheduler = new ManualScheduler(['timeout', 'cancel-grace', 'port-close', 'budget', 'wave-deadline', 'approval']);
    const manager = watchManager(new BackgroundManager({ config, scheduler }));
    cleanups.add(() => manager.close({ timeoutMs: 2_000 }));
    const { id } = manager.spawn({ task: 'Scan the queue.', label: 'scanner', scheduler: 'sleep' });
    await nextEvent<ManagerEvents, 'sleeping'>(manager, 'sleeping', (r) => r.id === id);

    expect(() => manager.restart(id)).toThrow(/is asleep until its scheduled turn; it cannot be restarted/);
    expect(manager.get(id)).toMatchObject({ state: 'running', sleepWait: { reason: 'scan again' } });
    expect(sim.requests).toHaveLength(1);

    scheduler.fire(scheduler.find('sleep', id)[0] as number);
    expect(await ended(manager, id)).toMatchObject({ status: 'ok', resultText: 'Scanned.' });
    expect(sim.requests).toHaveLength(2);
    sim.assertScriptDone();
  });
});
