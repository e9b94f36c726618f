import type { FastifyInstance } from 'fastify';
import { renderMetrics } from '../metrics.js';
import { openApiDocument } from '../openapi.js';
import type { ServerState } from '../server-state.js';
import { PAGE_CSS, PAGE_SCRIPT, pageHtml } from '../page/index.js';

/** The page's headers: nothing from elsewhere, no framing, no sniffing. */
const PAGE_HEADERS = {
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
};

/** `/healthz` (no token), `/metrics`, `/openapi.json` and the jobs page. */
export function systemRoutes(state: ServerState, version: string) {
  return async function plugin(app: FastifyInstance): Promise<void> {
    // Its one server is where the plugin is mounted, so a client generated from it calls the right paths.
    const document = openApiDocument(version, { prefix: app.prefix });
    // `ok` is the process: it serves. `ledger` says whether the durable ledger writes (docs/durability.md).
    // `executor`: whether its jobs can run (BullMQ: false while no worker serves the queue).
    app.get('/healthz', { config: { public: true } }, async () => ({
      ok: true,
      uptimeMs: Date.now() - state.startedAt,
      ledger: state.ledgerHealth(),
      executor: state.manager.executor.health?.() ?? { ok: true },
    }));
    app.get('/metrics', async (_request, reply) => reply.type('text/plain; version=0.0.4; charset=utf-8').send(renderMetrics(state)));
    app.get('/openapi.json', async () => document);
    app.get('/', async (_request, reply) => reply.headers(PAGE_HEADERS).type('text/html; charset=utf-8').send(pageHtml(app.prefix)));
    app.get('/page.js', async (_request, reply) => reply.headers(PAGE_HEADERS).type('text/javascript; charset=utf-8').send(PAGE_SCRIPT));
    app.get('/page.css', async (_request, reply) => reply.headers(PAGE_HEADERS).type('text/css; charset=utf-8').send(PAGE_CSS));
  };
}
