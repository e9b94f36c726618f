import type { FastifyInstance } from 'fastify';
import { ForkpoolError, errorMessage } from '../../shared/errors.js';
import { approvalBody, approvalListBody, approvalParams } from '../approval-bodies.js';
import { approvalRecordSchema, errorBody } from '../responses.js';
import { serve, type RouteDoc } from '../route-spec.js';
import type { ServerState } from '../server-state.js';
import type { z } from 'zod';

export const listApprovalsRoute = {
  method: 'get',
  path: '/v1/approvals',
  operationId: 'listApprovals',
  summary: 'The tool calls jobs wait to make (approvals "ask"): the server\'s jobs and every open session\'s, oldest first.',
  responses: { 200: { description: 'Every pending approval', schema: approvalListBody } },
} satisfies RouteDoc;

export const answerApprovalRoute = {
  method: 'post',
  path: '/v1/jobs/{id}/approvals/{callId}',
  operationId: 'answerApproval',
  summary: 'Allow or deny the tool call a job waits to make: allow runs exactly that call, once; deny gives its model the reason. Recorded as by "http".',
  params: approvalParams,
  body: approvalBody,
  responses: {
    200: { description: 'Answered: the approval as recorded', schema: approvalRecordSchema },
    404: { description: 'No such job (JOB_UNKNOWN), or it waits for no call of that id (APPROVAL_UNKNOWN), each named', schema: errorBody },
    409: { description: 'The call was answered already (APPROVAL_ANSWERED: by whom), or its job no longer waits', schema: errorBody },
  },
} satisfies RouteDoc;

/**
 * `GET /v1/approvals` and `POST /v1/jobs/:id/approvals/:callId`: the calls jobs wait to make
 * under `approvals: "ask"` (the server's jobs and every open session's), and the answer to one
 * (BackgroundManager.approve, `by: 'http'`). An unknown job or call is a 404 that names it; a
 * call answered already (by anyone, or by the timeout) a 409.
 */
export function approvalRoutes(state: ServerState) {
  return async function plugin(app: FastifyInstance): Promise<void> {
    serve(app, listApprovalsRoute, async (): Promise<z.output<typeof approvalListBody>> => {
      const approvals = state.sources().flatMap(({ session, manager }) => manager.approvals().map((pending) => ({ ...pending, session })));
      return { approvals: approvals.sort((a, b) => a.requestedAt - b.requestedAt) };
    });

    serve(app, answerApprovalRoute, async ({ params: { id, callId }, body }, _request, reply) => {
      const found = state.findJob(id);
      if (!found) return reply.code(404).send(refusal('JOB_UNKNOWN', `no job ${JSON.stringify(id)} (never started, or forgotten by retention)`));
      const { manager, record } = found;
      // Answered already: its record says by whom, and the second answer changes nothing.
      const answered = record.approvals?.find((a) => a.callId === callId);
      if (answered) {
        const message = `${record.id} call ${JSON.stringify(callId)} (${answered.tool}) was already answered: ${answered.decision} by ${answered.by}`;
        return reply.code(409).send(refusal('APPROVAL_ANSWERED', message));
      }
      if (!manager.approvals().some((p) => p.jobId === record.id && p.callId === callId)) {
        return reply.code(404).send(refusal('APPROVAL_UNKNOWN', `${record.id} is not waiting for an approval of call ${JSON.stringify(callId)}`));
      }
      try {
        return manager.approve(record.id, callId, {
          decision: body.decision,
          by: 'http',
          ...(body.remember !== undefined ? { remember: body.remember } : {}),
          ...(body.reason !== undefined ? { reason: body.reason } : {}),
        });
      } catch (error) {
        // Answered between the check and now (another client, the timeout), or the job ended meanwhile.
        if (!(error instanceof ForkpoolError)) throw error;
        return reply.code(error.code === 'APPROVAL_UNKNOWN' || error.code === 'JOB_UNKNOWN' ? 404 : 409).send(refusal(error.code, errorMessage(error)));
      }
    });
  };
}

function refusal(code: string, message: string) {
  return { error: { code, message } };
}
