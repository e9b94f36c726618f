/**
 * The Piscina (and tinypool) task entry: one call runs one background job. It holds no
 * module-level job state, so several jobs can share this thread (`shared` isolation).
 * The main thread never imports this file; it names the built file by URL.
 */
import { runJobTask } from './job.js';
import type { JobTask } from '../shared/protocol.js';

export default function runTask(task: JobTask): ReturnType<typeof runJobTask> {
  return runJobTask(task);
}
