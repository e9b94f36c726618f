import type { FastifyInstance } from 'fastify';
import { ForkpoolError, errorMessage } from '../../shared/errors.js';
import { jobIdParams, jobMessageBody, parseRequest } from '../schemas.js';
import type { ServerState } from '../server-state.js';

/** The HTTP status of a refused message: no such job, ended, too many, the ledger cannot write it, or a bad message. */
const STATUS: Record<string, number> = { JOB_UNKNOWN: 404, JOB_ENDED: 409, QUEUE_FULL: 429, LEDGER_WRITE_FAILED: 503 };

/** `POST /v1/jobs/:id/messages`: a message to a live job, the server's or a session's (ParentControls.send). */
export function messageRoutes(state: ServerState) {
  return async function plugin(app: FastifyInstance): Promise<void> {
    app.post('/v1/jobs/:id/messages', async (request, reply) => {
      const { id } = parseRequest(jobIdParams, request.params, 'params');
      const body = parseRequest(jobMessageBody, request.body, 'body');
      try {
        // A ref as GET /v1/jobs/:id takes it (id, name or `session/id`); an unknown one is the server manager's JOB_UNKNOWN.
        const found = state.findJob(id);
        const manager = found?.manager ?? state.manager;
        return reply.code(202).send(manager.parentControls.send(found?.record.id ?? id, body.message, { interrupt: body.interrupt ?? false }));
      } catch (error) {
        const code = error instanceof ForkpoolError ? error.code : 'INTERNAL';
        return reply.code(STATUS[code] ?? 400).send({ error: { code, message: errorMessage(error) } });
      }
    });
  };
}
