import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { z } from 'zod';
import { parseRequest } from './schemas.js';
import { errorBody } from './responses.js';

/** One response of a route: what it means and the schema of its body (every response has one). */
export interface ResponseDoc {
  description: string;
  schema: z.ZodType;
  /** Default `application/json`. */
  contentType?: string;
}

/**
 * One route of the API, declared once beside its handler ({@link serve}): its path, its prose,
 * the zod schemas its request is parsed with, and its own statuses with their body schemas.
 * `/openapi.json` (openapi.ts) is generated from these same objects, so what a route parses is
 * what the document says; the statuses every route shares (401, 400, 413, 415, 500, 503) are
 * added by {@link responsesOf}.
 */
export interface RouteDoc {
  method: 'get' | 'post' | 'delete';
  /** OpenAPI style: `{id}` (the route is registered as `:id`). */
  path: string;
  /** The name a generated client gives the call: camelCase, unique. */
  operationId: string;
  summary: string;
  body?: z.ZodType;
  /**
   * The branch of a union `body` to parse a given body with, so a 400 names that branch's field
   * (the document shows the whole union). Default: `body` itself.
   */
  bodyBranch?: (raw: unknown) => z.ZodType;
  /** What an absent body is parsed as (default: `undefined`). */
  emptyBody?: unknown;
  query?: z.ZodType;
  params?: z.ZodType;
  responses: Record<number, ResponseDoc>;
  /** false: no token needed (`/healthz`). Default true. */
  auth?: boolean;
}

type Parsed<T> = T extends z.ZodType ? z.output<T> : undefined;

/** A request's parts as its route's schemas parsed them. */
export interface RouteInput<D extends RouteDoc> {
  params: Parsed<D['params']>;
  query: Parsed<D['query']>;
  body: Parsed<D['body']>;
}

/**
 * Registers `doc`'s route: its params, query and body are parsed with `doc`'s own schemas (a
 * {@link BadRequestError} 400 naming each bad field) before `handler` sees them. One declaration,
 * so the route and its document entry cannot drift apart.
 */
export function serve<const D extends RouteDoc>(
  app: FastifyInstance,
  doc: D,
  handler: (input: RouteInput<D>, request: FastifyRequest, reply: FastifyReply) => unknown,
): void {
  app.route({
    method: doc.method.toUpperCase(),
    url: doc.path.replace(/\{(\w+)\}/g, ':$1'),
    ...(doc.auth === false ? { config: { public: true } } : {}),
    handler: async (request, reply) => {
      const params = doc.params ? parseRequest(doc.params, request.params, 'params') : undefined;
      const query = doc.query ? parseRequest(doc.query, request.query, 'query') : undefined;
      const raw = request.body ?? doc.emptyBody;
      const body = doc.body ? parseRequest(doc.bodyBranch?.(raw) ?? doc.body, raw, 'body') : undefined;
      return handler({ params, query, body } as RouteInput<D>, request, reply);
    },
  });
}

/**
 * A route's responses as the server sends them: its own, and those every route shares (the
 * auth hook's 401, the request parsers' 400, the body limit's 413 and the content-type
 * parser's 415 (plugin.ts error handler), an unexpected error's 500, a closing server's 503: plugin.ts).
 */
export function responsesOf(route: RouteDoc): Record<number, ResponseDoc> {
  const shared: Record<number, ResponseDoc> = {};
  if (route.body || route.query || route.params || route.method === 'post')
    shared[400] = { description: 'A bad request: every bad field named (BAD_REQUEST), or a body that is not JSON', schema: errorBody };
  if (route.auth !== false) shared[401] = { description: 'Missing or wrong bearer token (UNAUTHORIZED)', schema: errorBody };
  if (route.method === 'post') {
    shared[413] = { description: 'The body is over server.bodyLimitBytes (FST_ERR_CTP_BODY_TOO_LARGE)', schema: errorBody };
    shared[415] = { description: 'A body that is not application/json (FST_ERR_CTP_INVALID_MEDIA_TYPE)', schema: errorBody };
  }
  shared[500] = { description: 'An unexpected error (INTERNAL; the server logs it)', schema: errorBody };
  shared[503] = { description: 'The server is closing (SERVER_CLOSING)', schema: errorBody };
  return { ...shared, ...route.responses };
}
