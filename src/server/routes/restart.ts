import type { FastifyInstance } from 'fastify';
import { ForkpoolError, errorMessage } from '../../shared/errors.js';
import { jobIdParams } from '../schemas.js';
import { errorBody, restartedBody } from '../responses.js';
import { serve, type RouteDoc } from '../route-spec.js';
import type { ServerState } from '../server-state.js';

export const restartJobRoute = {
  method: 'post',
  path: '/v1/jobs/{id}/restart',
  operationId: 'restartJob',
  summary: 'Run a job again with the same spec under the same id: a running one is stopped first, an ended one re-queued (its undelivered result superseded).',
  params: jobIdParams,
  responses: {
    202: { description: 'Restarted: stopping (it ran) or requeued (it had ended)', schema: restartedBody },
    404: { description: 'No such job (JOB_UNKNOWN)', schema: errorBody },
    409: { description: 'Cannot be restarted (JOB_NOT_RESTARTABLE, JOB_CANCELLED, NAME_TAKEN); error.state names its state', schema: errorBody },
  },
} satisfies RouteDoc;

/**
 * `POST /v1/jobs/:id/restart`: the job runs again with the same spec under the same id
 * (BackgroundManager.restart, src/main/jobs/restarts.ts). 202 with its handle and what was
 * done (`restarted`: `stopping` a running one, `requeued` an ended one). 404 for an unknown job;
 * A job asleep, paused for approvals or waiting for its children is re-queued (what it waited on
 * dropped). 409 when it cannot be restarted, naming its state: still queued (nothing to restart), already
 * being stopped, its spec no longer kept, or its name taken; 503 on a closing server.
 */
export function restartRoutes(state: ServerState) {
  return async function plugin(app: FastifyInstance): Promise<void> {
    serve(app, restartJobRoute, async ({ params: { id } }, _request, reply) => {
      // A ref: the server's job by id or name, a session's as `session/id`.
      const found = state.findJob(id);
      const before = found?.record;
      if (!found || !before) return reply.code(404).send(refusal('JOB_UNKNOWN', `no job ${JSON.stringify(id)} (never started, or forgotten by retention)`));
      // The library leaves a job that has not run yet as it is; over HTTP that is a refusal. One
      // waiting for its children (queued in its record) has run: it is restarted (restarts.ts).
      if (before.state === 'queued' && !before.waitingForChildren)
        return reply.code(409).send(refusal('JOB_NOT_RESTARTABLE', `job ${before.id} is queued: nothing to restart yet`, before.state));
      try {
        const handle = found.manager.restart(before.id);
        // Its record unchanged: a job queued to go on where it waited (its children ended, its calls answered) is left as it is.
        if (handle.state === 'queued' && found.manager.find(before.id) === before)
          return reply
            .code(409)
            .send(refusal('JOB_NOT_RESTARTABLE', `job ${before.id} is queued to go on where it waited: nothing to restart yet`, before.state));
        // A job asleep or paused for approvals is `running` in its record, but is re-queued at once.
        return reply.code(202).send({ ...handle, restarted: handle.state === 'running' ? 'stopping' : 'requeued' });
      } catch (error) {
        const code = error instanceof ForkpoolError ? error.code : 'INTERNAL';
        const status = code === 'MANAGER_CLOSED' ? 503 : code === 'INTERNAL' ? 500 : 409;
        // Past the unknown check, JOB_UNKNOWN means its spec is no longer kept: the job exists, so 409.
        return reply
          .code(status)
          .send(refusal(code === 'JOB_UNKNOWN' ? 'JOB_NOT_RESTARTABLE' : code, errorMessage(error), found.manager.find(before.id)?.state));
      }
    });
  };
}

function refusal(code: string, message: string, jobState?: string) {
  return { error: { code, message, ...(jobState !== undefined ? { state: jobState } : {}) } };
}
