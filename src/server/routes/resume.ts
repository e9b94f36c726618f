import type { FastifyInstance } from 'fastify';
import { ForkpoolError, errorMessage } from '../../shared/errors.js';
import { jobIdParams, resumeBody } from '../schemas.js';
import { errorBody, resumedBody } from '../responses.js';
import { serve, type RouteDoc } from '../route-spec.js';
import type { ServerState } from '../server-state.js';
import { jobRef } from '../job-list.js';

/** A refusal's status: unknown 404, not resumable 409, a closing server 503, else 400. */
const STATUS: Record<string, number> = { JOB_UNKNOWN: 404, RESUME_UNAVAILABLE: 409, MANAGER_CLOSED: 503, LEDGER_WRITE_FAILED: 503, QUEUE_FULL: 429 };

export const resumeJobRoute = {
  method: 'post',
  path: '/v1/jobs/{id}/resume',
  operationId: 'resumeJob',
  summary: 'Continue an ended job from its kept conversation with {message}: a new job, resumedFrom this one.',
  params: jobIdParams,
  body: resumeBody,
  responses: {
    202: { description: 'The new job', schema: resumedBody },
    404: { description: 'No such job (JOB_UNKNOWN)', schema: errorBody },
    409: { description: 'Not ended, or its conversation was not kept (RESUME_UNAVAILABLE)', schema: errorBody },
    429: { description: 'The queue is full (QUEUE_FULL)', schema: errorBody },
  },
} satisfies RouteDoc;

/**
 * `POST /v1/jobs/:id/resume`: an ended job goes on from its kept conversation with `message`,
 * as a new job (role user, no wave; see src/main/jobs/resumes.ts). 202 with the new job's
 * handle; the same auth hook as every route (registered on the same app).
 */
export function resumeRoutes(state: ServerState) {
  return async function plugin(app: FastifyInstance): Promise<void> {
    serve(app, resumeJobRoute, async ({ params: { id }, body: { message } }, _request, reply) => {
      try {
        // A ref as GET /v1/jobs/:id takes it (id, name or `session/id`); an unknown one is the server manager's JOB_UNKNOWN.
        const found = state.findJob(id);
        const manager = found?.manager ?? state.manager;
        const handle = manager.parentControls.resume(found?.record.id ?? id, message, { role: 'user', wave: null });
        // The new job lives where the old one did: its id as a ref (`session/id` for a session's).
        return reply.code(202).send({ ...handle, id: jobRef(found?.session ?? null, handle.id), resumedFrom: id });
      } catch (error) {
        const code = error instanceof ForkpoolError ? error.code : 'INTERNAL';
        return reply.code(STATUS[code] ?? 400).send({ error: { code, message: errorMessage(error) } });
      }
    });
  };
}
