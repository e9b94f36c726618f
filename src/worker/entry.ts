/**
 * The Piscina (and tinypool) task entry: one call runs one background job. It holds no
 * module-level job state, so several jobs can share this thread (`shared` isolation).
 * The main thread never imports this file; it names the built file by URL.
 */
import { runJobTask } from './job.js';
import type { JobTask } from '../shared/protocol.js';

/** A throw comes back as a value (see TaskFailure in src/main/executor.ts): the thread lives on. */
export default function runTask(task: JobTask): Promise<unknown> {
  return runJobTask(task).catch((error: unknown) => ({ forkpoolTaskFailed: error }));
}
