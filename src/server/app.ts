import type { ServerResponse } from 'node:http';
import { readFileSync } from 'node:fs';
import Fastify, { type FastifyError, type FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Executor } from '../main/executors/executor.js';
import { createExecutor } from '../main/jobs/executor-factory.js';
import type { CloseReport } from '../main/jobs/manager.js';
import { assertModelConfigured, type ForkpoolConfig } from '../shared/config.js';
import { registerAuth } from './auth.js';
import { exposureWarning, serverToken } from './bind.js';
import { eventRoutes } from './routes/events.js';
import { jobRoutes } from './routes/jobs.js';
import { messageRoutes } from './routes/messages.js';
import { sessionRoutes } from './routes/sessions.js';
import { systemRoutes } from './routes/system.js';
import { BadRequestError } from './schemas.js';
import { ServerState } from './server-state.js';

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

const VERSION = readPackageVersion();

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
  if (exposed) (options.onWarning ?? emitServerWarning)(exposed);
  options.logger?.[exposed ? 'warn' : 'debug']({ host }, exposed ?? 'serving on loopback');
  const executor = options.executor ?? createExecutor(config, options.logger, config.executor);
  let state: ServerState;
  try {
    state = new ServerState({
      config,
      executor,
      eventBufferSize: config.server.eventBufferSize,
      maxSessions: config.server.maxSessions,
      ...(options.logger ? { logger: options.logger } : {}),
    });
  } catch (error) {
    // A ledger that cannot be opened or read: the pool made here must not outlive the error.
    if (!options.executor) await executor.close();
    throw error;
  }
  const streams = new Set<ServerResponse>();

  const app = Fastify({ bodyLimit: config.server.bodyLimitBytes, logger: false, forceCloseConnections: 'idle', return503OnClosing: true });
  registerCors(app, config.server.corsOrigins);
  registerAuth(app, token);
  // Belt and braces: whatever a route builds, the model's key never leaves in a body.
  app.addHook('onSend', async (_request, _reply, payload) => (typeof payload === 'string' ? state.scrub(payload) : payload));
  app.setErrorHandler((error: FastifyError, _request, reply) => {
    if (error instanceof BadRequestError) return reply.code(400).send({ error: { code: 'BAD_REQUEST', message: error.message, issues: error.issues } });
    const status = typeof error.statusCode === 'number' && error.statusCode >= 400 && error.statusCode < 500 ? error.statusCode : 500;
    if (status === 500) options.logger?.error({ err: error }, 'request failed');
    return reply.code(status).send({ error: { code: error.code ?? 'INTERNAL', message: status === 500 ? 'internal error' : error.message } });
  });
  app.setNotFoundHandler((request, reply) =>
    reply.code(404).send({ error: { code: 'NOT_FOUND', message: `no route ${request.method} ${request.url.split('?')[0]}` } }),
  );
  await app.register(systemRoutes(state, VERSION));
  await app.register(jobRoutes(state));
  await app.register(messageRoutes(state));
  await app.register(sessionRoutes(state));
  await app.register(eventRoutes(state, streams));

  try {
    await app.listen({ host, port: options.port ?? config.server.port });
  } catch (error) {
    // Address in use or not on this machine: the executor's threads must not outlive the error.
    await Promise.allSettled([state.close(), app.close()]);
    throw error;
  }
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;

  let closing: Promise<CloseReport> | undefined;
  const close = () => {
    closing ??= (async () => {
      for (const stream of streams) stream.end();
      // Stop accepting first; in-flight long polls and session turns end as the manager and
      // sessions close (within closeTimeoutMs). Then drop the keep-alive sockets they leave,
      // which Node would otherwise hold open until their keep-alive timeout.
      const appClosed = app.close();
      const report = await state.close();
      app.server.closeAllConnections();
      await appClosed;
      return report;
    })();
    return closing;
  };
  return { app, state, url, token, tokenGenerated, close };
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

function readPackageVersion(): string {
  try {
    return (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: string }).version ?? '0.0.0';
  } catch {
    return '0.0.0';
  }
}
