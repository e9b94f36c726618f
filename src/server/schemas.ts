import { z } from 'zod';
import { STEERING_MAX_CHARS } from '../shared/protocol.js';
import { describeReceived } from '../shared/config.js';
import { budgetLimitsSchema } from '../shared/budget.js';
import { spawnSpecInputFields } from '../shared/spawn-spec.js';
import { JOB_STATES, JOB_STATUSES } from '../main/ledger/job-record.js';
import { WAIT_MODES } from '../main/jobs/waits.js';
import { TRANSCRIPT_LIMITS, WAIT_LIMITS } from '../shared/fixed-limits.js';
import { WORKSPACE_MODES, WORKTREE_ACTIONS } from '../main/jobs/worktrees.js';
import { JOB_SORTS, JOB_WAITS } from './job-list.js';

/**
 * The request shapes of the HTTP API, which the routes parse with ({@link parseRequest}); the
 * response shapes are in responses.ts, and `/openapi.json` is generated from both (openapi.ts).
 */
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
  tools: spawnSpecInputFields.tools.describe("Only these catalog tools, a subset of the job's own (TOOL_UNKNOWN, TOOL_NOT_ALLOWED)."),
  extras: spawnSpecInputFields.extras.describe("Catalog tools added to the job's own (TOOL_UNKNOWN; a host tool on a BullMQ executor: TOOL_NOT_ALLOWED)."),
  model: spawnSpecInputFields.model.describe('The model the job runs, among background.spawnModels (MODEL_NOT_ALLOWED).'),
  scheduler: spawnSpecInputFields.scheduler.describe(
    'default (background.scheduler), sleep (schedule_next_turn sleeps between turns), exit_on_defer (the job ends deferred with its wake-up time) or none; another name: SCHEDULER_UNKNOWN.',
  ),
  outputSchema: spawnSpecInputFields.outputSchema.describe(
    'A JSON Schema the job\'s answer must match: the validated value is the job\'s `data` (docs/delivery.md "Typed results"). A bad schema: TOOL_ARGUMENTS_INVALID naming outputSchema.',
  ),
  turnTimeoutMs: spawnSpecInputFields.turnTimeoutMs.describe(
    "One turn of the job (a model call and the tools it calls) in ms; past it: TURN_TIMEOUT. 0: off. Default the agent's turnTimeoutMs, else the config's.",
  ),
  speculative: z
    .boolean()
    .optional()
    .describe(
      'A guess: it runs only on what no real job needs, and is cancelled ("speculative, preempted") when a real job waits for its slot or budget. Default false.',
    ),
  workspace: z
    .enum(WORKSPACE_MODES)
    .optional()
    .describe('"worktree": a writing job works in a fresh git worktree on branch forkpool/<id> (merge, keep or drop it after); default background.workspace.'),
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
/** POST /v1/jobs/{id}/worktree: what to do with an ended worktree job's branch (src/main/jobs/worktrees.ts). */
export const worktreeActionBody = z.strictObject({ action: z.enum(WORKTREE_ACTIONS) });
/** POST /v1/jobs/{id}/messages: a message for a live job (see docs/agents.md "Steering a running job"). */
export const jobMessageBody = z.strictObject({
  message: z.string().trim().min(1).max(STEERING_MAX_CHARS),
  /** Cancel the job's model call in flight; default false (before its next model call). */
  interrupt: z.boolean().optional(),
});

/** The longest `POST /v1/jobs/wait`, in ms: the same bound as the result long poll's `wait` (120 s). */
export const WAIT_HTTP_MAX_MS = 120_000;

/** POST /v1/jobs/wait: wait for jobs of the server's manager to end (ParentControls.wait). */
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
  /** One page of the result: from this character (a wait's `resultNext`)... */
  offset: z.coerce.number().int().min(0).optional(),
  /** ...at most this many characters; without either, the whole result. */
  limit: z.coerce.number().int().min(1).max(100_000_000).optional(),
});

export const createSessionBody = z.strictObject({}).optional();

export const messageBody = z.strictObject({
  input: z.string().trim().min(1).max(200_000).describe('The user message for the parent agent.'),
});

export const sessionIdParams = z.strictObject({ id: z.string().min(1).max(100) });

// --- The jobs list at fan-out scale and bulk cancel (routes/jobs.ts, routes/bulk-cancel.ts; job-list.ts) ---

/** `GET /v1/jobs`: every job of the server and its sessions, filtered, sorted and paged on the server. */
export const listJobsQuery = z.strictObject({
  state: jobStates.optional().describe('Only jobs in this state.'),
  status: z.enum(JOB_STATUSES).optional().describe('Only ended jobs with this status.'),
  waiting: z.enum(JOB_WAITS).optional().describe('Only running jobs that hold no slot: asleep (scheduler sleep) or paused for an approval.'),
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

/** GET /v1/jobs/{id}/transcript: a page of the job's kept steps (`offset` among them: the `next` of the previous page). */
export const transcriptQuery = z.strictObject({
  offset: z.coerce.number().int().min(0).default(0),
  limit: z.coerce.number().int().min(1).max(TRANSCRIPT_LIMITS.pageMax).default(50),
});

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
