import { z } from 'zod';
import { JOB_ROLES, STEERING_MAX_CHARS } from '../shared/protocol.js';
import { describeReceived } from '../shared/config.js';
import { BUDGET_NAMES, budgetLimitsSchema } from '../shared/budget.js';
import { spawnSpecInputFields } from '../shared/spawn-spec.js';
import { JOB_STATES, JOB_STATUSES, SPECULATION_STATES } from '../main/ledger/job-record.js';
import { WAIT_MODES } from '../main/jobs/waits.js';
import { WAIT_LIMITS } from '../shared/defaults.js';
import { JOB_SORTS } from './job-list.js';

/** Request and response shapes of the HTTP API; `/openapi.json` is generated from these. */
export const MAX_TASKS_PER_REQUEST = 100;

const taskSchema = z.strictObject({
  task: z.string().trim().min(1).max(200_000).describe('What the background agent should do.'),
  label: z.string().max(200).optional().describe('A short name shown in lists; default "job N".'),
  agent: z.string().min(1).max(64).optional().describe('A configured peer agent (config `agents`); default `background.defaultAgent`, else a plain job.'),
  name: z.string().min(1).max(64).optional().describe('Unique among live jobs; usable wherever an id is.'),
  budget: budgetLimitsSchema
    .optional()
    .describe("Tighter budgets than the agent's: maxTurns, maxTokens, maxCostUsd, maxWallclockMinutes. Above the agent's limit: refused (BUDGET_OVER_LIMIT)."),
  systemPrompt: spawnSpecInputFields.systemPrompt.describe("Appended to the job's background system prompt (after its agent's)."),
  replaceSystemPrompt: spawnSpecInputFields.replaceSystemPrompt.describe(
    'systemPrompt replaces the background prompt; refused (PROMPT_REPLACE_NOT_ALLOWED) unless background.allowSystemPromptReplace.',
  ),
  tools: spawnSpecInputFields.tools.describe("Only these built-in tools, a subset of the job's own (TOOL_UNKNOWN, TOOL_NOT_ALLOWED)."),
  model: spawnSpecInputFields.model.describe('The model the job runs, among background.spawnModels (MODEL_NOT_ALLOWED).'),
  speculative: z
    .boolean()
    .optional()
    .describe(
      'A guess: it runs only on what no real job needs, and is cancelled ("speculative, preempted") when a real job waits for its slot or budget. Default false.',
    ),
});

const manyTasksSchema = z.strictObject({ tasks: z.array(taskSchema).min(1).max(MAX_TASKS_PER_REQUEST) });

/** One task, or `{ tasks: [...] }` (documented as the union of both). */
export const createJobsBody = z.union([taskSchema, manyTasksSchema]);

/** The branch a body means, chosen by its `tasks` key, so a 400 names that branch's field and not the other's. */
export function createJobsSchemaFor(body: unknown): typeof taskSchema | typeof manyTasksSchema {
  return body !== null && typeof body === 'object' && 'tasks' in body ? manyTasksSchema : taskSchema;
}

export const jobStates = z.enum(JOB_STATES);

export const jobIdParams = z.strictObject({ id: z.string().min(1).max(100) });

/** The body of `POST /v1/jobs/:id/resume`: the new instruction (routes/resume.ts). */
export const resumeBody = z.strictObject({ message: z.string().trim().min(1).max(100_000) });
/** POST /v1/jobs/{id}/messages: a message for a live job (see docs/agents.md "Steering a running job"). */
export const jobMessageBody = z.strictObject({
  message: z.string().trim().min(1).max(STEERING_MAX_CHARS),
  /** Cancel the job's model call in flight; default false (before its next model call). */
  interrupt: z.boolean().optional(),
});

/** The longest `POST /v1/jobs/wait`, in ms: the same bound as the result long poll's `wait` (120 s). */
export const WAIT_HTTP_MAX_MS = 120_000;

/** POST /v1/jobs/wait: wait for jobs of the server's manager to end (BackgroundManager.wait). */
export const waitJobsBody = z.strictObject({
  jobs: z
    .array(z.string().min(1).max(100))
    .min(1)
    .max(WAIT_LIMITS.maxJobs)
    .optional()
    .describe('Job ids or names; default every job not ended when the request arrives.'),
  timeoutMs: z.number().int().min(0).max(WAIT_HTTP_MAX_MS).describe(`The longest wait in ms (0 answers at once), at most ${WAIT_HTTP_MAX_MS}.`),
  mode: z.enum(WAIT_MODES).optional().describe('"all" (default): until every job has ended; "any": until the first has.'),
});

export const resultQuery = z.strictObject({
  /** Seconds to wait for the job to end (long poll); 0 answers at once. */
  wait: z.coerce.number().min(0).max(120).default(0),
});

