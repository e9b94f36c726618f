import { Tinypool } from 'tinypool';
import { TIMINGS } from '../../shared/fixed-limits.js';
import { taskPorts, type JobTask } from '../../shared/protocol.js';
import { scrubEnv } from '../../shared/tools/secrets.js';
import { classifyWorkerFailure, throwIfTaskFailed, workerFileUrl, type ExecuteOptions, type Executor, type ExecutorCapabilities } from './executor.js';

/** tinypool behind the same interface, for comparison. One job per thread; hard stop by signal. */
export class TinypoolExecutor implements Executor {
  readonly kind = 'tinypool' as const;
  readonly capabilities: ExecutorCapabilities = { isolation: 'thread', hardStop: true, exclusive: true };
  readonly #pool: Tinypool;
  #closed = false;

  constructor(options: { threads: number; heapMb: number; workerFile?: string }) {
    this.#pool = new Tinypool({
      filename: options.workerFile ?? workerFileUrl('entry'),
      minThreads: 1,
      maxThreads: Math.max(1, options.threads),
      useAtomics: false,
      // tinypool's default (0) ends an idle thread at once, so a fan-out pays a thread start per job.
      idleTimeout: TIMINGS.poolIdleTimeoutMs,
      resourceLimits: { maxOldGenerationSizeMb: options.heapMb },
      env: scrubEnv(process.env),
    });
  }

  async run(task: JobTask, { hardStop }: ExecuteOptions): Promise<void> {
    let value: unknown;
    try {
      value = await this.#pool.run(task, { transferList: taskPorts(task), signal: hardStop });
    } catch (error) {
      throw classifyWorkerFailure(error, task.spec.id);
    }
    throwIfTaskFailed(value, task.spec.id);
  }

  threadCount(): number {
    return this.#pool.threads.length;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#pool.destroy();
  }
}
