import type { FastifyInstance } from 'fastify';
import { jobRef } from '../job-list.js';
import { BadRequestError, cancelJobsBody } from '../schemas.js';
import { jobsCancelledBody } from '../responses.js';
import { serve, type RouteDoc } from '../route-spec.js';
import type { ServerState } from '../server-state.js';

export const cancelJobsRoute = {
  method: 'post',
  path: '/v1/jobs/cancel',
  operationId: 'cancelJobs',
  summary: 'Cancel many jobs at once: {ids: [ref, ...]} (at most 500) or {state: "queued"|"running"}, over the server and its sessions.',
  body: cancelJobsBody,
  // No body at all: "neither" (the check below), not a type error.
  emptyBody: {},
  responses: { 202: { description: 'Cancel requested for `cancelled`; `ended` were over already; `unknown` are no job', schema: jobsCancelledBody } },
} satisfies RouteDoc;

/**
 * `POST /v1/jobs/cancel`: many jobs at once, over the server's jobs and every open session's.
 * `{ids}` names them by ref (at most MAX_CANCEL_IDS); `{state: "queued"}` is every queued job
 * (the page's "cancel all queued"), `running` every running one. 202 with what was asked to
 * stop (`cancelled`), what had ended already (`ended`, left as it is) and refs that name no job
 * (`unknown`). A queued job ends at once; a running one cooperatively, as DELETE does.
 */
export function bulkCancelRoutes(state: ServerState) {
  return async function plugin(app: FastifyInstance): Promise<void> {
    serve(app, cancelJobsRoute, async ({ body }, _request, reply) => {
      if ((body.ids === undefined) === (body.state === undefined)) {
        throw new BadRequestError([
          {
            field: body.ids === undefined ? 'body.ids' : 'body.state',
            expected: 'either ids (job refs) or state ("queued" or "running"), exactly one',
            received: body.ids === undefined ? 'neither' : 'both',
          },
        ]);
      }
      const out = { cancelled: [] as string[], ended: [] as string[], unknown: [] as string[] };
      if (body.ids !== undefined) {
        for (const ref of new Set(body.ids)) {
          const found = state.findJob(ref);
          if (!found) out.unknown.push(ref);
          else if (found.record.state === 'ended') out.ended.push(ref);
          else {
            found.manager.cancel(found.record.id);
            out.cancelled.push(ref);
          }
        }
      } else {
        // Chosen first, cancelled after: cancelling a queued job never starts another, but a slot freed by a running one may.
        const chosen = state.sources().flatMap(({ session, manager }) =>
          manager
            .jobs()
            .filter((r) => r.state === body.state)
            .map((r) => ({ manager, id: r.id, ref: jobRef(session, r.id) })),
        );
        for (const { manager, id, ref } of chosen) {
          manager.cancel(id);
          out.cancelled.push(ref);
        }
      }
      return reply.code(202).send(out);
    });
  };
}