export const createSessionBody = z.strictObject({}).optional();

export const messageBody = z.strictObject({
  input: z.string().trim().min(1).max(200_000).describe('The user message for the parent agent.'),
});

export const sessionIdParams = z.strictObject({ id: z.string().min(1).max(100) });

const errorShape = z.object({
  error: z.object({
    code: z.string(),
    message: z.string(),
    issues: z.array(z.object({ field: z.string(), expected: z.string(), received: z.string() })).optional(),
    /** The job's state, where a refusal depends on it (a restart: 409). */
    state: z.string().optional(),
  }),
});

const jobSummaryShape = z.object({
  id: z.string(),
  label: z.string(),
  role: z.enum(JOB_ROLES),
  state: jobStates,
  status: z.enum(JOB_STATUSES).nullable(),
  elapsedMs: z.number(),
  currentTool: z.string().nullable(),
  tokens: z.number(),
  error: z.object({ code: z.string(), message: z.string() }).nullable(),
  agent: z.string().nullable(),
  name: z.string().nullable(),
  speculative: z
    .enum(SPECULATION_STATES)
    .nullable()
    .describe('A speculative job: pending (a guess), kept (referred to), dropped (cancelled as a guess, never delivered); null otherwise.'),
  parentJobId: z.string().nullable().describe('The job that spawned it (nested jobs); null for a top-level job.'),
  depth: z.number().describe('1 for a top-level job, one more per level of nesting.'),
  budget: z
    .object({ limits: budgetLimitsSchema, spent: z.record(z.string(), z.unknown()).optional(), remaining: z.record(z.string(), z.number()).optional() })
    .nullable()
    .describe('Limits, spent (turns, tokens, costUsd, wallclockMinutes, unpricedModels) and remaining; see docs/delivery.md "Budgets".'),
  budgetExceeded: z.enum(BUDGET_NAMES).nullable().describe('The budget that ran out (the job ended partial).'),
});

/** One route's documentation: its schemas and what it answers. */
export interface RouteDoc {
  method: 'get' | 'post' | 'delete';
  path: string;
  summary: string;
  body?: z.ZodType;
  query?: z.ZodType;
  params?: z.ZodType;
  responses: Record<number, { description: string; schema?: z.ZodType; contentType?: string }>;
  auth?: boolean;
}

// --- The jobs list at fan-out scale and bulk cancel (routes/jobs.ts, routes/bulk-cancel.ts; job-list.ts) ---

/** `GET /v1/jobs`: every job of the server and its sessions, filtered, sorted and paged on the server. */
export const listJobsQuery = z.strictObject({
  state: jobStates.optional().describe('Only jobs in this state.'),
  status: z.enum(JOB_STATUSES).optional().describe('Only ended jobs with this status.'),
  agent: z.string().min(1).max(64).optional().describe('Only jobs of this agent (its name, case-insensitive).'),
  q: z.string().min(1).max(200).optional().describe('Only jobs whose label, task, id, ref or name contains this (case-insensitive).'),
  session: z.string().min(1).max(100).optional().describe('Only the server\'s own jobs ("server") or one session\'s (its id).'),
  sort: z.enum(JOB_SORTS).default('spawn').describe('spawn (nested jobs under their parent), state, duration or tokens.'),
  order: z.enum(['asc', 'desc']).default('asc'),
  limit: z.coerce.number().int().min(1).max(500).default(100),
  /** Jobs after this position in the sorted list (the `next` of the previous page). */
  offset: z.coerce.number().int().min(0).default(0).describe("Rows to skip in the sorted, filtered list (the previous page's `next`)."),
});

/** The most job refs one `POST /v1/jobs/cancel` takes (the page's largest page). */
export const MAX_CANCEL_IDS = 500;

/** `POST /v1/jobs/cancel`: these jobs (refs: `id`, or `session/id`), or every job in a state. One of the two. */
export const cancelJobsBody = z.strictObject({
  ids: z.array(z.string().min(1).max(200)).min(1).max(MAX_CANCEL_IDS).optional().describe(`Job refs, at most ${MAX_CANCEL_IDS}.`),
  state: z.enum(['queued', 'running']).optional().describe("Every job in this state, the server's and every session's."),
});

const jobRefList = z.array(z.string());

const JOB_PAGE_ROUTE_DOCS: RouteDoc[] = [
  {
    method: 'post',
    path: '/v1/jobs/cancel',
    summary: 'Cancel many jobs at once: {ids: [ref, ...]} (at most 500) or {state: "queued"|"running"}, over the server and its sessions.',
    body: cancelJobsBody,
    responses: {
      202: {
        description: 'Cancel requested for `cancelled`; `ended` were over already; `unknown` are no job',
        schema: z.object({ cancelled: jobRefList, ended: jobRefList, unknown: jobRefList }),
      },
      400: { description: 'Bad body (neither or both of ids and state, too many ids)', schema: errorShape },
    },
  },
];

