import type { FastifyInstance } from 'fastify';
import { AbortError, ForkpoolError, errorMessage } from '../../shared/errors.js';
import { waitJobsBody } from '../schemas.js';
import { errorBody, waitOutcomeBody } from '../responses.js';
import { serve, type RouteDoc } from '../route-spec.js';
import type { ServerState } from '../server-state.js';
import { WaitAnswers } from '../wait-answers.js';

/** A refusal's status: an unknown job 404, else 400. */
const STATUS: Record<string, number> = { JOB_UNKNOWN: 404 };

export const waitForJobsRoute = {
  method: 'post',
  path: '/v1/jobs/wait',
  operationId: 'waitForJobs',
  summary: 'Wait until the jobs named (default: every live one) end, all of them or the first (mode any), or timeoutMs passes.',
  body: waitJobsBody,
  responses: {
    200: { description: 'What ended (each with the first page of its result: resultNext) and what still runs', schema: waitOutcomeBody },
    404: { description: 'No such job (JOB_UNKNOWN, naming it); nothing waited', schema: errorBody },
    429: { description: 'Already server.maxWaits waits open (TOO_MANY_WAITS); retry-after 1', schema: errorBody },
  },
} satisfies RouteDoc;

/**
 * `POST /v1/jobs/wait`: waits for jobs of the server's manager (ParentControls.wait) and
 * answers with what ended (each job's detail with one page of its result) and what still runs.
 * A client that leaves ends the wait. Bounded: `server.maxWaits` open at once, one result page
 * per job, `answerMaxBytes` per answer, each job serialized once however many wait (wait-answers.ts). The server's jobs have no parent turn: nothing is marked
 * delivered here (a session's jobs are delivered by its own turns).
 */
export function waitRoutes(state: ServerState) {
  return async function plugin(app: FastifyInstance): Promise<void> {
    const answers = new WaitAnswers(state, state.config.server.maxWaits);
    serve(app, waitForJobsRoute, async ({ body }, _request, reply) => {
      const jobs = body.jobs ?? state.manager.jobs().flatMap((job) => (job.state === 'ended' ? [] : [job.id]));
      if (jobs.length === 0) return { timedOut: false, waitedMs: 0, ended: [], running: [] };
      if (!answers.admit()) {
        const message = `${answers.open} waits are open, the most at once (server.maxWaits ${answers.maxWaits}); wait again when one has answered`;
        return reply
          .code(429)
          .header('retry-after', '1')
          .send({ error: { code: 'TOO_MANY_WAITS', message } });
      }
      const gone = new AbortController();
      // The response's close, not the request's: a request emits 'close' once its body is read.
      reply.raw.once('close', () => gone.abort('the client left'));
      try {
        const outcome = await state.manager.parentControls.wait(jobs, {
          timeoutMs: body.timeoutMs,
          ...(body.mode ? { mode: body.mode } : {}),
          signal: gone.signal,
        });
        return reply.type('application/json; charset=utf-8').send(answers.body(outcome));
      } catch (error) {
        // Nobody is left to answer.
        if (error instanceof AbortError) return reply;
        const code = error instanceof ForkpoolError ? error.code : 'INTERNAL';
        return reply.code(STATUS[code] ?? 400).send({ error: { code, message: errorMessage(error) } });
      } finally {
        answers.release();
      }
    });
  };
}
