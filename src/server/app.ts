import Fastify, { type FastifyInstance } from 'fastify';
import { forkpoolRoutes } from './plugin.js';
import type { Logger } from 'pino';
import type { Executor } from '../main/executors/executor.js';
import type { CloseReport } from '../main/jobs/manager.js';
import { assertModelConfigured, type ForkpoolConfig } from '../shared/config.js';
import { exposureWarning, serverToken } from './bind.js';
import { ServerState } from './server-state.js';
import type { ToolDefinition } from '../shared/tool-contract.js';

export interface ForkpoolServerOptions {
  /** Its `server` group sets host, port, body limit, CORS origins and the event buffer. */
  config: ForkpoolConfig;
  /**
   * The bearer token, at least `DEFAULTS.server.minTokenChars` (16) characters; default
   * `FORKPOOL_SERVER_TOKEN`, else a fresh one (`tokenGenerated: true`). A shorter one: CONFIG_INVALID.
   */
  token?: string;
  /** Where jobs run; default `createExecutor(config, logger, config.executor)`, closed with the server. */
  executor?: Executor;
  logger?: Logger;
  /** Overrides `config.server.port` (0: a free port). */
  port?: number;
  /** Overrides `config.server.host`. */
  host?: string;
  env?: NodeJS.ProcessEnv;
  /** Host tools (`tool()`): in the catalog of the server's manager and of every session, like `new BackgroundManager({ tools })`. */
  tools?: readonly ToolDefinition[];
  /** Hears the warning for a host that is not loopback; default `process.emitWarning` (type `ForkpoolServerWarning`). */
  onWarning?: (message: string) => void;
}

const emitServerWarning = (message: string) => process.emitWarning(message, { type: 'ForkpoolServerWarning' });

export interface ForkpoolServer {
  app: FastifyInstance;
  state: ServerState;
  /** `http://host:port`. */
  url: string;
  token: string;
  /** The token was made here (print it once; it is nowhere else). */
  tokenGenerated: boolean;
  /** Stops accepting, ends event streams and long polls, closes the jobs within `closeTimeoutMs`. Idempotent. */
  close(): Promise<CloseReport>;
}

/**
 * Builds the Fastify app of `forkpool serve` and listens. The server only reads manager
 * events and the ledger; jobs run in the executor's worker threads, so a job that runs out
 * of heap or spins in synchronous code never stops the server from answering.
 */
export async function startForkpoolServer(options: ForkpoolServerOptions): Promise<ForkpoolServer> {
  const { config } = options;
  assertModelConfigured(config);
  // Checked before anything starts: a refused token or a failed bind leaves nothing running.
  const { token, generated: tokenGenerated } = serverToken(options.token, options.env ?? process.env);
  const host = options.host ?? config.server.host;
  const exposed = exposureWarning(host);
  // Said once, by onWarning (or process.emitWarning): the log does not repeat it (issue 36: it printed twice).
  if (exposed) (options.onWarning ?? emitServerWarning)(exposed);
  else options.logger?.debug({ host }, 'serving on loopback');
  // return503OnClosing off: the plugin answers a request that arrives while closing itself, with a
  // 503 in the API's error format (Fastify's own has another shape, which the document would not hold).
  const app = Fastify({ bodyLimit: config.server.bodyLimitBytes, logger: false, forceCloseConnections: 'idle', return503OnClosing: false });
  registerCors(app, config.server.corsOrigins);
  let state: ServerState | undefined;
  // The plugin's close report, once its preClose has closed the manager and sessions.
  let reportClose: (report: CloseReport) => void = () => {};
  const stateClosed = new Promise<CloseReport>((resolve) => (reportClose = resolve));
  try {
    await app.register(forkpoolRoutes, {
      config,
      token,
      ...(options.executor ? { executor: options.executor } : {}),
      ...(options.logger ? { logger: options.logger } : {}),
      ...(options.tools ? { tools: options.tools } : {}),
      onState: (built) => (state = built),
      onClosed: (report) => reportClose(report),
    });
    await app.ready();
  } catch (error) {
    // A ledger that cannot be opened or read: nothing made here may outlive the error.
    await app.close().catch(() => {});
    throw error;
  }
  const serverState = state as ServerState;
  // MCP servers connect before the server listens, so the first job is offered their tools (a failure is the manager's to report).
  await serverState.manager.tools.start().catch(() => {});

  try {
    await app.listen({ host, port: options.port ?? config.server.port });
  } catch (error) {
    // Address in use or not on this machine: the executor's threads must not outlive the error.
    await app.close().catch(() => {});
    throw error;
  }
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;

  let closing: Promise<CloseReport> | undefined;
  const close = () => {
    closing ??= (async () => {
      // Stop accepting; the plugin's preClose ends event streams, long polls and session turns
      // as the manager and sessions close (within closeTimeoutMs). Then drop the keep-alive
      // sockets they leave, which Node would otherwise hold open until their keep-alive timeout.
      const appClosed = app.close();
      const report = await stateClosed;
      app.server.closeAllConnections();
      await appClosed;
      return report;
    })();
    return closing;
  };
  return { app, state: serverState, url, token, tokenGenerated, close };
}

/** No CORS headers at all unless origins are configured; then only for those, preflight included. */
function registerCors(app: FastifyInstance, origins: readonly string[]): void {
  if (origins.length === 0) return;
  const allowed = new Set(origins.map((o) => new URL(o).origin));
  app.addHook('onRequest', async (request, reply) => {
    const origin = request.headers.origin;
    if (typeof origin !== 'string' || !allowed.has(origin)) return;
    reply.header('access-control-allow-origin', origin).header('vary', 'Origin');
    if (request.method === 'OPTIONS') {
      return reply
        .code(204)
        .header('access-control-allow-methods', 'GET, POST, DELETE')
        .header('access-control-allow-headers', 'authorization, content-type, last-event-id')
        .header('access-control-max-age', '600')
        .send();
    }
  });
}
