/**
 * forkpool's simulated OpenAI-compatible model server (`forkpool/sim`): deterministic, on
 * loopback, with settable latency and injectable faults. See server.ts for the protocol.
 */
// First: on a Node.js older than engines allows, this import throws a clear error.
import '../shared/require-node.js';
export { startSimServer, SIM_MODEL_ID } from './server.js';
export { FAULT_KINDS } from './types.js';
export { DEFAULT_RANDOM_FAULT_KINDS } from './options.js';
export type { FaultKind, FaultSpec, RecordedRequest, ScriptStep, ScriptToolCall, SimServer, SimServerOptions } from './types.js';
