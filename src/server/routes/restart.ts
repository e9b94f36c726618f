import type { FastifyInstance } from 'fastify';
import { ForkpoolError, errorMessage } from '../../shared/errors.js';
import { jobIdParams, parseRequest } from '../schemas.js';
import type { ServerState } from '../server-state.js';

/**
 * `POST /v1/jobs/:id/restart`: the job runs again with the same spec under the same id
 * (BackgroundManager.restart, src/main/jobs/restarts.ts). 202 with its handle and what was
 * done (`restarted`: `stopping` a running one, `requeued` an ended one). 404 for an unknown job;
 * 409 when it cannot be restarted, naming its state: still queued (nothing to restart), already
 * being stopped, its spec no longer kept, or its name taken; 503 on a closing server.
 */
export function restartRoutes(state: ServerState) {
  return async function plugin(app: FastifyInstance): Promise<void> {
    app.post('/v1/jobs/:id/restart', async (request, reply) => {
      const { id } = parseRequest(jobIdParams, request.params, 'params');
      // A ref: the server's job by id or name, a session's as `session/id`.
      const found = state.findJob(id);
      const before = found?.record;
      if (!found || !before) return reply.code(404).send(refusal('JOB_UNKNOWN', `no job ${JSON.stringify(id)} (never started, or forgotten by retention)`));
      // The library leaves a job that has not run yet as it is; over HTTP that is a refusal.
      if (before.state === 'queued' || before.waitingForChildren)
        return reply
          .code(409)
          .send(
            refusal(
              'JOB_NOT_RESTARTABLE',
              `job ${before.id} is ${before.state === 'queued' ? 'queued' : 'waiting for its children'}: nothing to restart yet`,
              before.state,
            ),
          );
      try {
        const handle = found.manager.restart(before.id);
        return reply.code(202).send({ ...handle, restarted: before.state === 'running' ? 'stopping' : 'requeued' });
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
