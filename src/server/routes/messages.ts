import type { FastifyInstance } from 'fastify';
import { ForkpoolError, errorMessage } from '../../shared/errors.js';
import { jobIdParams, jobMessageBody } from '../schemas.js';
import { errorBody, messageReceiptBody } from '../responses.js';
import { serve, type RouteDoc } from '../route-spec.js';
import type { ServerState } from '../server-state.js';

/** The HTTP status of a refused message: no such job, ended, too many, the ledger cannot write it, or a bad message. */
const STATUS: Record<string, number> = { JOB_UNKNOWN: 404, JOB_ENDED: 409, QUEUE_FULL: 429, LEDGER_WRITE_FAILED: 503 };

export const sendJobMessageRoute = {
  method: 'post',
  path: '/v1/jobs/{id}/messages',
  operationId: 'sendJobMessage',
  summary: 'Send a live job a message: before its next model call, or with interrupt its call in flight is cancelled.',
  params: jobIdParams,
  body: jobMessageBody,
  responses: {
    202: { description: 'Sent: posted to its run, or kept for when it runs', schema: messageReceiptBody },
    404: { description: 'No such job (JOB_UNKNOWN)', schema: errorBody },
    409: { description: 'The job has ended (JOB_ENDED, naming its state)', schema: errorBody },
    429: { description: 'Too many messages for this job (QUEUE_FULL)', schema: errorBody },
    503: { description: 'Not sent: the server is closing (SERVER_CLOSING), or its ledger cannot write the message (LEDGER_WRITE_FAILED)', schema: errorBody },
  },
} satisfies RouteDoc;

/** `POST /v1/jobs/:id/messages`: a message to a live job, the server's or a session's (ParentControls.send). */
export function messageRoutes(state: ServerState) {
  return async function plugin(app: FastifyInstance): Promise<void> {
    serve(app, sendJobMessageRoute, async ({ params: { id }, body }, _request, reply) => {
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
