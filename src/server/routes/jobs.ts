import type { FastifyInstance } from 'fastify';
import { ForkpoolError, errorMessage } from '../../shared/errors.js';
import { jobDetail, jobSummary } from '../job-view.js';
import { spawnSpecOf } from '../../shared/spawn-spec.js';
import { createJobsBody, createJobsSchemaFor, jobIdParams, listJobsQuery, resultQuery } from '../schemas.js';
import { errorBody, jobDetailSchema, jobHandleSchema, jobListBody, jobsRefusedBody, jobsStartedBody, type JobListBody } from '../responses.js';
import { serve, type ResponseDoc, type RouteDoc } from '../route-spec.js';
import type { ServerState } from '../server-state.js';
import type { JobRecord } from '../../main/ledger/ledger.js';
import { jobRef, listJobs } from '../job-list.js';
import { TRACEPARENT_PATTERN } from '../../shared/trace-context.js';

const noSuchJob: ResponseDoc = { description: 'No such job (JOB_UNKNOWN)', schema: errorBody };

export const createJobsRoute = {
  method: 'post',
  path: '/v1/jobs',
  operationId: 'createJobs',
  summary: 'Start one job ({task, label}) or many ({tasks: [...]}).',
  body: createJobsBody,
  bodyBranch: createJobsSchemaFor,
  responses: {
    202: { description: 'Accepted jobs, and any refused with their error.', schema: jobsStartedBody },
    400: { description: 'A bad body (BAD_REQUEST), or every task refused (its code: AGENT_UNKNOWN, BUDGET_OVER_LIMIT, ...)', schema: jobsRefusedBody },
    429: { description: 'Nothing started: the queue is full (QUEUE_FULL)', schema: jobsRefusedBody },
    503: {
      description: 'Nothing started: the server is closing (MANAGER_CLOSED) or its ledger cannot write (LEDGER_WRITE_FAILED)',
      schema: jobsRefusedBody,
    },
  },
} satisfies RouteDoc;

export const listJobsRoute = {
  method: 'get',
  path: '/v1/jobs',
  operationId: 'listJobs',
  summary: 'Jobs in queue order, filtered by state, paged; with the totals and the latest event id.',
  query: listJobsQuery,
  responses: { 200: { description: 'A page of jobs', schema: jobListBody } },
} satisfies RouteDoc;

export const getJobRoute = {
  method: 'get',
  path: '/v1/jobs/{id}',
  operationId: 'getJob',
  summary: 'One job: record, live progress, full result.',
  params: jobIdParams,
  responses: { 200: { description: 'The job', schema: jobDetailSchema }, 404: noSuchJob },
} satisfies RouteDoc;

export const cancelJobRoute = {
  method: 'delete',
  path: '/v1/jobs/{id}',
  operationId: 'cancelJob',
  summary: 'Cancel a job (idempotent).',
  params: jobIdParams,
  responses: { 202: { description: 'Cancel requested; the job ends with status cancelled', schema: jobHandleSchema }, 404: noSuchJob },
} satisfies RouteDoc;

export const getJobResultRoute = {
  method: 'get',
  path: '/v1/jobs/{id}/result',
  operationId: 'getJobResult',
  summary: 'Long-poll for one job to end (?wait=seconds); ?offset=&limit= for one page of its result.',
  params: jobIdParams,
  query: resultQuery,
  responses: {
    200: { description: 'The ended job', schema: jobDetailSchema },
    202: { description: 'Still queued or running when the wait ran out', schema: jobDetailSchema },
    404: noSuchJob,
  },
} satisfies RouteDoc;

