/**
 * The public remote-runner interface: a RemoteSpawner (handle: id, status, stop, events) behind
 * RemoteExecutor. The runner here is a real one in another pool: each job runs in a Piscina
 * thread that the spawner drives only through the handle, as a remote service would.
 */
import { MessageChannel } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { createExecutor } from '../../../src/main/jobs/executor-factory.js';
import { exposeOnPort } from '../../../src/shared/comlink-port.js';
import type { JobSpec, WorkerMessage } from '../../../src/shared/protocol.js';
import { SharedRateGate } from '../../../src/shared/rate-gate.js';
import { RemoteExecutor, type RemoteHandle, type RemoteJobEvent, type RemoteSpawner, type RemoteStatus } from '../../../src/main/remote/spawner.js';
import type { ForkpoolConfig } from '../../../src/shared/config.js';
import {
  RESEARCH_TASK,
  drainedIds,
  ended,
  makeConfig,
  makeManager,
  makeWorkspace,
  startSim,
  startedJob,
  useCleanup,
  waitFor,
  type Cleanup,
} from '../../helpers/index.js';

const cleanup = useCleanup();

/** A runner reached only through handles: its own Piscina pool, its jobs' ports kept to itself. */
function poolSpawner(config: ForkpoolConfig, cleanups: Cleanup): RemoteSpawner & { handles: RemoteHandle[] } {
  const pool = createExecutor(config, undefined, 'piscina');
  cleanups.add(() => pool.close());
  const handles: RemoteHandle[] = [];
  return {
    handles,
    spawn(spec: JobSpec): RemoteHandle {
      const events = new MessageChannel();
      const permissions = new MessageChannel();
      exposeOnPort({ isGranted: () => false }, permissions.port1);
      const listeners = new Set<(event: RemoteJobEvent) => void>();
      const emit = (event: RemoteJobEvent) => listeners.forEach((listener) => listener(event));
      const hard = new AbortController();
      let status: RemoteStatus = 'queued';
      events.port1.on('message', (message: WorkerMessage) => {
        if (message.type === 'started') {
          status = 'running';
          emit({ type: 'started' });
        } else if (message.type === 'progress') emit({ type: 'progress', event: message.event });
        else if (message.type === 'alert') emit({ type: 'alert', message: message.message, severity: message.severity });
        else if (message.type === 'done') {
          status = 'ended';
          emit({ type: 'done', outcome: message.outcome });
        }
      });
      pool
        .run({ spec, port: events.port2, permissionPort: permissions.port2, rateGateBuffer: SharedRateGate.createBuffer() }, { hardStop: hard.signal })
        .catch((error: Error) => {
          if (status !== 'ended') {
            status = 'ended';
            emit({ type: 'failed', error });
          }
        })
        .finally(() => permissions.port1.close());
      const handle: RemoteHandle = {
        id: `pool-${spec.id}`,
        status: () => status,
        stop: ({ reason, hard: force }) => (force ? hard.abort() : events.port1.postMessage({ type: 'cancel', reason })),
        onEvent: (listener) => {
          listeners.add(listener);
          return () => listeners.delete(listener);
        },
      };
      handles.push(handle);
      return handle;
    },
  };
}

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
