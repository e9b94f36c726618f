import type { FastifyInstance } from 'fastify';
import type { ParentEvent } from '../../main/session/parent-agent.js';
import { errorForRecord } from '../../shared/error-detail.js';
import { errorMessage, serializeError, type SerializedError } from '../../shared/errors.js';
import { jobSummary } from '../job-view.js';
import { createSessionBody, messageBody, parseRequest, sessionIdParams } from '../schemas.js';
import type { ServerState } from '../server-state.js';

/** `/v1/sessions`: parent-agent sessions; a message is one turn, its events streamed as NDJSON. */
export function sessionRoutes(state: ServerState) {
  return async function plugin(app: FastifyInstance): Promise<void> {
    const turns = new Map<string, number>();
    // As in job records: code, message and a short cause chain; stacks and paths only at `debug`.
    const briefError = (error: SerializedError) => errorForRecord(error, state.config.errorDetail, state.config.workspaceRoot);

    app.post('/v1/sessions', async (request, reply) => {
      parseRequest(createSessionBody, request.body ?? undefined, 'body');
      try {
        const { id } = state.createSession();
        turns.set(id, 0);
        return reply.code(201).send({ id });
      } catch (error) {
        return reply.code(429).send({ error: { code: 'TOO_MANY_SESSIONS', message: errorMessage(error) } });
      }
    });

    app.get('/v1/sessions/:id', async (request, reply) => {
      const { id } = parseRequest(sessionIdParams, request.params, 'params');
      const session = state.session(id);
      if (!session) return reply.code(404).send(unknownSession(id));
      return { id, turns: turns.get(id) ?? 0, busy: session.busy, jobs: session.manager.jobs().map((r) => jobSummary(r, state.progress.get(`${id}/${r.id}`))) };
    });

    app.post('/v1/sessions/:id/messages', async (request, reply) => {
      const { id } = parseRequest(sessionIdParams, request.params, 'params');
      const { input } = parseRequest(messageBody, request.body, 'body');
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
