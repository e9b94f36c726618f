/**
 * The routes of `forkpool serve` as a Fastify plugin, to mount in an app of your own:
 *
 *   const app = Fastify();
 *   await app.register(forkpoolRoutes, { config, token, prefix: '/forkpool' });
 *   await app.listen({ port: 3000 });   // GET /forkpool/v1/jobs, the page at /forkpool/
 *
 * Encapsulated: its token check, error format and key scrubbing apply to its own routes only,
 * never to the app's. It owns a ServerState (the manager, sessions, the event hub and, unless
 * one is given, the executor's worker threads), closed when the app closes: long polls and event
 * streams end first (preClose), so `app.close()` is not held up by them.
 */
import type { ServerResponse } from 'node:http';
import { readFileSync } from 'node:fs';
import type { FastifyError, FastifyInstance, FastifyPluginAsync } from 'fastify';
import type { Logger } from 'pino';
import type { Executor } from '../main/executors/executor.js';
import { createExecutor } from '../main/jobs/executor-factory.js';
import type { CloseReport } from '../main/jobs/manager.js';
import { assertModelConfigured, type ForkpoolConfig } from '../shared/config.js';
import type { ToolDefinition } from '../shared/tool-contract.js';
import { registerAuth } from './auth.js';
import { serverToken } from './bind.js';
import { ConfigError } from '../shared/errors.js';
import { approvalRoutes } from './routes/approvals.js';
import { eventRoutes } from './routes/events.js';
import { jobRoutes } from './routes/jobs.js';
import { messageRoutes } from './routes/messages.js';
import { resumeRoutes } from './routes/resume.js';
import { waitRoutes } from './routes/waits.js';
import { restartRoutes } from './routes/restart.js';
import { worktreeRoutes } from './routes/worktree.js';
import { bulkCancelRoutes } from './routes/bulk-cancel.js';
import { sessionRoutes } from './routes/sessions.js';
import { systemRoutes } from './routes/system.js';
import { openApiDocument } from './openapi.js';
import { transcriptRoutes } from './routes/transcript.js';
import { BadRequestError } from './schemas.js';
import { SERVER_SCOPE, ServerState } from './server-state.js';

export interface ForkpoolRoutesOptions {
  config: ForkpoolConfig;
  /** The bearer token every route but `/healthz` and `/login` needs (16 characters or more: see serverToken). */
  token: string;
  /** Where jobs run; default `createExecutor(config, logger, config.executor)`, closed with the app. */
  executor?: Executor;
  logger?: Logger;
  /** Host tools for the server's manager and every session (see ForkpoolServerOptions.tools). */
  tools?: readonly ToolDefinition[];
  /** Receives the plugin's state once built: its manager (`state.manager`), sessions and event hub, for code beside the routes. */
  onState?: (state: ServerState) => void;
  /** Hears the close report when the app closes (jobs stopped, stragglers). */
  onClosed?: (report: CloseReport) => void;
}

const VERSION = readPackageVersion();

/** The plugin; see the module comment. Registering it builds the state; a bad config or ledger rejects the register. */
export const forkpoolRoutes: FastifyPluginAsync<ForkpoolRoutesOptions> = async (app, options) => {
  const { config } = options;
  assertModelConfigured(config);
  // Required here (no generated one: nobody would see it), and as long as `forkpool serve` asks.
  if (typeof options.token !== 'string') throw new ConfigError([{ field: 'token', expected: 'the bearer token the routes accept', received: 'nothing' }]);
  serverToken(options.token, {});
  // With a ledger, BullMQ job ids derive from it (and each manager's scope): a restarted server adopts its queued jobs.
  const executor = options.executor ?? createExecutor(config, options.logger, config.executor, undefined, SERVER_SCOPE);
  let state: ServerState;
  try {
    state = new ServerState({
      config,
      executor,
      eventBufferSize: config.server.eventBufferSize,
      maxSessions: config.server.maxSessions,
      token: options.token,
      ...(options.logger ? { logger: options.logger } : {}),
      ...(options.tools ? { tools: options.tools } : {}),
    });
  } catch (error) {
    // A ledger that cannot be opened or read: the pool made here must not outlive the error.
    if (!options.executor) await executor.close();
    throw error;
  }
  options.onState?.(state);
  const streams = new Set<ServerResponse>();
  const lifecycle = { closing: false };
  await mountRoutes(app, state, options, streams, lifecycle);
  let closing: Promise<CloseReport> | undefined;
  const closeState = () => (closing ??= state.close());
  // Before the server stops: end the event streams, and close the manager and sessions, which ends long polls and turns.
  app.addHook('preClose', async () => {
    lifecycle.closing = true;
    for (const stream of streams) stream.end();
    options.onClosed?.(await closeState());
  });
  app.addHook('onClose', async () => {
    await closeState();
  });
};

async function mountRoutes(
  app: FastifyInstance,
  state: ServerState,
  options: ForkpoolRoutesOptions,
  streams: Set<ServerResponse>,
  lifecycle: { closing: boolean },
): Promise<void> {
  // A request that arrives while the app closes: a 503 in the API's error format (the document's
  // 503). First, so it is answered before the token check. An app whose `return503OnClosing` is on
  // (Fastify's default; startForkpoolServer turns it off) answers those with Fastify's own body instead.
  app.addHook('onRequest', async (_request, reply) => {
    if (lifecycle.closing)
      return reply
        .code(503)
        .header('connection', 'close')
        .send({ error: { code: 'SERVER_CLOSING', message: 'the server is closing' } });
  });
  registerAuth(app, options.token);
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
  await app.register(systemRoutes(state, (prefix) => openApiDocument(VERSION, { prefix })));
  await app.register(jobRoutes(state));
  await app.register(transcriptRoutes(state));
  await app.register(messageRoutes(state));
  await app.register(resumeRoutes(state));
  await app.register(waitRoutes(state));
  await app.register(restartRoutes(state));
  await app.register(worktreeRoutes(state));
  await app.register(bulkCancelRoutes(state));
  await app.register(approvalRoutes(state));
  await app.register(sessionRoutes(state));
  await app.register(eventRoutes(state, streams));
}

function readPackageVersion(): string {
  try {
    return (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: string }).version ?? '0.0.0';
  } catch {
    return '0.0.0';
  }
}
