import { Worker } from 'node:worker_threads';
import { taskPorts, type JobTask } from '../../shared/protocol.js';
import { scrubEnv } from '../../shared/tools/secrets.js';
import { JobError } from '../../shared/errors.js';
import { classifyWorkerFailure, throwIfTaskFailed, workerFileUrl, type ExecuteOptions, type Executor, type ExecutorCapabilities } from './executor.js';

/**
 * The in-process baseline: the job's tool loop runs as an async function on the main thread,
 * as the well-known agents run their sub-agents. No hard stop exists: cancel is cooperative only.
 */
export class InlineExecutor implements Executor {
  readonly kind = 'inline' as const;
  readonly capabilities: ExecutorCapabilities = { isolation: 'inline', hardStop: false, exclusive: false };

  async run(task: JobTask, _options: ExecuteOptions): Promise<void> {
    // The job runtime lives in src/worker; the main thread loads it by URL, never by import.
    const runtime = (await import(workerFileUrl('job'))) as { runJobTask(task: JobTask): Promise<unknown> };
    try {
      await runtime.runJobTask(task);
    } catch (error) {
      throwIfTaskFailed({ forkpoolTaskFailed: error }, task.spec.id);
    }
  }

  threadCount(): number {
    return 0;
  }

  async close(): Promise<void> {}
}

/** The naive way: a fresh `new Worker()` per job, ended when the job is. For the bench. */
export class WorkerPerJobExecutor implements Executor {
  readonly kind = 'worker-per-job' as const;
  readonly capabilities: ExecutorCapabilities = { isolation: 'thread', hardStop: true, exclusive: true };
  readonly #live = new Set<Worker>();
  readonly #heapMb: number;
  readonly #file: string;

  constructor(options: { heapMb: number; workerFile?: string }) {
    this.#heapMb = options.heapMb;
    this.#file = options.workerFile ?? workerFileUrl('naive-entry');
  }

  run(task: JobTask, { hardStop }: ExecuteOptions): Promise<void> {
    return new Promise((resolve, reject) => {
      const worker = new Worker(new URL(this.#file), {
        workerData: task,
        transferList: taskPorts(task),
        resourceLimits: { maxOldGenerationSizeMb: this.#heapMb },
        env: scrubEnv(process.env),
      });
      this.#live.add(worker);
      let failure: unknown;
      const onAbort = () => void worker.terminate();
      hardStop.addEventListener('abort', onAbort, { once: true });
      worker.on('error', (error) => (failure = error));
      worker.on('exit', (code) => {
        this.#live.delete(worker);
        hardStop.removeEventListener('abort', onAbort);
        if (hardStop.aborted) reject(new JobError('ABORTED', task.spec.id, 'terminated by hard stop'));
        else if (failure !== undefined) reject(classifyWorkerFailure(failure, task.spec.id));
        else if (code !== 0) reject(classifyWorkerFailure(new Error(`worker exited with code: ${code}`), task.spec.id));
        else resolve();
      });
    });
  }

  threadCount(): number {
    return this.#live.size;
  }

  async close(): Promise<void> {
    await Promise.all([...this.#live].map((w) => w.terminate()));
  }
}
