import { ForkpoolError } from '../../shared/errors.js';
import { taskPorts, type JobTask } from '../../shared/protocol.js';
import type { ExecuteOptions, Executor, ExecutorCapabilities, ExecutorHealth, ExecutorKind } from './executor.js';

/**
 * An executor whose implementation loads on its first job: `createExecutor` stays synchronous
 * while the packages of the BullMQ and tinypool executors (optional peers) load only when such
 * an executor runs something. A failed load (a missing package) fails each job with that error.
 */
export class LazyExecutor implements Executor {
  readonly kind: ExecutorKind;
  readonly capabilities: ExecutorCapabilities;
  readonly #load: () => Promise<Executor>;
  #loading: Promise<Executor> | undefined;
  #loaded: Executor | undefined;
  #closed = false;

  constructor(kind: ExecutorKind, capabilities: ExecutorCapabilities, load: () => Promise<Executor>) {
    this.kind = kind;
    this.capabilities = capabilities;
    this.#load = load;
  }

  /** The implementation, once loaded (undefined before the first job or {@link ready}). */
  get loaded(): Executor | undefined {
    return this.#loaded;
  }

  /** Loads the implementation now (once); rejects as a job would, e.g. with PACKAGE_MISSING. */
  ready(): Promise<Executor> {
    this.#loading ??= this.#load().then((executor) => {
      this.#loaded = executor;
      // Closed while it loaded: nothing may keep running.
      if (this.#closed) void executor.close();
      return executor;
    });
    return this.#loading;
  }

  async run(task: JobTask, options: ExecuteOptions): Promise<void> {
    let executor: Executor;
    try {
      if (this.#closed) throw new ForkpoolError('ABORTED', `the ${this.kind} executor is closed`);
      executor = await this.ready();
    } catch (error) {
      // Nothing will use the job's ports: close them, so its attempt sees the end.
      for (const port of taskPorts(task)) port.close();
      throw error;
    }
    return executor.run(task, options);
  }

  threadCount(): number {
    return this.#loaded?.threadCount() ?? 0;
  }

  health(): ExecutorHealth {
    return this.#loaded?.health?.() ?? { ok: true };
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#loading === undefined) return;
    const executor = await this.#loading.catch(() => undefined);
    await executor?.close();
  }
}
