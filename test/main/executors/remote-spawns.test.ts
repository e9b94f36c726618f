/**
 * Remote spawns (issue 38, B22): a second, remote executor beside the local pool; a spawn's
 * `executor: "remote"` runs there; the parent's model gets `spawn_remote_agent`; a refusing
 * spawner answers with its reason; a missing one is an error up front.
 */
import { describe, expect, it } from 'vitest';
import { BackgroundManager } from '../../../src/main/jobs/manager.js';
import { AgentSession } from '../../../src/main/session/agent-session.js';
import { RemoteExecutor, refuseRemoteSpawner } from '../../../src/main/remote/spawner.js';
import { ConfigError } from '../../../src/shared/errors.js';
import { poolSpawner } from '../../helpers/remote-spawner.js';
import { RESEARCH_TASK, ended, makeConfig, makeWorkspace, startSim, toolMessagesOf, toolNames, toolSchema, useCleanup } from '../../helpers/index.js';

const cleanup = useCleanup();

describe('remote spawns beside the local pool', () => {
  it('a spawn with executor "remote" runs on the remote spawner, one without runs locally', async () => {
    const sim = await startSim(cleanup);
    const config = makeConfig(sim, await makeWorkspace(cleanup), { maxConcurrent: 2 });
    const spawner = poolSpawner(config, cleanup);
    const manager = new BackgroundManager({ config, remote: spawner });
    cleanup.add(() => manager.close({ timeoutMs: 2_000 }));
    const remote = manager.spawn({ task: RESEARCH_TASK, label: 'remote one', executor: 'remote' });
    const local = manager.spawn({ task: RESEARCH_TASK, label: 'local one' });
    const [remoteRecord, localRecord] = await Promise.all([ended(manager, remote.id), ended(manager, local.id)]);
    expect(remoteRecord.error).toBeUndefined();
    expect(remoteRecord).toMatchObject({ status: 'ok' });
    expect(localRecord).toMatchObject({ status: 'ok' });
    // Only the remote spawn crossed the spawner; the local one ran in the manager's own pool.
    expect(spawner.specs.map((spec) => spec.id)).toEqual([remote.id]);
    expect(spawner.specs[0]).toMatchObject({ executor: 'remote' });
  });

  it('without a remote executor, executor "remote" is EXECUTOR_UNAVAILABLE and nothing is booked', async () => {
    const sim = await startSim(cleanup);
    const config = makeConfig(sim, await makeWorkspace(cleanup));
    const manager = new BackgroundManager({ config });
    cleanup.add(() => manager.close({ timeoutMs: 2_000 }));
    expect(() => manager.spawn({ task: RESEARCH_TASK, label: 'nowhere', executor: 'remote' })).toThrow(/EXECUTOR_UNAVAILABLE|no remote executor/);
    expect(() => manager.spawn({ task: RESEARCH_TASK, label: 'bad', executor: 'moon' as never })).toThrow(/executor/);
    expect(manager.jobs()).toHaveLength(0);
  });

  it('a null spawner is a ConfigError at construction, not INTERNAL in each job', async () => {
    const config = makeConfig(await startSim(cleanup), await makeWorkspace(cleanup));
    expect(() => new RemoteExecutor(null as never)).toThrow(ConfigError);
    expect(() => new BackgroundManager({ config, remote: null as never })).toThrow(/spawner.*refuseRemoteSpawner.*received null/s);
  });

  it('the model spawns with spawn_remote_agent; a refusing spawner answers with its reason and books nothing', async () => {
    const root = await makeWorkspace(cleanup);
    const sim = await startSim(cleanup, {
      script: [
        {
          toolCalls: [
            { id: 'r1', name: 'spawn_remote_agent', arguments: { task: RESEARCH_TASK, label: 'on the runner' } },
            { id: 'r2', name: 'spawn_background_agent', arguments: { task: RESEARCH_TASK, label: 'also remote', executor: 'remote' } },
          ],
        },
        { content: 'Both were started.' },
      ],
    });
    const config = makeConfig(sim, root, { maxConcurrent: 2 });
    const spawner = poolSpawner(config, cleanup);
    const session = new AgentSession({ config, closeExecutor: true, remote: spawner });
    cleanup.add(() => session.close({ timeoutMs: 2_000 }));
    await session.submit('Run two remote agents.');
    expect(toolNames(sim.requests[0]!)).toContain('spawn_remote_agent');
    expect(toolSchema(sim.requests[0]!, 'spawn_background_agent').properties.executor.enum).toEqual(['local', 'remote']);
    const jobs = session.manager.jobs();
    expect(jobs).toHaveLength(2);
    await Promise.all(jobs.map((job) => ended(session.manager, job.id)));
    expect(spawner.specs.map((spec) => spec.label).sort()).toEqual(['also remote', 'on the runner']);

    const sim2 = await startSim(cleanup, {
      script: [{ toolCalls: [{ id: 'r3', name: 'spawn_remote_agent', arguments: { task: RESEARCH_TASK, label: 'refused' } }] }, { content: 'Refused.' }],
    });
    const refused = new AgentSession({
      config: makeConfig(sim2, root),
      closeExecutor: true,
      remote: refuseRemoteSpawner('no remote runners in unattended mode'),
    });
    cleanup.add(() => refused.close({ timeoutMs: 2_000 }));
    await refused.submit('Run a remote agent.');
    expect(toolMessagesOf(sim2.requests[1]!.body)[0]).toMatch(/REMOTE_REFUSED|refused on this host: no remote runners in unattended mode/);
    expect(refused.manager.jobs()).toHaveLength(0);
    // Without a remote executor the tool is not offered and the spawn tool has no executor argument.
    const sim3 = await startSim(cleanup, { script: [{ content: 'ok' }] });
    const plain = new AgentSession({ config: makeConfig(sim3, root), closeExecutor: true });
    cleanup.add(() => plain.close({ timeoutMs: 2_000 }));
    await plain.submit('hello');
    expect(toolNames(sim3.requests[0]!)).not.toContain('spawn_remote_agent');
    expect(toolSchema(sim3.requests[0]!, 'spawn_background_agent').properties.executor).toBeUndefined();
  });
});
