import type { FastifyInstance } from 'fastify';
import { jobIdParams, parseRequest, transcriptQuery } from '../schemas.js';
import type { ServerState } from '../server-state.js';

/**
 * `GET /v1/jobs/:id/transcript?offset=&limit=`: one page of a job's transcript (its kept steps;
 * see src/main/jobs/transcripts.ts), already redacted; the server's key scrubber runs on it too.
 */
export function transcriptRoutes(state: ServerState) {
  return async function plugin(app: FastifyInstance): Promise<void> {
    app.get('/v1/jobs/:id/transcript', async (request, reply) => {
      const { id } = parseRequest(jobIdParams, request.params, 'params');
      const { offset, limit } = parseRequest(transcriptQuery, request.query, 'query');
      const record = state.manager.get(id);
      const page = record && state.manager.transcript(id, { offset, limit });
      if (!record || !page) {
        return reply.code(404).send({ error: { code: 'JOB_UNKNOWN', message: `no job ${JSON.stringify(id)} (never started, or forgotten by retention)` } });
      }
      const next = page.offset + page.steps.length < page.kept ? page.offset + page.steps.length : null;
      return { ...page, next, dropped: record.resultDropped === true };
    });
  };
}
