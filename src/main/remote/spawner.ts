/**
 * Plug in your own remote runner (a Kubernetes job, a separate service) without touching the
 * manager: implement {@link RemoteSpawner} — `spawn(spec)` returns a {@link RemoteHandle} with
 * an id, a status, `stop` and events, as the remote spawner of the Go manager in the seeds
 * does — and wrap it in a {@link RemoteExecutor}. The manager then lists, checks, cancels,
 * restarts, times out and delivers its jobs exactly as local ones. (The BullMQ executor is the
 * implementation that ships; it speaks the port protocol itself.)
 */
import type { MessagePort } from 'node:worker_threads';
import { ConfigError, JobError, deserializeError, type SerializedError } from '../../shared/errors.js';
import {
  mainMessageSchema,
  type AlertSeverity,
  type JobOutcome,
  type JobSpec,
  type JobTask,
  type StopRequest,
  type WorkerMessage,
} from '../../shared/protocol.js';
import type { LoopEvent } from '../../shared/loop-events.js';
import type { ExecuteOptions, Executor, ExecutorCapabilities } from '../executors/executor.js';

export type RemoteStatus = 'queued' | 'running' | 'ended';

/** Where a sleeping job goes on from: its conversation and what it spent (the `sleep` port message's `state`). */
export type SleepState = Extract<WorkerMessage, { type: 'sleep' }>['state'];

/** What a remote job reports, in order: `started` (again if the runner re-runs it), progress and alerts, then one `done`, `sleep` or `failed`. */
export type RemoteJobEvent =
  | { type: 'started' }
  | { type: 'progress'; event: LoopEvent }
  | { type: 'alert'; message: string; severity: AlertSeverity }
  /** The job's own ending (it answered, or honoured a stop): its text, usage and stop reason. */
  | { type: 'done'; outcome: JobOutcome }
  /**
   * A `sleep` job's run ended asleep until `at` (epoch ms): the job's `sleep` port message, passed
   * on. The manager keeps the sleep and spawns it again at its time, to go on from `state`.
   */
  | { type: 'sleep'; state: SleepState; at: number; reason: string }
  /** The runner could not run it to an ending (its machine died, it was hard-stopped). */
  | { type: 'failed'; error: Error | SerializedError };

export interface RemoteHandle {
  readonly id: string;
  status(): RemoteStatus;
  /**
   * Phase one (`hard: false`): ask the job to stop (its model call and tools are aborted; it
   * ends with `done`). Phase two (`hard: true`): end it by force (it ends with `failed`).
   */
  stop(request: { reason: StopRequest; hard: boolean }): void | Promise<void>;
  /** Subscribes to the job's events; returns the unsubscribe. */
  onEvent(listener: (event: RemoteJobEvent) => void): () => void;
}

export interface RemoteSpawner {
  /**
   * Runs a job somewhere. The spec is plain data (structured-clone safe) and whole: its
   * `config.apiKey`, each `config.agents.<name>.apiKey` and `redisUrl` are the spawner's to strip
   * or keep (a runner that has its own keys should drop them before the spec leaves the process).
   */
  spawn(spec: JobSpec): RemoteHandle | Promise<RemoteHandle>;
  close?(): Promise<void>;
  /**
   * Set by {@link refuseRemoteSpawner}: every remote spawn is refused with this reason, up front
   * (the model's `spawn_remote_agent` call gets it as a tool error; no job is booked).
   */
  readonly refusal?: string;
}

/**
 * A spawner that refuses every spawn with `reason` (the seed's `RefuseRemoteAgentSpawner`): for a
 * headless or unattended host, so `spawn_remote_agent` stays registered and the model reads a
 * clean refusal it can adapt to, instead of a missing spawner failing each job.
 */
export function refuseRemoteSpawner(reason: string): RemoteSpawner {
  const text = reason.trim() || 'remote spawns are turned off on this host';
  return {
    refusal: text,
    spawn() {
      throw new Error(text);
    },
  };
}

/** A {@link RemoteSpawner} behind the manager's {@link Executor} interface. */
export class RemoteExecutor implements Executor {
  readonly kind: string;
  readonly capabilities: ExecutorCapabilities = { isolation: 'thread', hardStop: true, exclusive: false, reruns: true, remote: true };
  readonly #spawner: RemoteSpawner;
  #live = 0;

