/**
 * Entry for the bench's naive executor: one `new Worker()` per job, the task in `workerData`
 * and the ports transferred with it. Exits when the job is done.
 */
import { workerData } from 'node:worker_threads';
import { runJobTask } from './job.js';
import type { JobTask } from '../shared/protocol.js';

await runJobTask(workerData as JobTask);
