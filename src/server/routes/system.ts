import type { FastifyInstance } from 'fastify';
import { renderMetrics } from '../metrics.js';
import type { ServerState } from '../server-state.js';
import { PAGE_CSS, PAGE_SCRIPT, pageHtml } from '../page/index.js';
import { healthBody, openApiBody, textBody } from '../responses.js';
import { serve, type RouteDoc } from '../route-spec.js';

/** The page's headers: nothing from elsewhere, no framing, no sniffing. */
const PAGE_HEADERS = {
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
};

export const getHealthRoute = {
  method: 'get',
  path: '/healthz',
  operationId: 'getHealth',
  summary: 'Liveness, the ledger and the executor; no token needed.',
  auth: false,
  responses: { 200: { description: 'It serves', schema: healthBody } },
} satisfies RouteDoc;

export const getMetricsRoute = {
  method: 'get',
  path: '/metrics',
  operationId: 'getMetrics',
  summary: 'Prometheus text: jobs by state, queue depth, threads, tokens by role and model, loop delay, job durations.',
  responses: { 200: { description: 'Prometheus text exposition 0.0.4', schema: textBody, contentType: 'text/plain' } },
} satisfies RouteDoc;

export const getOpenApiRoute = {
  method: 'get',
  path: '/openapi.json',
  operationId: 'getOpenApi',
  summary: 'This document.',
  responses: { 200: { description: 'OpenAPI 3.1', schema: openApiBody } },
} satisfies RouteDoc;

/**
 * The plugin's routes that are the page's, not the API's: a browser's HTML, script, style and
 * sign-in redirect. They are not in the document (a generated client has no use for them).
 */
export const PAGE_ROUTES = ['GET /', 'GET /page.js', 'GET /page.css', 'GET /login'] as const;

/**
 * `/healthz` (no token), `/metrics`, `/openapi.json` and the jobs page. `openApi` builds the
 * document for where the plugin is mounted (openapi.ts; passed in, so this module, whose routes
 * the document lists, does not import it).
 */
export function systemRoutes(state: ServerState, openApi: (prefix: string) => Record<string, unknown>) {
  return async function plugin(app: FastifyInstance): Promise<void> {
    // Its one server is where the plugin is mounted, so a client generated from it calls the right paths.
    const document = openApi(app.prefix);
    // `ok` is the process: it serves. `ledger` says whether the durable ledger writes (docs/durability.md).
    // `executor`: whether its jobs can run (BullMQ: false while no worker serves the queue).
    serve(app, getHealthRoute, async () => ({
      ok: true,
      uptimeMs: Date.now() - state.startedAt,
      ledger: state.ledgerHealth(),
      executor: state.manager.executor.health?.() ?? { ok: true },
    }));
    serve(app, getMetricsRoute, async (_input, _request, reply) => reply.type('text/plain; version=0.0.4; charset=utf-8').send(renderMetrics(state)));
    serve(app, getOpenApiRoute, async () => document);
    app.get('/', async (_request, reply) => reply.headers(PAGE_HEADERS).type('text/html; charset=utf-8').send(pageHtml(app.prefix)));
    app.get('/page.js', async (_request, reply) => reply.headers(PAGE_HEADERS).type('text/javascript; charset=utf-8').send(PAGE_SCRIPT));
    app.get('/page.css', async (_request, reply) => reply.headers(PAGE_HEADERS).type('text/css; charset=utf-8').send(PAGE_CSS));
  };
}
