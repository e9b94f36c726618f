/**
 * `forkpool/tinypool`: tinypool behind the `Executor` interface, for comparison (the bench).
 * Needs the optional peer `tinypool`.
 */
// First: on a Node.js older than engines allows, this import throws a clear error.
import './shared/require-node.js';
export { TinypoolExecutor } from './main/executors/tinypool-executor.js';