  constructor(spawner: RemoteSpawner, kind = 'remote') {
    // Up front, not as each job's `Cannot read properties of null`.
    if (spawner === null || typeof spawner !== 'object' || typeof (spawner as Partial<RemoteSpawner>).spawn !== 'function') {
      throw new ConfigError([
        {
          field: 'RemoteExecutor spawner',
          expected: 'an object with spawn(spec) (refuseRemoteSpawner(reason) to refuse every remote spawn)',
          received: spawner === null ? 'null' : typeof spawner,
        },
      ]);
    }
    this.#spawner = spawner;
    this.kind = kind;
  }

  async run(task: JobTask, { hardStop }: ExecuteOptions): Promise<void> {
    const port = task.port;
    const jobId = task.spec.id;
    this.#live++;
    let stopRequest: StopRequest = 'cancel';
    let off: (() => void) | undefined;
    let onAbort: (() => void) | undefined;
    try {
      const handle = await this.#spawner.spawn(task.spec);
      await new Promise<void>((resolve, reject) => {
        port.on('message', (raw: unknown) => {
          const parsed = mainMessageSchema.safeParse(raw);
          if (!parsed.success || parsed.data.type !== 'cancel') return;
          stopRequest = parsed.data.reason;
          void Promise.resolve(handle.stop({ reason: stopRequest, hard: false })).catch(() => undefined);
        });
        onAbort = () => {
          void Promise.resolve(handle.stop({ reason: stopRequest, hard: true })).catch(() => undefined);
          reject(new JobError('ABORTED', jobId, `hard stop: remote job ${handle.id} was told to end`));
        };
        if (hardStop.aborted) return onAbort();
        hardStop.addEventListener('abort', onAbort, { once: true });
        off = handle.onEvent((event) => {
          if (event.type === 'started') post(port, { type: 'started', jobId, threadId: 0, at: Date.now() });
          else if (event.type === 'progress') post(port, { type: 'progress', jobId, event: event.event });
          else if (event.type === 'alert') post(port, { type: 'alert', jobId, message: event.message, severity: event.severity });
          else if (event.type === 'done' || event.type === 'sleep') {
            post(
              port,
              event.type === 'done'
                ? { type: 'done', jobId, outcome: event.outcome }
                : // A remote run's children are not this manager's to hand over: none went to it unread.
                  { type: 'sleep', jobId, state: event.state, at: event.at, reason: event.reason, seenChildren: [] },
            );
            resolve();
          } else if (event.type === 'failed') reject(event.error instanceof Error ? event.error : deserializeError(event.error));
          // A runner of another forkpool version: said, not thrown inside the runner's emitter.
          else
            reject(
              new JobError(
                'PROTOCOL_INVALID',
                jobId,
                `remote job ${handle.id} reported an unknown event ${JSON.stringify((event as { type?: unknown }).type)}`,
              ),
            );
        });
      });
    } finally {
      off?.();
      if (onAbort) hardStop.removeEventListener('abort', onAbort);
      port.close();
      this.#live--;
    }
  }

  threadCount(): number {
    return 0;
  }

  /** The spawner's refusal ({@link refuseRemoteSpawner}), if it refuses every spawn. */
  get refusal(): string | undefined {
    return this.#spawner.refusal;
  }

  /** Jobs handed to the spawner and not yet ended. */
  get pendingCount(): number {
    return this.#live;
  }

  async close(): Promise<void> {
    await this.#spawner.close?.();
  }
}

/**
 * BackgroundManagerOptions.remote as an executor: an Executor as given (the caller's to close), a
 * spawner wrapped in a {@link RemoteExecutor} (the manager's to close). `null` or a spawner-less
 * object is a ConfigError now, not a failure in each job.
 */
export function remoteExecutorOf(remote: Executor | RemoteSpawner | null | undefined): { executor: Executor; owned: boolean } | undefined {
  if (remote === undefined) return undefined;
  const given = remote as Partial<Executor> | null;
  if (given !== null && typeof given === 'object' && typeof given.run === 'function' && given.capabilities !== undefined) {
    return { executor: remote as Executor, owned: false };
  }
  return { executor: new RemoteExecutor(remote as RemoteSpawner), owned: true };
}

function post(port: MessagePort, message: unknown): void {
  try {
    port.postMessage(message);
  } catch {
    // Closed: the launch is over.
  }
}
