import type { z } from 'zod';
import {
  cancelJobsBody,
  createJobsBody,
  createSessionBody,
  jobIdParams,
  jobMessageBody,
  listJobsQuery,
  messageBody,
  resultQuery,
  resumeBody,
  sessionIdParams,
  transcriptQuery,
  waitJobsBody,
  worktreeActionBody,
} from './schemas.js';
import {
  approvalRecordSchema,
  errorBody,
  healthBody,
  jobDetailSchema,
  jobHandleSchema,
  jobListBody,
  jobsCancelledBody,
  jobsRefusedBody,
  jobsStartedBody,
  messageReceiptBody,
  openApiBody,
  restartedBody,
  resumedBody,
  sessionBody,
  sessionCreatedBody,
  sessionTurnLine,
  textBody,
  transcriptPageShape,
  waitOutcomeBody,
  worktreeActedBody,
  worktreeBody,
} from './responses.js';
import { approvalBody, approvalListBody, approvalParams } from './approval-bodies.js';

/** One response of a route: what it means and the schema of its body (every response has one). */
export interface ResponseDoc {
  description: string;
  schema: z.ZodType;
  /** Default `application/json`. */
  contentType?: string;
}

/**
 * One route of the API as `/openapi.json` documents it. A new route is one entry in
 * {@link ROUTE_DOCS}: its request schemas (the ones its handler parses with), its own statuses
 * and their body schemas; the statuses every route shares (401, 400, 413, 415, 500, 503) are
 * added by {@link responsesOf}. test/server/openapi-contract.test.ts fails for a route the
 * plugin registers without an entry here.
 */
export interface RouteDoc {
  method: 'get' | 'post' | 'delete';
  /** OpenAPI style: `{id}`, where the route says `:id`. */
  path: string;
  /** The name a generated client gives the call: camelCase, unique. */
  operationId: string;
  summary: string;
  body?: z.ZodType;
  query?: z.ZodType;
  params?: z.ZodType;
  responses: Record<number, ResponseDoc>;
  /** false: no token needed (`/healthz`). Default true. */
  auth?: boolean;
}

const noSuchJob: ResponseDoc = { description: 'No such job (JOB_UNKNOWN)', schema: errorBody };

