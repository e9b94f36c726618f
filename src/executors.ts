/**
 * `forkpool/executors`: where jobs run. Pass one to `BackgroundManager` or `AgentSession` as
 * `executor` (by default a Piscina executor is made from `config.background`). The BullMQ
 * executor and worker are on `forkpool/bullmq`, the tinypool one on `forkpool/tinypool`: their
 * packages are optional peers, so `createExecutor` loads them on the first job.
 */
// First: on a Node.js older than engines allows, this import throws a clear error.
import './shared/require-node.js';
export { createExecutor, threadsFor } from './main/jobs/executor-factory.js';
export type { Executor, ExecutorKind, ExecutorCapabilities, Isolation, ExecuteOptions, TaskFailure } from './main/executors/executor.js';
export { PiscinaExecutor, type PiscinaExecutorOptions } from './main/executors/piscina-executor.js';
export { InlineExecutor, WorkerPerJobExecutor } from './main/executors/other-executors.js';
export { LazyExecutor } from './main/executors/lazy-executor.js';
export {
  RemoteExecutor,
  refuseRemoteSpawner,
  type RemoteSpawner,
  type RemoteHandle,
  type RemoteJobEvent,
  type RemoteStatus,
  type SleepState,
} from './main/remote/spawner.js';
