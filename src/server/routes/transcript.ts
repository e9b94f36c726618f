import type { FastifyInstance } from 'fastify';
import { jobIdParams, transcriptQuery } from '../schemas.js';
import { errorBody } from '../responses.js';
import { transcriptPageShape } from '../transcript-responses.js';
import { serve, type RouteDoc } from '../route-spec.js';
import type { ServerState } from '../server-state.js';

export const getJobTranscriptRoute = {
  method: 'get',
  path: '/v1/jobs/{id}/transcript',
  operationId: 'getJobTranscript',
  summary: "A job's transcript, paged: model turns (tokens, time, text, tool calls with arguments), tool results (head and tail), notes.",
  params: jobIdParams,
  query: transcriptQuery,
  responses: {
    200: { description: 'One page of its kept steps', schema: transcriptPageShape },
    404: { description: 'No such job (JOB_UNKNOWN)', schema: errorBody },
  },
} satisfies RouteDoc;

/**
 * `GET /v1/jobs/:id/transcript?offset=&limit=`: one page of a job's transcript (its kept steps;
 * `:id` a ref, so a session's job too;
 * see src/main/jobs/transcripts.ts), already redacted; the server's key scrubber runs on it too.
 */
export function transcriptRoutes(state: ServerState) {
  return async function plugin(app: FastifyInstance): Promise<void> {
    serve(app, getJobTranscriptRoute, async ({ params: { id }, query: { offset, limit } }, _request, reply) => {
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
