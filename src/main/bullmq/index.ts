/**
 * `forkpool/bullmq`: jobs on a BullMQ queue in Redis, run by `ForkpoolWorker`s on any machine
 * (docs/scale-out.md "BullMQ"). Needs the optional peers `bullmq` and `ioredis`.
 */
// First: on a Node.js older than engines allows, this import throws a clear error.
import '../../shared/require-node.js';
export { BullmqExecutor, type BullmqExecutorOptions } from './executor.js';
export { ForkpoolWorker, type ForkpoolWorkerOptions, type RunReport } from './worker.js';