/** `/v1/jobs`: start, list, read, cancel and wait for jobs of the server's own manager. */
export function jobRoutes(state: ServerState) {
  return async function plugin(app: FastifyInstance): Promise<void> {
    let started = 0;

    serve(app, createJobsRoute, async ({ body }, request, reply) => {
      const tasks = 'tasks' in body ? body.tasks : [body];
      // The caller's trace: its jobs' spans are children of its span. A malformed header is ignored, as W3C asks.
      const header = request.headers.traceparent;
      const traceparent = typeof header === 'string' && TRACEPARENT_PATTERN.test(header.trim()) ? header.trim() : undefined;
      const jobs: unknown[] = [];
      const refused: Array<{ index: number; code: string; message: string }> = [];
      // Each task's spawn starts now, in order; a worktree task's repository is checked off the main thread first.
      const spawns = tasks.map(async (task, index) => {
        try {
          const handle = await state.manager.spawnReady({
            task: task.task,
            label: task.label ?? task.name ?? `job ${++started}`,
            role: 'user',
            wave: null,
            ...(task.agent !== undefined ? { agent: task.agent } : {}),
            ...(task.name !== undefined ? { name: task.name } : {}),
            ...(task.budget !== undefined ? { budget: task.budget } : {}),
            ...spawnSpecOf(task),
            ...(task.speculative ? { speculative: true } : {}),
            ...(task.workspace ? { workspace: task.workspace } : {}),
            ...(traceparent !== undefined ? { traceparent } : {}),
          });
          return { handle };
        } catch (error) {
          return { refusal: { index, code: error instanceof ForkpoolError ? error.code : 'INTERNAL', message: errorMessage(error) } };
        }
      });
      for (const outcome of await Promise.all(spawns)) {
        if (outcome.handle) jobs.push(outcome.handle);
        else refused.push(outcome.refusal);
      }
      // Nothing accepted: the reason is the status (a full queue is 429, a closing server 503).
      if (jobs.length === 0) {
        const code = refused[0]?.code;
        return reply
          .code(code === 'QUEUE_FULL' ? 429 : code === 'MANAGER_CLOSED' || code === 'LEDGER_WRITE_FAILED' ? 503 : 400)
          .send({ error: { code: code ?? 'INTERNAL', message: refused[0]?.message ?? 'no job started' }, refused });
      }
      return reply.code(202).send({ jobs, refused });
    });

    // Every job of the server and its sessions, one page of them; the totals are the ledgers' counts.
    // Typed by its response schema (responses.ts): a field added here and not there fails the typecheck.
    serve(app, listJobsRoute, async ({ query }): Promise<JobListBody> => {
      const now = Date.now();
      const { jobs, total } = listJobs(state.sources(), query, (session, id) => state.progress.get(jobRef(session, id)), now);
      const next = query.offset + jobs.length < total ? query.offset + jobs.length : null;
      const totals = {
        jobs: state.jobCounts(),
        endedByStatus: Object.fromEntries(state.endedByStatus),
        usage: state.totalUsage(),
        sessionBudget: state.manager.budgetPool() ?? null,
      };
      return {
        jobs: jobs.map(({ session, record }) => {
          const manager = session === null ? state.manager : state.sessions.get(session)?.manager;
          return { ...jobSummary(record, state.progress.get(jobRef(session, record.id)), now, manager?.budgetOf(record.id)), session };
        }),
        total,
        next,
        totals,
        lastEventId: state.hub.lastId,
      };
    });

    // One job by ref: the server's by id (or name), a session's as `session/id` (URL-encoded: `s-1%2Fbg-3`).
    serve(app, getJobRoute, async ({ params: { id } }, _request, reply) => {
      const found = state.findJob(id);
      if (!found) return reply.code(404).send(unknownJob(id));
      const { session, manager, record } = found;
      return { ...jobDetail(record, state.progress.get(jobRef(session, record.id)), manager.budgetOf(record.id)), session };
    });

    serve(app, cancelJobRoute, async ({ params: { id } }, _request, reply) => {
      const found = state.findJob(id);
      if (!found) return reply.code(404).send(unknownJob(id));
      const handle = found.manager.cancel(found.record.id);
      return reply.code(202).send(handle);
    });

    serve(app, getJobResultRoute, async ({ params: { id }, query: { wait, offset, limit } }, _request, reply) => {
      // A page of the result (a wait answers with the first one): `offset`, at most `limit` characters.
      // The same refs as GET /v1/jobs/:id: an id, a name, or a session's `session/id` (issue 38).
      const found = state.findJob(id);
      if (!found) return reply.code(404).send(unknownJob(id));
      const { manager, session } = found;
      const jobId = found.record.id;
      const detail = (record: Readonly<JobRecord>) => {
        const whole = jobDetail(record, state.progress.get(jobRef(session, jobId)));
        if (offset === undefined && limit === undefined) return whole;
        const from = offset ?? 0;
        return { ...whole, resultText: whole.resultText?.slice(from, limit === undefined ? undefined : from + limit) ?? null };
      };
      const record = found.record;
      if (record.state === 'ended' || wait === 0) return reply.code(record.state === 'ended' ? 200 : 202).send(detail(record));
      // Long poll: the job's end, the wait running out or the client leaving, whichever is first. A
      // closing server cancels every job within its bound, so a poll then answers with the ending.
      const gone = new AbortController();
      // The response's close, not the request's: a request emits 'close' once its body is read.
      reply.raw.once('close', () => gone.abort());
      let timer: NodeJS.Timeout | undefined;
      const ended = await Promise.race([
        manager.result(jobId).then(() => true),
        new Promise<false>((resolve) => {
          timer = setTimeout(() => resolve(false), wait * 1000);
          gone.signal.addEventListener('abort', () => resolve(false), { once: true });
        }),
      ]);
      clearTimeout(timer);
      const latest = manager.get(jobId) ?? record;
      return reply.code(ended ? 200 : 202).send(detail(latest));
    });
  };
}

function unknownJob(id: string) {
  return { error: { code: 'JOB_UNKNOWN', message: `no job ${JSON.stringify(id)} (never started, or forgotten by retention)` } };
}