export const ROUTE_DOCS: RouteDoc[] = [
  ...JOB_PAGE_ROUTE_DOCS,
  {
    method: 'post',
    path: '/v1/jobs',
    summary: 'Start one job ({task, label}) or many ({tasks: [...]}).',
    body: createJobsBody,
    responses: { 202: { description: 'Accepted jobs, and any refused with their error.' }, 400: { description: 'Bad body', schema: errorShape } },
  },
  {
    method: 'get',
    path: '/v1/jobs',
    summary: 'Jobs of the server and every open session (each with its `session`), filtered, sorted and paged; `totals` are exact counts over all.',
    query: listJobsQuery,
    responses: {
      200: { description: '{ jobs, total, next }', schema: z.object({ jobs: z.array(jobSummaryShape), total: z.number(), next: z.number().nullable() }) },
    },
  },
  {
    method: 'get',
    path: '/v1/jobs/{id}',
    summary: 'One job: record, live progress, full result.',
    params: jobIdParams,
    responses: { 200: { description: 'The job' }, 404: { description: 'No such job', schema: errorShape } },
  },
  {
    method: 'delete',
    path: '/v1/jobs/{id}',
    summary: 'Cancel a job (idempotent).',
    params: jobIdParams,
    responses: { 202: { description: 'Cancel requested; the job ends with status cancelled' }, 404: { description: 'No such job', schema: errorShape } },
  },
  {
    method: 'get',
    path: '/v1/jobs/{id}/result',
    summary: 'Long-poll for one job to end (?wait=seconds).',
    params: jobIdParams,
    query: resultQuery,
    responses: {
      200: { description: 'The ended job' },
      202: { description: 'Still running when the wait ran out' },
      404: { description: 'No such job', schema: errorShape },
    },
  },
  {
    method: 'post',
    path: '/v1/jobs/{id}/messages',
    summary: 'Send a live job a message: before its next model call, or with interrupt its call in flight is cancelled.',
    params: jobIdParams,
    body: jobMessageBody,
    responses: {
      202: { description: '{ jobId, message, state, delivery: posted|kept, interrupt }' },
      404: { description: 'No such job', schema: errorShape },
      409: { description: 'The job has ended (JOB_ENDED, naming its state)', schema: errorShape },
    },
  },
  {
    method: 'post',
    path: '/v1/jobs/wait',
    summary: 'Wait until the jobs named (default: every live one) end, all of them or the first (mode any), or timeoutMs passes.',
    body: waitJobsBody,
    responses: {
      200: { description: '{ timedOut, waitedMs, ended: [job detail], running: [job summary] }' },
      400: { description: 'Bad body', schema: errorShape },
      404: { description: 'No such job (JOB_UNKNOWN, naming it); nothing waited', schema: errorShape },
    },
  },
  { method: 'post', path: '/v1/sessions', summary: 'Create a parent-agent session.', body: createSessionBody, responses: { 201: { description: '{ id }' } } },
  {
    method: 'get',
    path: '/v1/sessions/{id}',
    summary: 'A session: turns so far, its jobs, usage.',
    params: sessionIdParams,
    responses: { 200: { description: 'The session' }, 404: { description: 'No such session', schema: errorShape } },
  },
  {
    method: 'post',
    path: '/v1/sessions/{id}/messages',
    summary: 'One parent turn; its events streamed as NDJSON, the turn result last.',
    params: sessionIdParams,
    body: messageBody,
    responses: { 200: { description: 'application/x-ndjson: {type:"parent",event} lines, then {type:"result",result}', contentType: 'application/x-ndjson' } },
  },
  {
    method: 'post',
    path: '/v1/jobs/{id}/resume',
    summary: 'Continue an ended job from its kept conversation with {message}: a new job, resumedFrom this one.',
    params: jobIdParams,
    body: resumeBody,
    responses: {
      202: { description: 'The new job' },
      404: { description: 'No such job', schema: errorShape },
      409: { description: 'Not ended, or its conversation was not kept (RESUME_UNAVAILABLE)', schema: errorShape },
    },
  },
  {
    method: 'post',
    path: '/v1/jobs/{id}/restart',
    summary:
      'Run a job again with the same spec under the same id: a running one is stopped first, an ended one re-queued (its undelivered result superseded).',
    params: jobIdParams,
    responses: {
      202: { description: '{ id, label, state, restarted: stopping|requeued }' },
      404: { description: 'No such job', schema: errorShape },
      409: { description: 'Cannot be restarted (JOB_NOT_RESTARTABLE, JOB_CANCELLED, NAME_TAKEN); error.state names its state', schema: errorShape },
    },
  },
  {
    method: 'get',
    path: '/v1/events',
    summary: 'Server-Sent Events: spawned, started, progress, alert, done, requeued, delivered, wave-done; Last-Event-ID resumes; reset means refetch.',
    responses: { 200: { description: 'text/event-stream', contentType: 'text/event-stream' } },
  },
  { method: 'get', path: '/healthz', summary: 'Liveness; no token needed.', auth: false, responses: { 200: { description: '{ ok: true }' } } },
  {
    method: 'get',
    path: '/metrics',
    summary: 'Prometheus text: jobs by state, queue depth, threads, tokens by role and model, loop delay.',
    responses: { 200: { description: 'text/plain; version=0.0.4', contentType: 'text/plain' } },
  },
  { method: 'get', path: '/openapi.json', summary: 'This document.', responses: { 200: { description: 'OpenAPI 3.1' } } },
];