export const ROUTE_DOCS: RouteDoc[] = [
  {
    method: 'post',
    path: '/v1/jobs',
    operationId: 'createJobs',
    summary: 'Start one job ({task, label}) or many ({tasks: [...]}).',
    body: createJobsBody,
    responses: {
      202: { description: 'Accepted jobs, and any refused with their error.', schema: jobsStartedBody },
      400: { description: 'A bad body (BAD_REQUEST), or every task refused (its code: AGENT_UNKNOWN, BUDGET_OVER_LIMIT, ...)', schema: jobsRefusedBody },
      429: { description: 'Nothing started: the queue is full (QUEUE_FULL)', schema: jobsRefusedBody },
      503: {
        description: 'Nothing started: the server is closing (MANAGER_CLOSED) or its ledger cannot write (LEDGER_WRITE_FAILED)',
        schema: jobsRefusedBody,
      },
    },
  },
  {
    method: 'get',
    path: '/v1/jobs',
    operationId: 'listJobs',
    summary: 'Jobs in queue order, filtered by state, paged; with the totals and the latest event id.',
    query: listJobsQuery,
    responses: { 200: { description: 'A page of jobs', schema: jobListBody } },
  },
  {
    method: 'get',
    path: '/v1/jobs/{id}',
    operationId: 'getJob',
    summary: 'One job: record, live progress, full result.',
    params: jobIdParams,
    responses: { 200: { description: 'The job', schema: jobDetailSchema }, 404: noSuchJob },
  },
  {
    method: 'delete',
    path: '/v1/jobs/{id}',
    operationId: 'cancelJob',
    summary: 'Cancel a job (idempotent).',
    params: jobIdParams,
    responses: { 202: { description: 'Cancel requested; the job ends with status cancelled', schema: jobHandleSchema }, 404: noSuchJob },
  },
  {
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
  },
  {
    method: 'get',
    path: '/v1/jobs/{id}/transcript',
    operationId: 'getJobTranscript',
    summary: "A job's transcript, paged: model turns (tokens, time, text, tool calls with arguments), tool results (head and tail), notes.",
    params: jobIdParams,
    query: transcriptQuery,
    responses: { 200: { description: 'One page of its kept steps', schema: transcriptPageShape }, 404: noSuchJob },
  },
  {
    method: 'post',
    path: '/v1/jobs/{id}/messages',
    operationId: 'sendJobMessage',
    summary: 'Send a live job a message: before its next model call, or with interrupt its call in flight is cancelled.',
    params: jobIdParams,
    body: jobMessageBody,
    responses: {
      202: { description: 'Sent: posted to its run, or kept for when it runs', schema: messageReceiptBody },
      404: noSuchJob,
      409: { description: 'The job has ended (JOB_ENDED, naming its state)', schema: errorBody },
      429: { description: 'Too many messages for this job (QUEUE_FULL)', schema: errorBody },
      503: { description: 'Not sent: the server is closing (SERVER_CLOSING), or its ledger cannot write the message (LEDGER_WRITE_FAILED)', schema: errorBody },
    },
  },
  {
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
  },
  {
    method: 'post',
    path: '/v1/sessions',
    operationId: 'createSession',
    summary: 'Create a parent-agent session.',
    body: createSessionBody,
    responses: {
      201: { description: 'The new session', schema: sessionCreatedBody },
      429: { description: 'Already server.maxSessions sessions (TOO_MANY_SESSIONS)', schema: errorBody },
    },
  },
  {
    method: 'get',
    path: '/v1/sessions/{id}',
    operationId: 'getSession',
    summary: 'A session: turns so far, whether a turn runs, its jobs.',
    params: sessionIdParams,
    responses: { 200: { description: 'The session', schema: sessionBody }, 404: { description: 'No such session (SESSION_UNKNOWN)', schema: errorBody } },
  },
  {
    method: 'post',
    path: '/v1/sessions/{id}/messages',
    operationId: 'sendSessionMessage',
    summary: 'One parent turn; its events streamed as NDJSON, the turn result last.',
    params: sessionIdParams,
    body: messageBody,
    responses: {
      200: {
        description: 'One JSON object a line (the schema is a line): {type:"parent",event} lines, then {type:"result",result} or {type:"error",error}',
        schema: sessionTurnLine,
        contentType: 'application/x-ndjson',
      },
      404: { description: 'No such session (SESSION_UNKNOWN)', schema: errorBody },
    },
  },
  {
    method: 'post',
    path: '/v1/jobs/{id}/resume',
    operationId: 'resumeJob',
    summary: 'Continue an ended job from its kept conversation with {message}: a new job, resumedFrom this one.',
    params: jobIdParams,
    body: resumeBody,
    responses: {
      202: { description: 'The new job', schema: resumedBody },
      404: noSuchJob,
      409: { description: 'Not ended, or its conversation was not kept (RESUME_UNAVAILABLE)', schema: errorBody },
      429: { description: 'The queue is full (QUEUE_FULL)', schema: errorBody },
    },
  },
  {
    method: 'post',
    path: '/v1/jobs/{id}/restart',
    operationId: 'restartJob',
    summary:
      'Run a job again with the same spec under the same id: a running one is stopped first, an ended one re-queued (its undelivered result superseded).',
    params: jobIdParams,
    responses: {
      202: { description: 'Restarted: stopping (it ran) or requeued (it had ended)', schema: restartedBody },
      404: noSuchJob,
      409: { description: 'Cannot be restarted (JOB_NOT_RESTARTABLE, JOB_CANCELLED, NAME_TAKEN); error.state names its state', schema: errorBody },
    },
  },
  {
    method: 'post',
    path: '/v1/jobs/cancel',
    operationId: 'cancelJobs',
    summary: 'Cancel many jobs at once: {ids: [ref, ...]} (at most 500) or {state: "queued"|"running"}, over the server and its sessions.',
    body: cancelJobsBody,
    responses: { 202: { description: 'Cancel requested for `cancelled`; `ended` were over already; `unknown` are no job', schema: jobsCancelledBody } },
  },
  {
    method: 'get',
    path: '/v1/jobs/{id}/worktree',
    operationId: 'getJobWorktree',
    summary: 'A job spawned with workspace "worktree": its branch, base, state and (once ended) the files it changed.',
    params: jobIdParams,
    responses: {
      200: { description: 'The worktree', schema: worktreeBody },
      404: { description: 'No such job (JOB_UNKNOWN), or it has no worktree (NO_WORKTREE)', schema: errorBody },
    },
  },
  {
    method: 'post',
    path: '/v1/jobs/{id}/worktree',
    operationId: 'actOnJobWorktree',
    summary: "Merge an ended worktree job's branch into the workspace (a conflict is aborted, nothing half-merged), keep it for review, or drop it.",
    params: jobIdParams,
    body: worktreeActionBody,
    responses: {
      200: { description: 'Done: what happened, and the worktree now', schema: worktreeActedBody },
      404: { description: 'No such job (JOB_UNKNOWN)', schema: errorBody },
      409: {
        description: 'Not possible now (WORKTREE_ACTION_FAILED: still running, no worktree, a merge conflict, already merged or dropped)',
        schema: errorBody,
      },
    },
  },
  {
    method: 'get',
    path: '/v1/approvals',
    operationId: 'listApprovals',
    summary: 'The tool calls jobs wait to make (approvals "ask"): the server\'s jobs and every open session\'s, oldest first.',
    responses: { 200: { description: 'Every pending approval', schema: approvalListBody } },
  },
  {
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
  },
  {
    method: 'get',
    path: '/v1/events',
    operationId: 'streamEvents',
    summary:
      'Server-Sent Events: spawned, started, progress, alert, done, requeued, delivered, wave-done, approval-requested, approval-resolved, sleeping; Last-Event-ID resumes; reset means refetch.',
    responses: { 200: { description: 'The event stream (`id:`, `event:`, `data:` JSON)', schema: textBody, contentType: 'text/event-stream' } },
  },
  {
    method: 'get',
    path: '/healthz',
    operationId: 'getHealth',
    summary: 'Liveness, the ledger and the executor; no token needed.',
    auth: false,
    responses: { 200: { description: 'It serves', schema: healthBody } },
  },
  {
    method: 'get',
    path: '/metrics',
    operationId: 'getMetrics',
    summary: 'Prometheus text: jobs by state, queue depth, threads, tokens by role and model, loop delay, job durations.',
    responses: { 200: { description: 'Prometheus text exposition 0.0.4', schema: textBody, contentType: 'text/plain' } },
  },
  {
    method: 'get',
    path: '/openapi.json',
    operationId: 'getOpenApi',
    summary: 'This document.',
    responses: { 200: { description: 'OpenAPI 3.1', schema: openApiBody } },
  },
];

