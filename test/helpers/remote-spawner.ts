/** A RemoteSpawner for tests: a real runner (its own Piscina pool) reached only through handles. */
import { MessageChannel } from 'node:worker_threads';
import { createExecutor } from '../../src/main/jobs/executor-factory.js';
import type { JobSpec, WorkerMessage } from '../../src/shared/protocol.js';
import { SharedRateGate } from '../../src/shared/rate-gate.js';
import type { RemoteHandle, RemoteJobEvent, RemoteSpawner, RemoteStatus } from '../../src/main/remote/spawner.js';
import type { ForkpoolConfig } from '../../src/shared/config.js';
import type { Cleanup } from './cleanup.js';

/** A runner reached only through handles: its own Piscina pool, its jobs' ports kept to itself. */
export function poolSpawner(config: ForkpoolConfig, cleanups: Cleanup): RemoteSpawner & { handles: RemoteHandle[]; specs: JobSpec[] } {
  const pool = createExecutor(config, undefined, 'piscina');
  cleanups.add(() => pool.close());
  const handles: RemoteHandle[] = [];
  const specs: JobSpec[] = [];
  return {
    handles,
    specs,
    spawn(spec: JobSpec): RemoteHandle {
      specs.push(spec);
      const events = new MessageChannel();
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
        } else if (message.type === 'sleep') {
          // A `sleep` job's run ends asleep: the manager wakes it with a new spawn at its time.
          status = 'ended';
          emit({ type: 'sleep', state: message.state, at: message.at, reason: message.reason });
        }
      });
      pool.run({ spec, port: events.port2, rateGateBuffer: SharedRateGate.createBuffer() }, { hardStop: hard.signal }).catch((error: Error) => {
        if (status !== 'ended') {
          status = 'ended';
          emit({ type: 'failed', error });
        }
      });
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
