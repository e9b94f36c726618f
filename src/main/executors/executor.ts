import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ForkpoolError, JobError, errorMessage } from '../../shared/errors.js';
import type { JobTask } from '../../shared/protocol.js';
import type { LinkedPort } from './thread-links.js';

export type ExecutorKind = 'piscina' | 'tinypool' | 'inline' | 'worker-per-job' | 'bullmq' | (string & {});
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
  /**
   * A launch may report `started` more than once: a remote runner re-runs a job whose worker
   * died or lost it. Each start counts as an attempt in the job's record.
   */
  readonly reruns?: boolean;
  /**
   * Jobs run in other processes, maybe on other machines (their child processes are not ours to
   * kill). Its tasks' ports are then in-process ends (local-ports.ts), not MessagePorts: it may
   * only `postMessage`, listen for `message` and `close`, and `close()` them, never transfer them.
   */
  readonly remote?: boolean;
  /**
   * A remote executor that carries a `steer` message on a job's port to where the job runs
   * (send_to_background_agent to a running job). Local executors always do; a remote one
   * without it is sent messages only while a job is queued.
   */
  readonly steering?: boolean;
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
   * messages: wait for `done`). Rejects with a {@link ForkpoolError} whose code says how it
   * failed: `TASK_FAILED`, `THREAD_LOST`, `WORKER_OUT_OF_MEMORY` or `ABORTED`.
   */
  run(task: JobTask, options: ExecuteOptions): Promise<void>;
  /** Threads alive now (0 for inline). */
  threadCount(): number;
  /** Stops every thread. Bounded; leaves no thread running. Idempotent. */
  close(): Promise<void>;
  /**
   * A job's end of a port the executor provides, in place of a MessageChannel of its own: the
   * task then carries its {@link LinkedPort.id} as `linkId` and no `port` (Piscina: its thread's
   * link, see thread-links.ts).
   */
  openPort?(): LinkedPort;
  /** Whether it can run what it is given now (`/healthz` shows it); absent: always. */
  health?(): ExecutorHealth;
}

/** An executor's own word on whether its jobs can run (e.g. BullMQ: is any worker connected?). */
export interface ExecutorHealth {
  ok: boolean;
  /** Why not, in a sentence a person acts on. */
  problem?: string;
  /** Since when (epoch ms) it has not been ok. */
  since?: number;
}

/**
 * Where dist/worker/ is from this module: from the library bundle (dist/bundle/), from tsc's
 * output (dist/main/executors/), and from src/main/executors/ when tests run the sources.
 */
const WORKER_DIRS = ['../worker/', '../../worker/', '../../../dist/worker/'];

/**
 * Resolves a built worker file next to this module, or under dist/ when running from src/.
 * `FORKPOOL_WORKER_BUNDLE=0` skips the bundle (to compare, or to debug with per-module stacks).
 */
export function workerFileUrl(name: 'entry' | 'naive-entry' | 'loader' | 'job'): string {
  // A thread's entry comes from the bundle when the build made one (scripts/bundle-worker.mjs):
  // one tree-shaken file per thread instead of ~290 modules, each parsed and compiled per isolate.
  if ((name === 'entry' || name === 'naive-entry') && process.env.FORKPOOL_WORKER_BUNDLE !== '0') {
    for (const dir of WORKER_DIRS) {
      const bundled = new URL(`${dir}bundle/${name}.js`, import.meta.url);
      if (existsSync(fileURLToPath(bundled))) return bundled.href;
    }
  }
  // The inline executor's job runtime, when this module is in the library bundle
  // (scripts/bundle-library.mjs): the bundle's own entry, so the main thread holds one copy of
  // the shared modules. From dist/main/ no such file is beside this one.
  if (name === 'job') {
    const sibling = new URL('./worker-job.js', import.meta.url);
    if (existsSync(fileURLToPath(sibling))) return sibling.href;
  }
  const file = name === 'loader' ? 'loader.cjs' : `${name}.js`;
  const candidates = WORKER_DIRS.map((dir) => new URL(`${dir}${file}`, import.meta.url));
  const found = candidates.find((url) => existsSync(fileURLToPath(url)));
  if (found) return found.href;
  throw new ForkpoolError(
    'INTERNAL',
    `worker file ${file} not found; run \`npm run build\` first (looked in ${candidates.map((url) => fileURLToPath(url)).join(', ')})`,
  );
}

/**
 * What a worker hands back when the job's task function threw: the loader (and the entry)
 * catch the throw and resolve with this instead, so a throw in a living thread is never
 * mistaken for a dead thread, and no message text has to be parsed to tell them apart.
 */
export interface TaskFailure {
  forkpoolTaskFailed: unknown;
}

export function isTaskFailure(value: unknown): value is TaskFailure {
  return typeof value === 'object' && value !== null && 'forkpoolTaskFailed' in value;
}

/** Throws `TASK_FAILED` when a task's value says its function threw. */
export function throwIfTaskFailed(value: unknown, jobId: string): void {
  if (!isTaskFailure(value)) return;
  const cause = value.forkpoolTaskFailed;
  throw new JobError('TASK_FAILED', jobId, `the job's task function threw: ${errorMessage(cause)}`, { cause });
}

/**
 * Turns whatever a pool rejected with into a typed error that says how the thread failed:
 * out of heap (Node's own error code), stopped (an abort), or lost (it died: an uncaught error
 * or `process.exit`). A task function that threw never gets here (see {@link TaskFailure}).
 */
export function classifyWorkerFailure(error: unknown, jobId: string): ForkpoolError {
  if (error instanceof ForkpoolError) return error;
  const raw = error as { name?: unknown; code?: unknown } | null;
  const message = errorMessage(error);
  if (raw?.code === 'ERR_WORKER_OUT_OF_MEMORY') {
    return new JobError('WORKER_OUT_OF_MEMORY', jobId, `the job's worker thread ran out of heap: ${message}`, { cause: error });
  }
  if (raw?.name === 'AbortError') return new JobError('ABORTED', jobId, `the job's worker thread was stopped: ${message}`, { cause: error });
  return new JobError('THREAD_LOST', jobId, `the job's worker thread died: ${message}`, { cause: error });
}
