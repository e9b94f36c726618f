import type { FastifyInstance } from 'fastify';
import type { ParentEvent } from '../../main/session/parent-agent.js';
import { errorForRecord } from '../../shared/error-detail.js';
import { errorMessage, serializeError, type SerializedError } from '../../shared/errors.js';
import { jobSummary } from '../job-view.js';
import { createSessionBody, messageBody, sessionIdParams } from '../schemas.js';
import { errorBody } from '../responses.js';
import { sessionBody, sessionCreatedBody, sessionTurnLine } from '../session-responses.js';
import { serve, type RouteDoc } from '../route-spec.js';
import type { ServerState } from '../server-state.js';

const noSuchSession = { description: 'No such session (SESSION_UNKNOWN)', schema: errorBody };

export const createSessionRoute = {
  method: 'post',
  path: '/v1/sessions',
  operationId: 'createSession',
  summary: 'Create a parent-agent session.',
  body: createSessionBody,
  responses: {
    201: { description: 'The new session', schema: sessionCreatedBody },
    429: { description: 'Already server.maxSessions sessions (TOO_MANY_SESSIONS)', schema: errorBody },
  },
} satisfies RouteDoc;

export const getSessionRoute = {
  method: 'get',
  path: '/v1/sessions/{id}',
  operationId: 'getSession',
  summary: 'A session: turns so far, whether a turn runs, its jobs.',
  params: sessionIdParams,
  responses: { 200: { description: 'The session', schema: sessionBody }, 404: noSuchSession },
} satisfies RouteDoc;

export const sendSessionMessageRoute = {
  method: 'post',
  path: '/v1/sessions/{id}/messages',
  operationId: 'sendSessionMessage',
  summary: 'One parent turn; its events streamed as NDJSON, the turn result last.',
  params: sessionIdParams,
  body: messageBody,
  responses: {
    200: {
      description: 'One JSON object a line (the schema is a line): {type:"parent",event} lines, then {type:"result",result} or {type:"error",error}',
      schema: sessionTurnLine,
      contentType: 'application/x-ndjson',
    },
    404: noSuchSession,
  },
} satisfies RouteDoc;

/** `/v1/sessions`: parent-agent sessions; a message is one turn, its events streamed as NDJSON. */
export function sessionRoutes(state: ServerState) {
  return async function plugin(app: FastifyInstance): Promise<void> {
    const turns = new Map<string, number>();
    // As in job records: code, message and a short cause chain; stacks and paths only at `debug`.
    const briefError = (error: SerializedError) => errorForRecord(error, state.config.errorDetail, state.config.workspaceRoot);

    serve(app, createSessionRoute, async (_input, _request, reply) => {
      try {
        const { id } = state.createSession();
        turns.set(id, 0);
        return reply.code(201).send({ id });
      } catch (error) {
        return reply.code(429).send({ error: { code: 'TOO_MANY_SESSIONS', message: errorMessage(error) } });
      }
    });

    serve(app, getSessionRoute, async ({ params: { id } }, _request, reply) => {
      const session = state.session(id);
      if (!session) return reply.code(404).send(unknownSession(id));
      return { id, turns: turns.get(id) ?? 0, busy: session.busy, jobs: session.manager.jobs().map((r) => jobSummary(r, state.progress.get(`${id}/${r.id}`))) };
    });

    serve(app, sendSessionMessageRoute, async ({ params: { id }, body: { input } }, _request, reply) => {
      const session = state.session(id);
      if (!session) return reply.code(404).send(unknownSession(id));
      // The turn runs while its events stream out, one JSON line each; the result is the last line.
      reply.hijack();
      const out = reply.raw;
      out.writeHead(200, { 'content-type': 'application/x-ndjson; charset=utf-8', 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' });
      const write = (line: unknown) => {
        if (!out.writableEnded) out.write(`${state.scrub(JSON.stringify(line))}\n`);
      };
      const onParent = (event: ParentEvent) => write({ type: 'parent', event });
      session.on('parent', onParent);
      const abort = new AbortController();
      // The response's close before its end means the client left; the request's 'close' only
      // means its body was read.
      out.once('close', () => {
        if (!out.writableEnded) abort.abort(new Error('client went away'));
      });
      try {
        const result = await session.submit(input, { signal: abort.signal });
        turns.set(id, (turns.get(id) ?? 0) + 1);
        write({ type: 'result', result: result.error ? { ...result, error: briefError(result.error) } : result });
      } catch (error) {
        write({ type: 'error', error: briefError(serializeError(error)) });
      } finally {
        session.off('parent', onParent);
        out.end();
      }
    });
  };
}

function unknownSession(id: string) {
  return { error: { code: 'SESSION_UNKNOWN', message: `no session ${JSON.stringify(id)}` } };
}