/** A 400 naming every bad field, what it expected and what it received (as the CLI's config errors do). */
export class BadRequestError extends Error {
  readonly issues: Array<{ field: string; expected: string; received: string }>;
  constructor(issues: Array<{ field: string; expected: string; received: string }>) {
    super(issues.map((i) => `${i.field}: expected ${i.expected}, received ${i.received}`).join('; '));
    this.name = 'BadRequestError';
    this.issues = issues;
  }
}

/** Parses one part of a request (`body`, `query`, `params`) or throws {@link BadRequestError}. */
export function parseRequest<T extends z.ZodType>(schema: T, value: unknown, part: 'body' | 'query' | 'params'): z.output<T> {
  const result = schema.safeParse(value, { reportInput: true });
  if (result.success) return result.data;
  throw new BadRequestError(result.error.issues.map((issue) => toIssue(issue, part)));
}

function toIssue(issue: z.core.$ZodIssue, part: string) {
  if (issue.code === 'unrecognized_keys') {
    return {
      field: issue.keys.map((k) => [part, ...issue.path.map(String), k].join('.')).join(', '),
      expected: 'no such field',
      received: `field ${issue.keys.map((k) => JSON.stringify(k)).join(', ')}`,
    };
  }
  if (issue.code === 'invalid_union') {
    // The body is one task or a list of them: say so rather than list both branches' failures.
    const inner = issue.errors.flat()[0];
    if (inner) return toIssue({ ...inner, path: [...issue.path, ...inner.path] }, part);
  }
  const expected =
    issue.code === 'invalid_type'
      ? issue.expected
      : issue.code === 'invalid_value'
        ? `one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}`
        : issue.message;
  return { field: [part, ...issue.path.map(String)].join('.'), expected, received: describeReceived(issue.input) };
}

/** The OpenAPI 3.1 document, from the zod schemas above. */
export function openApiDocument(version: string): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  const json = (schema: z.ZodType) => z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' });
  for (const route of ROUTE_DOCS) {
    const parameters: unknown[] = [];
    for (const [where, schema] of [
      ['path', route.params],
      ['query', route.query],
    ] as const) {
      if (!schema) continue;
      const shape = json(schema) as { properties?: Record<string, unknown>; required?: string[] };
      for (const [name, property] of Object.entries(shape.properties ?? {})) {
        parameters.push({ name, in: where, required: where === 'path' || (shape.required ?? []).includes(name), schema: property });
      }
    }
    const responses: Record<string, unknown> = {};
    for (const [status, response] of Object.entries(route.responses)) {
      responses[status] = {
        description: response.description,
        ...(response.schema
          ? { content: { [response.contentType ?? 'application/json']: { schema: z.toJSONSchema(response.schema, { unrepresentable: 'any' }) } } }
          : {}),
      };
    }
    if (route.auth !== false) responses['401'] = { description: 'Missing or wrong bearer token' };
    paths[route.path] = {
      ...paths[route.path],
      [route.method]: {
        summary: route.summary,
        ...(parameters.length ? { parameters } : {}),
        ...(route.body
          ? { requestBody: { required: route.method === 'post' && route.path === '/v1/jobs', content: { 'application/json': { schema: json(route.body) } } } }
          : {}),
        responses,
        ...(route.auth === false ? { security: [] } : {}),
      },
    };
  }
  return {
    openapi: '3.1.0',
    info: { title: 'forkpool serve', version, description: 'Background sub-agents over HTTP: jobs, sessions, events.' },
    components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
    security: [{ bearer: [] }],
    paths,
  };
}
