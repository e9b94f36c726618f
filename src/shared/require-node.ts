/**
 * Imported first by every library entry point (`forkpool`, `forkpool/executors`, …): on a
 * Node.js outside `engines` (node-version.ts) the import throws one clear error instead of
 * failing later, somewhere inside a dependency. ES modules evaluate in import order, so
 * nothing imported after this module runs.
 */
import { ForkpoolError } from './errors.js';
import { unsupportedNodeMessage } from './node-version.js';

const problem = unsupportedNodeMessage(process.versions.node);
if (problem !== undefined) throw new ForkpoolError('NODE_UNSUPPORTED', problem);
