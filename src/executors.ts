/**
 * `forkpool/executors`: where jobs run. Pass one to `BackgroundManager` or `AgentSession` as
 * `executor` (by default a Piscina executor is made from `config.background`).
 */
// First: on a Node.js older than engines allows, this import throws a clear error.
import './shared/require-node.js';
export { createExecutor, threadsFor } from './main/executor-factory.js';
export type { Executor, ExecutorKind, ExecutorCapabilities, Isolation, ExecuteOptions, TaskFailure } from './main/executor.js';
export { PiscinaExecutor, type PiscinaExecutorOptions } from './main/piscina-executor.js';
export { InlineExecutor, TinypoolExecutor, WorkerPerJobExecutor } from './main/other-executors.js';
export { BullmqExecutor, type BullmqExecutorOptions } from './bullmq/executor.js';
export { ForkpoolWorker, type ForkpoolWorkerOptions, type RunReport } from './bullmq/worker.js';
export { RemoteExecutor, type RemoteSpawner, type RemoteHandle, type RemoteJobEvent, type RemoteStatus } from './remote/spawner.js';
