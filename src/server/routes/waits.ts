import type { FastifyInstance } from 'fastify';
import { AbortError, ForkpoolError, errorMessage } from '../../shared/errors.js';
import { parseRequest, waitJobsBody } from '../schemas.js';
import type { ServerState } from '../server-state.js';
import { WaitAnswers } from '../wait-answers.js';

/** A refusal's status: an unknown job 404, else 400. */
const STATUS: Record<string, number> = { JOB_UNKNOWN: 404 };

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
    app.post('/v1/jobs/wait', async (request, reply) => {
      const body = parseRequest(waitJobsBody, request.body, 'body');
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
