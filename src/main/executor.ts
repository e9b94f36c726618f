import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ForkpoolError, JobError, errorMessage } from '../shared/errors.js';
import type { JobTask } from '../shared/protocol.js';

export type ExecutorKind = 'piscina' | 'tinypool' | 'inline' | 'worker-per-job';
/** `thread`: a job has a thread to itself; `shared`: several jobs per thread; `inline`: the main thread. */
export type Isolation = 'thread' | 'shared' | 'inline';

/** What an executor can do; the manager asks instead of telling it how to work. */
export interface ExecutorCapabilities {
  /** Where a job runs. In `shared` isolation a thread's death takes every job on it along. */
  readonly isolation: Isolation;
  /** A running job can be ended by force (its thread terminated) when it ignores a cancel. */
  readonly hardStop: boolean;
  /** A job can be asked to run on a thread of its own ({@link ExecuteOptions.exclusive}). */
  readonly exclusive: boolean;
}

/** How the manager hands a job to an executor. */
export interface ExecuteOptions {
  /** Hard stop: ends the job's thread. Cooperative cancel goes over the job's port instead. */
  hardStop: AbortSignal;
  /**
   * Run it on a thread of its own even in `shared` isolation: a job re-queued after its thread
   * died is a suspect, and alone it can kill no neighbour a second time.
   */
  exclusive?: boolean;
}

/**
 * Runs jobs somewhere: worker threads (Piscina, tinypool, a naive `new Worker()` per job) or
 * the main thread (the in-process baseline). The manager owns queueing and the cap; an
 * executor only runs what it is given.
 */
export interface Executor {
  readonly kind: ExecutorKind;
  readonly capabilities: ExecutorCapabilities;
  /**
   * Runs one task. Resolves when the task function returned (its port may still deliver
   * messages: wait for `done`). Rejects with a {@link ForkpoolError} whose code says how the
   * thread failed: `WORKER_EXITED`, `WORKER_OUT_OF_MEMORY`, `WORKER_CRASHED` or `ABORTED`.
   */
  run(task: JobTask, options: ExecuteOptions): Promise<void>;
  /** Threads alive now (0 for inline). */
  threadCount(): number;
  /** Stops every thread. Bounded; leaves no thread running. Idempotent. */
  close(): Promise<void>;
}

/** Resolves a built worker file next to this module, or under dist/ when running from src/. */
export function workerFileUrl(name: 'entry' | 'naive-entry' | 'loader' | 'job'): string {
  const file = name === 'loader' ? 'loader.cjs' : `${name}.js`;
  const beside = new URL(`../worker/${file}`, import.meta.url);
  if (existsSync(fileURLToPath(beside))) return beside.href;
  const built = new URL(`../../dist/worker/${file}`, import.meta.url);
  if (existsSync(fileURLToPath(built))) return built.href;
  throw new ForkpoolError('INTERNAL', `worker file ${file} not found; run \`npm run build\` first (looked in ${fileURLToPath(beside)} and ${fileURLToPath(built)})`);
}

/** Turns whatever a pool rejected with into a typed error that says how the thread failed. */
export function classifyWorkerFailure(error: unknown, jobId: string): ForkpoolError {
  if (error instanceof ForkpoolError) return error;
  const raw = error as { name?: unknown; code?: unknown; message?: unknown };
  const message = errorMessage(error);
  if (raw?.code === 'ERR_WORKER_OUT_OF_MEMORY' || /out of memory/i.test(message)) {
    return new JobError('WORKER_OUT_OF_MEMORY', jobId, `the job's worker thread ran out of heap: ${message}`, { cause: error });
  }
  if (raw?.name === 'AbortError' || /aborted|terminat/i.test(message)) {
    return new JobError('ABORTED', jobId, `the job's worker thread was stopped: ${message}`, { cause: error });
  }
  if (/exited with code|worker exited|process\.exit/i.test(message)) {
    return new JobError('WORKER_EXITED', jobId, `the job's worker thread exited: ${message}`, { cause: error });
  }
  return new JobError('WORKER_CRASHED', jobId, `the job's worker thread failed: ${message}`, { cause: error });
}
