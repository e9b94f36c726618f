/**
 * A worker entry for the hard-stop probe: a job that says it started, reports a model request,
 * then spins in synchronous code and never reads its port, so a cooperative cancel cannot reach
 * it; only ending its thread ends it. The spin is bounded (SPIN_LIMIT_MS) so nothing runs forever.
 *
 * Used as a Piscina/tinypool task (the default export) and as a `new Worker()` entry (the task
 * in `workerData`, as the worker-per-job executor passes it).
 */
import { threadId, workerData } from 'node:worker_threads';
import type { JobTask, WorkerMessage } from '#dist/shared/protocol.js';

const SPIN_LIMIT_MS = 20_000;

export default function stubbornJob(task: JobTask): { jobId: string } {
  const jobId = task.spec.id;
  const post = (message: WorkerMessage) => task.port.postMessage(message);
  post({ type: 'started', jobId, threadId, at: Date.now() });
  post({ type: 'progress', jobId, event: { type: 'model_request', iteration: 1 } });
  // Port messages are delivered only once this returns to the event loop: it never does in time.
  const until = Date.now() + SPIN_LIMIT_MS;
  while (Date.now() < until) {
    /* spin */
  }
  post({ type: 'done', jobId, outcome: { stopReason: 'error', text: '', usage: {}, iterations: 1 } });
  task.port.close();
  return { jobId };
}

const data: unknown = workerData;
if (data && typeof data === 'object' && 'spec' in data && 'port' in data) stubbornJob(data as JobTask);
