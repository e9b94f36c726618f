import type { FastifyInstance } from 'fastify';
import { jobIdParams, parseRequest, transcriptQuery } from '../schemas.js';
import type { ServerState } from '../server-state.js';

/**
 * `GET /v1/jobs/:id/transcript?offset=&limit=`: one page of a job's transcript (its kept steps;
 * `:id` a ref, so a session's job too;
 * see src/main/jobs/transcripts.ts), already redacted; the server's key scrubber runs on it too.
 */
export function transcriptRoutes(state: ServerState) {
  return async function plugin(app: FastifyInstance): Promise<void> {
    app.get('/v1/jobs/:id/transcript', async (request, reply) => {
      const { id } = parseRequest(jobIdParams, request.params, 'params');
      const { offset, limit } = parseRequest(transcriptQuery, request.query, 'query');
      // A ref: the server's job by id or name, a session's as `session/id` (as GET /v1/jobs/:id takes it).
      const found = state.findJob(id);
      const record = found?.record;
      const page = found && found.manager.transcript(found.record.id, { offset, limit });
      if (!record || !page) {
        return reply.code(404).send({ error: { code: 'JOB_UNKNOWN', message: `no job ${JSON.stringify(id)} (never started, or forgotten by retention)` } });
      }
      const next = page.offset + page.steps.length < page.kept ? page.offset + page.steps.length : null;
      return { ...page, next, dropped: record.resultDropped === true };
    });
  };
}
