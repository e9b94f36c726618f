import type { FastifyInstance } from 'fastify';
import { AbortError, ForkpoolError, errorMessage } from '../../shared/errors.js';
import { jobDetail, jobSummary } from '../job-view.js';
import { parseRequest, waitJobsBody } from '../schemas.js';
import type { ServerState } from '../server-state.js';

/** A refusal's status: an unknown job 404, else 400. */
const STATUS: Record<string, number> = { JOB_UNKNOWN: 404 };

/**
 * `POST /v1/jobs/wait`: waits for jobs of the server's manager (BackgroundManager.wait) and
 * answers with what ended (each job's detail, its result included) and what still runs. A
 * client that leaves ends the wait. The server's jobs have no parent turn: nothing is marked
 * delivered here (a session's jobs are delivered by its own turns).
 */
export function waitRoutes(state: ServerState) {
  return async function plugin(app: FastifyInstance): Promise<void> {
    app.post('/v1/jobs/wait', async (request, reply) => {
      const body = parseRequest(waitJobsBody, request.body, 'body');
      const jobs = body.jobs ?? state.manager.jobs().flatMap((job) => (job.state === 'ended' ? [] : [job.id]));
      if (jobs.length === 0) return { timedOut: false, waitedMs: 0, ended: [], running: [] };
      const gone = new AbortController();
      // The response's close, not the request's: a request emits 'close' once its body is read.
      reply.raw.once('close', () => gone.abort('the client left'));
      try {
        const outcome = await state.manager.wait(jobs, { timeoutMs: body.timeoutMs, ...(body.mode ? { mode: body.mode } : {}), signal: gone.signal });
        const now = Date.now();
        return {
          timedOut: outcome.timedOut,
          waitedMs: outcome.waitedMs,
          ended: outcome.ended.map((record) => jobDetail(record, state.progress.get(record.id))),
          running: outcome.running.map((record) => jobSummary(record, state.progress.get(record.id), now, state.manager.budgetOf(record.id))),
        };
      } catch (error) {
        // Nobody is left to answer.
        if (error instanceof AbortError) return reply;
        const code = error instanceof ForkpoolError ? error.code : 'INTERNAL';
        return reply.code(STATUS[code] ?? 400).send({ error: { code, message: errorMessage(error) } });
      }
    });
  };
}
