/**
 * The Piscina (and tinypool) task entry: one call runs one background job. It holds no
 * module-level job state, so several jobs can share this thread (`shared` isolation).
 * The main thread never imports this file; it names the built file by URL.
 */
import { runJobTask } from './job.js';
import type { JobTask } from '../shared/protocol.js';

/** A throw comes back as a value (see TaskFailure in src/main/executor.ts): the thread lives on. */
export default function runTask(task: JobTask): Promise<unknown> {
  const running = runJobTask(task).catch((error: unknown) => ({ forkpoolTaskFailed: error }));
  forgetClone(task);
  return running;
}

/**
 * The pool keeps the task it received until the job ends. Its spec (config included) was read,
 * validated and copied before runJobTask's first await, and the loader has written the thread
 * slot: without them, the clone no longer costs a second copy of the config per job in flight.
 * Only here: this thread owns its clone (the inline executor's task is the main thread's own).
 */
function forgetClone(task: JobTask): void {
  const clone = task as Partial<JobTask>;
  delete clone.spec;
  delete clone.threadSlot;
}
