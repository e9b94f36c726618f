import { startForkpoolServer } from '../server/app.js';
import { serverToken } from '../server/bind.js';
import { buildOrDispose, createCliContext, onTermination, type GlobalFlags } from './common.js';

export interface ServeFlags extends GlobalFlags {
  port?: number;
  host?: string;
  executor?: string;
}

/**
 * `forkpool serve`: the HTTP + SSE API and the jobs page. Binds loopback by default; prints
 * the token once (unless FORKPOOL_SERVER_TOKEN set it) and a sign-in link for the page.
 * SIGTERM/SIGINT: stop accepting, close the jobs within `closeTimeoutMs`, report stragglers, exit.
 * Resolves only when the server has been stopped by a signal (the exit code is the signal's).
 */
export async function serveCommand(flags: ServeFlags): Promise<number> {
  // A too-short FORKPOOL_SERVER_TOKEN is refused before anything (the simulator) starts.
  serverToken(undefined, process.env);
  const ctx = await createCliContext(flags);
  const config = flags.executor ? { ...ctx.config, executor: flags.executor as typeof ctx.config.executor } : ctx.config;
  const server = await buildOrDispose(ctx, () =>
    startForkpoolServer({
      config,
      logger: ctx.logger,
      ...(flags.port !== undefined ? { port: flags.port } : {}),
      ...(flags.host !== undefined ? { host: flags.host } : {}),
      // On stderr even with --json (stdout stays the event stream), and as a `warning` event.
      onWarning: (message) => {
        process.stderr.write(`forkpool: warning: ${message}\n`);
        ctx.event('warning', { message });
      },
    }),
  );
  const login = `${server.url}/login?token=${encodeURIComponent(server.token)}`;
  ctx.event('listening', { url: server.url, ...(server.tokenGenerated ? { token: server.token } : {}), pid: process.pid });
  if (server.tokenGenerated) ctx.note(`forkpool: token (shown once; set FORKPOOL_SERVER_TOKEN to choose one): ${server.token}`);
  if (config.ledger.path !== undefined) ctx.note(`forkpool: jobs and sessions kept in the ledger ${config.ledger.path} (a restart resumes them)`);
  ctx.note(
    `forkpool: serving ${server.url} (API: Authorization: Bearer <token>; page: ${server.tokenGenerated ? login : `${server.url}/login?token=<FORKPOOL_SERVER_TOKEN>`})`,
  );
  onTermination(async (signal) => {
    const report = await server.close();
    ctx.event('closed', { signal, cancelled: report.cancelled, stragglers: report.stragglers });
    ctx.note(
      `forkpool: closed; ${report.cancelled.length} job(s) cancelled, ${report.stragglers.length} hard-stopped${report.stragglers.length ? `: ${report.stragglers.join(', ')}` : ''}`,
    );
    await ctx.dispose();
  });
  // Serve until a signal: onTermination exits the process once the server is closed.
  return new Promise<number>(() => {});
}
