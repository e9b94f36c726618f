/**
 * The public remote-runner interface: a RemoteSpawner (handle: id, status, stop, events) behind
 * RemoteExecutor. The runner here is a real one in another pool: each job runs in a Piscina
 * thread that the spawner drives only through the handle, as a remote service would.
 */
import { describe, expect, it } from 'vitest';
import { RemoteExecutor } from '../../../src/main/remote/spawner.js';
import { poolSpawner } from '../../helpers/remote-spawner.js';
import { RESEARCH_TASK, drainedIds, ended, makeConfig, makeManager, makeWorkspace, startSim, startedJob, useCleanup, waitFor } from '../../helpers/index.js';

const cleanup = useCleanup();

describe('RemoteExecutor: a user-supplied remote runner', () => {
  it('runs jobs the manager lists, ends and delivers as local ones', async () => {
    const sim = await startSim(cleanup);
    const config = makeConfig(sim, await makeWorkspace(cleanup), { maxConcurrent: 2 });
    const spawner = poolSpawner(config, cleanup);
    const manager = makeManager(config, cleanup, new RemoteExecutor(spawner, 'pool-service'));
    const ids = [0, 1, 2].map((i) => manager.spawn({ task: RESEARCH_TASK, label: `via handle ${i}`, wave: 1 }).id);
    const records = await Promise.all(ids.map((id) => ended(manager, id)));
    for (const record of records) expect(record).toMatchObject({ status: 'ok', endedBy: 'completed', attempts: 1 });
    expect(spawner.handles.map((h) => h.status())).toEqual(['ended', 'ended', 'ended']);
    expect(drainedIds(manager, 1)).toEqual([...ids].sort());
  });

  it("a sleep job's run ends asleep through the handle (a `sleep` event): nothing runs while it sleeps, and at its time the manager spawns it again to go on from its conversation", async () => {
    const sim = await startSim(cleanup, {
      script: [{ toolCalls: [{ name: 'schedule_next_turn', arguments: { after: '1s', reason: 'scan again' } }] }, { content: 'Woke and scanned.' }],
    });
    const config = makeConfig(sim, await makeWorkspace(cleanup), { maxConcurrent: 1, maxAlertsPerJob: 0 });
    const spawner = poolSpawner(config, cleanup);
    const manager = makeManager(config, cleanup, new RemoteExecutor(spawner, 'pool-service'));
    const sleeping: number[] = [];
    manager.on('sleeping', () => sleeping.push(spawner.handles.filter((h) => h.status() !== 'ended').length));
    const { id } = manager.spawn({ task: 'Scan, sleep, scan again.', label: 'sleeper', scheduler: 'sleep' });
    const record = await ended(manager, id);
    expect(record).toMatchObject({ status: 'ok', resultText: 'Woke and scanned.', iterations: 2, attempts: 2 });
    // Asleep, no handle of it ran; woken, a second spawn carried its conversation and the wake message.
    expect(sleeping).toEqual([0]);
    expect(spawner.specs.map((spec) => spec.id)).toEqual([id, id]);
    expect(spawner.specs[1]?.resume?.childResults).toMatch(/the turn you scheduled has come \(scan again\)/);
    sim.assertScriptDone();
  });

  it('cancel goes through the handle: the job honours it and ends cancelled', async () => {
    const sim = await startSim(cleanup, { faults: { 1: { kind: 'hang_before_headers' } } });
    const config = makeConfig(sim, await makeWorkspace(cleanup), { maxConcurrent: 2, cancelGraceMs: 5_000 });
    const spawner = poolSpawner(config, cleanup);
    const manager = makeManager(config, cleanup, new RemoteExecutor(spawner));
    const { id } = manager.spawn({ task: RESEARCH_TASK, label: 'stopped via handle' });
    await startedJob(manager, id);
    await waitFor(() => sim.requests.length >= 1, 'the hanging model call');
    manager.cancel(id);
    const record = await ended(manager, id);
    expect(record).toMatchObject({ status: 'cancelled', endedBy: 'cooperative' });
  });
});