/**
 * The plugin's routes that are the page's, not the API's: a browser's HTML, script, style and
 * sign-in redirect. They are not in the document (a generated client has no use for them).
 */
export const PAGE_ROUTES = ['GET /', 'GET /page.js', 'GET /page.css', 'GET /login'] as const;

/**
 * A route's responses as the server sends them: its own, and those every route shares (the
 * auth hook's 401, the request parsers' 400, the body limit's 413 and the content-type
 * parser's 415 (plugin.ts error handler), an unexpected error's 500, a closing server's 503: plugin.ts).
 */
export function responsesOf(route: RouteDoc): Record<number, ResponseDoc> {
  const shared: Record<number, ResponseDoc> = {};
  if (route.body || route.query || route.params || route.method === 'post')
    shared[400] = { description: 'A bad request: every bad field named (BAD_REQUEST), or a body that is not JSON', schema: errorBody };
  if (route.auth !== false) shared[401] = { description: 'Missing or wrong bearer token (UNAUTHORIZED)', schema: errorBody };
  if (route.method === 'post') {
    shared[413] = { description: 'The body is over server.bodyLimitBytes (FST_ERR_CTP_BODY_TOO_LARGE)', schema: errorBody };
    shared[415] = { description: 'A body that is not application/json (FST_ERR_CTP_INVALID_MEDIA_TYPE)', schema: errorBody };
  }
  shared[500] = { description: 'An unexpected error (INTERNAL; the server logs it)', schema: errorBody };
  shared[503] = { description: 'The server is closing (SERVER_CLOSING)', schema: errorBody };
  return { ...shared, ...route.responses };
}
