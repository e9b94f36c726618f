/**
 * `forkpool/server`: the HTTP + SSE API and the live jobs page of `forkpool serve`, to start
 * from your own process. Needs the optional peer `fastify`.
 */
// First: on a Node.js older than engines allows, this import throws a clear error.
import '../shared/require-node.js';
export { startForkpoolServer, type ForkpoolServer, type ForkpoolServerOptions } from './app.js';
export { forkpoolRoutes, type ForkpoolRoutesOptions } from './plugin.js';
export type { ServerState } from './server-state.js';
