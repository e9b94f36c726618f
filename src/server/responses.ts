import { WORKTREE_STATES } from '../main/jobs/worktrees.js';
import { z } from 'zod';
import { WAIT_LIMITS } from '../shared/fixed-limits.js';
import { JOB_ROLES } from '../shared/protocol.js';
import { BUDGET_NAMES, budgetLimitsSchema } from '../shared/budget.js';
import { STOP_REASONS } from '../shared/loop-events.js';
import { ENDED_BY, JOB_STATES, JOB_STATUSES, SPECULATION_STATES } from '../main/ledger/job-record.js';

/**
 * The bodies the HTTP API answers with, as zod schemas: `/openapi.json` documents every
 * response with one of these (route-docs.ts, openapi.ts), and the views that build the bodies
 * are typed by them (job-view.ts returns {@link JobSummaryBody}, {@link JobDetailBody}), so a
 * field added to a body and not here fails the typecheck, and test/server/openapi-contract.test.ts
 * validates real answers against the document. Objects are closed in the document
 * (`additionalProperties: false`): a client generated from it sees exactly what is sent.
 */

/** The named schemas: each is `#/components/schemas/<id>` in the document, a named type in a generated client. */
export const responseSchemas = z.registry<{ id: string }>();

export function named<T extends z.ZodType>(id: string, schema: T): T {
  responseSchemas.add(schema, { id });
  return schema;
}

const jobState = z.enum(JOB_STATES);

/** Every refusal: `{ error: { code, message, … } }`; match on `code`, never on the message. */
export const errorBody = named(
  'Error',
  z.object({
    error: z.object({
      code: z
        .string()
        .describe('A stable code: BAD_REQUEST, UNAUTHORIZED, JOB_UNKNOWN, JOB_ENDED, QUEUE_FULL, MANAGER_CLOSED, FST_ERR_CTP_BODY_TOO_LARGE, INTERNAL, ...'),
      message: z.string(),
      issues: z
        .array(z.object({ field: z.string(), expected: z.string(), received: z.string() }))
        .optional()
        .describe('BAD_REQUEST: every bad field (`body.tasks.1.task`), what it expected and what it received.'),
      state: jobState.optional().describe("The job's state, where a refusal depends on it (a restart's 409)."),
    }),
  }),
);

export const usageSchema = named(
  'Usage',
  z.object({
    promptTokens: z.number(),
    completionTokens: z.number(),
    totalTokens: z.number(),
    requests: z.number(),
    cachedTokens: z.number().optional().describe("Of promptTokens, those read from the provider's prompt cache (when it says)."),
    cacheWriteTokens: z.number().optional().describe("Of promptTokens, those written to the provider's prompt cache (Anthropic)."),
  }),
);
export const usageByModel = z.record(z.string(), usageSchema).describe('Usage keyed by model name.');

export interface SerializedErrorBody {
  name: string;
  code: string;
  message: string;
  stack?: string | undefined;
  jobId?: string | undefined;
  toolName?: string | undefined;
  timeoutMs?: number | undefined;
  cause?: SerializedErrorBody | undefined;
}

/** An error with its cause chain (stacks only under `errorDetail: "debug"`). */
export const serializedError: z.ZodType<SerializedErrorBody> = named(
  'SerializedError',
  z.object({
    name: z.string(),
    code: z.string(),
    message: z.string(),
    stack: z.string().optional(),
    jobId: z.string().optional(),
    toolName: z.string().optional(),
    timeoutMs: z.number().optional(),
    get cause(): z.ZodOptional<z.ZodType<SerializedErrorBody>> {
      return serializedError.optional();
    },
  }),
);

const budgetNumbers = {
  maxTurns: z.number().optional(),
  maxTokens: z.number().optional(),
  maxCostUsd: z.number().optional(),
  maxWallclockMinutes: z.number().optional(),
};

const budgetSchema = named(
  'JobBudget',
  z
    .object({
      limits: budgetLimitsSchema,
      spent: z
        .object({ turns: z.number(), tokens: z.number(), costUsd: z.number(), wallclockMinutes: z.number(), unpricedModels: z.array(z.string()) })
        .optional(),
      remaining: z.object(budgetNumbers).optional().describe('Per limited dimension: what is left (never below 0).'),
      costUnpriced: z.literal(true).optional().describe('The cost budget cannot be enforced: a model without a price ran (tokens only).'),
      exceeded: z.enum(BUDGET_NAMES).optional(),
    })
    .describe('Limits, spent and remaining; see docs/delivery.md "Budgets".'),
);

/** A job's gated call waiting for an answer (docs/tools.md "Approvals"). */
export const pendingApprovalSchema = named(
  'PendingApproval',
  z.object({
    jobId: z.string(),
    callId: z.string().describe("The model's tool call id."),
    tool: z.string(),
    summary: z.string().describe('One line a person can judge (the command, the path).'),
    args: z.string().describe("The call's arguments as JSON text, secrets redacted, capped."),
    label: z.string(),
    requestedAt: z.number(),
    expiresAt: z.number().describe('Then approvalTimeoutAction applies (deny the call, or cancel the job).'),
  }),
);

/** An answered approval, as a job's record keeps it. */
export const approvalRecordSchema = named(
  'ApprovalRecord',
  pendingApprovalSchema.extend({
    decision: z.enum(['allow', 'deny']),
    by: z.string().describe("Who answered: 'library', 'chat', 'http', 'parent-model', 'approve-with', 'timeout'."),
    at: z.number(),
    reason: z.string().optional(),
    remember: z.enum(['job', 'session']).optional(),
  }),
);

/** A job as lists show it: `GET /v1/jobs`, a session's jobs, a wait's `running`. */
/** A running job's latest model-call retry (issue 36): which try of how many, why, who, how long it waits, and since when. */
const retryingSchema = z.object({
  attempt: z.number(),
  maxRetries: z.number().nullable(),
  status: z.number().nullable().describe('The HTTP status retried (429, 503, …); null for a transport error.'),
  host: z.string().nullable(),
  waitMs: z.number(),
  at: z.number().describe('When the retry was announced, epoch ms.'),
});

export const jobSummarySchema = named(
  'JobSummary',
  z.object({
    id: z.string(),
    label: z.string(),
    role: z.enum(JOB_ROLES),
    state: jobState,
    status: z.enum(JOB_STATUSES).nullable().describe('How it ended; null until it has.'),
    endedBy: z.enum(ENDED_BY).nullable().describe('The mechanism of its end: its own answer, a cooperative or hard stop, a crash, or still in the queue.'),
    taskPreview: z.string().describe('The task, cut at 200 characters.'),
    queuedAt: z.number().describe('Epoch milliseconds, as every time here.'),
    startedAt: z.number().nullable(),
    endedAt: z.number().nullable(),
    elapsedMs: z.number(),
    currentTool: z.string().nullable(),
    retrying: retryingSchema
      .nullable()
      .describe("While it runs: its model call's latest retry (the wait before trying again); null once a model response came, or when none."),
    toolCalls: z
      .number()
      .nullable()
      .describe('Tool calls of its latest run, live and once ended; null when the server did not follow it (it ended before a restart).'),
    tokens: z.number().describe('So far while it runs, the total once ended.'),
    iterations: z.number(),
    attempts: z.number(),
    error: z.object({ code: z.string(), message: z.string() }).nullable(),
    delivered: z.boolean(),
    speculative: z
      .enum(SPECULATION_STATES)
      .nullable()
      .describe('A speculative job: pending (a guess), kept (referred to), dropped (cancelled as a guess, never delivered); null otherwise.'),
    agent: z.string().nullable(),
    name: z.string().nullable(),
    parentJobId: z.string().nullable().describe('The job that spawned it (nested jobs); null for a top-level job.'),
    depth: z.number().describe('1 for a top-level job, one more per level of nesting.'),
    branch: z
      .string()
      .nullable()
      .describe(
        'Its place in the agent tree, `<parent-branch>.bg.<name>`: `bg.scout`, `bg.scout.bg.reader` for a job it spawned; null for a record from before branches were kept.',
      ),
    budget: budgetSchema.nullable(),
    budgetExceeded: z.enum(BUDGET_NAMES).nullable().describe('The budget that ran out (the job ended partial).'),
    deferredUntil: z.number().nullable().describe('A deferred job (scheduler exit_on_defer): when it asked to run again, epoch ms; null otherwise.'),
    deferReason: z.string().nullable().describe('A deferred job: why it asked to run again then.'),
    sleepingUntil: z
      .number()
      .nullable()
      .describe('A sleeping job (scheduler sleep): when it wakes, epoch ms (state stays running; it holds no slot meanwhile); null otherwise.'),
    sleepReason: z.string().nullable().describe('A sleeping job: what it said it will do when it wakes.'),
    data: z
      .unknown()
      .describe(
        'A typed job\'s value, validated against its output schema (docs/delivery.md "Typed results"); null for an untyped job or one that failed RESULT_INVALID.',
      ),
    awaitingApproval: z
      .array(pendingApprovalSchema)
      .nullable()
      .describe('Its gated calls waiting for an answer (state stays running; it holds no slot meanwhile); null when none.'),
    session: z
      .string()
      .nullable()
      .optional()
      .describe("In GET /v1/jobs and GET /v1/jobs/{id}: the session it belongs to, null for the server's own (its ref is `session/id`)."),
  }),
);
export type JobSummaryBody = z.output<typeof jobSummarySchema>;

const progressSchema = z.object({
  currentTool: z.string().nullable(),
  toolCalls: z.number(),
  modelCalls: z.number(),
  tokens: z.number(),
  lastEventAt: z.number(),
  retrying: retryingSchema.nullable(),
});

/** One job in full: `GET /v1/jobs/{id}`, its `/result`, a wait's `ended`. */
export const jobDetailSchema = named(
  'JobDetail',
  jobSummarySchema.extend({
    task: z.string(),
    resultText: z.string().nullable(),
    resultDropped: z.boolean().describe('Retention dropped the result (and the task past its head) long after delivery.'),
    tag: z.object({ status: z.enum(['ok', 'error', 'partial']), filesTouched: z.array(z.string()) }).nullable(),
    stopReason: z.enum(STOP_REASONS).nullable(),
    errorDetail: serializedError.nullable(),
    usage: usageByModel,
    notes: z.array(z.string()).describe('Why it ran again, one line per re-queue.'),
    resumedFrom: z.string().nullable().describe('The ended job this one resumed (POST /v1/jobs/{id}/resume).'),
    tools: z
      .array(z.string())
      .nullable()
      .describe('The tools it was offered, by catalog name (built-in, host, module, MCP); null for a record from before they were kept.'),
    messages: z
      .array(z.object({ id: z.number(), text: z.string(), at: z.number(), interrupt: z.literal(true).optional(), receivedAt: z.number().optional() }))
      .describe('Messages sent to it (POST /v1/jobs/{id}/messages), secrets redacted.'),
    progress: progressSchema.nullable().describe('Live progress while it runs (the server follows its events).'),
    approvals: z.array(approvalRecordSchema).nullable().describe('Its approvals answered so far (who, when, what); null when none.'),
  }),
);
export type JobDetailBody = z.output<typeof jobDetailSchema>;

/** What starting, cancelling or restarting a job answers. */
export const jobHandleSchema = named(
  'JobHandle',
  z.object({
    id: z.string(),
    label: z.string(),
    state: jobState,
    joined: z.enum(['attached', 'reused']).optional().describe('No new job: an identical one was running (attached) or ended ok ageMs ago (reused).'),
    ageMs: z.number().optional(),
  }),
);

const refusedSpawn = z.object({ index: z.number().describe("The task's place in the request."), code: z.string(), message: z.string() });

export const jobsStartedBody = named('JobsStarted', z.object({ jobs: z.array(jobHandleSchema), refused: z.array(refusedSpawn) }));

/** Nothing started: the first refusal's code, and every task's refusal (absent for a BAD_REQUEST body). */
export const jobsRefusedBody = named('JobsRefused', errorBody.extend({ refused: z.array(refusedSpawn).optional() }));

export const jobListBody = named(
  'JobList',
  z.object({
    jobs: z.array(jobSummarySchema),
    total: z.number().describe('Jobs that match the filter, over every page.'),
    next: z.number().nullable().describe('The offset of the next page; null on the last.'),
    totals: z.object({
      jobs: z.object({ queued: z.number(), running: z.number(), ended: z.number() }),
      endedByStatus: z.record(z.string(), z.number()),
      usage: usageSchema,
      sessionBudget: z
        .object({
          maxTokens: z.number().optional(),
          maxCostUsd: z.number().optional(),
          spentTokens: z.number(),
          spentUsd: z.number(),
          leasedTokens: z.number(),
          leasedUsd: z.number(),
          remainingTokens: z.number().optional(),
          remainingUsd: z.number().optional(),
          leases: z.number(),
          onExhausted: z.enum(['refuse', 'queue']),
        })
        .nullable()
        .describe("The server manager's sessionBudget pool; null without one."),
    }),
    lastEventId: z.number().describe('The id of the latest event: subscribe to /v1/events with Last-Event-ID set to it to miss nothing.'),
  }),
);

export type JobListBody = z.output<typeof jobListBody>;

export const messageReceiptBody = named(
  'MessageReceipt',
  z.object({
    jobId: z.string(),
    label: z.string(),
    message: z.number().describe("The message's 1-based number among the job's."),
    state: z.string(),
    delivery: z.enum(['posted', 'kept']),
    interrupt: z.boolean(),
  }),
);

/** An ended job in a wait's answer: its detail with one page of its result (src/server/wait-answers.ts). */
export const waitEndedSchema = named(
  'WaitEndedJob',
  jobDetailSchema.extend({
    resultText: z
      .string()
      .nullable()
      .describe(`The first page of its result (at most ${WAIT_LIMITS.resultPageChars} characters); empty past the answer's bound.`),
    resultChars: z.number().int().describe('The whole result, in characters.'),
    resultNext: z
      .number()
      .int()
      .nullable()
      .describe('Where the rest starts: read it with GET /v1/jobs/{id}/result?offset=resultNext&limit=…; null when all of it is here.'),
  }),
);
export type WaitEndedBody = z.output<typeof waitEndedSchema>;

export const waitOutcomeBody = named(
  'WaitOutcome',
  z.object({ timedOut: z.boolean(), waitedMs: z.number(), ended: z.array(waitEndedSchema), running: z.array(jobSummarySchema) }),
);

export const resumedBody = named('JobResumed', jobHandleSchema.extend({ resumedFrom: z.string() }));
export const restartedBody = named('JobRestarted', jobHandleSchema.extend({ restarted: z.enum(['stopping', 'requeued']) }));

const jobRefList = z.array(z.string());
export const jobsCancelledBody = named(
  'JobsCancelled',
  z.object({
    cancelled: jobRefList.describe('Cancel requested for these (refs).'),
    ended: jobRefList.describe('Over already: nothing to do.'),
    unknown: jobRefList.describe('No such job.'),
  }),
);

/** A worktree job's branch (its paths on the server's disk are not shown). */
export const worktreeBody = named(
  'JobWorktree',
  z.object({
    jobId: z.string(),
    branch: z.string().describe('forkpool/<job id>'),
    base: z.string().describe('The commit it was made from.'),
    state: z.enum(WORKTREE_STATES),
    changed: z.array(z.string()).optional().describe('What it changed against base (`M path`, `A path`, `D path`), once it ended.'),
  }),
);
export const worktreeActedBody = named('JobWorktreeActed', z.object({ message: z.string(), worktree: worktreeBody }));

export const healthBody = named(
  'Health',
  z.object({
    ok: z.literal(true),
    uptimeMs: z.number(),
    ledger: z.discriminatedUnion('state', [
      z.object({ state: z.literal('off') }),
      z.object({ state: z.literal('ok') }),
      z.object({
        state: z.literal('degraded'),
        error: z.object({ code: z.string(), message: z.string() }),
        since: z.number(),
        unsaved: z.number(),
        failedWrites: z.number(),
      }),
    ]),
    executor: z.object({ ok: z.boolean(), problem: z.string().optional(), since: z.number().optional() }),
  }),
);

export const openApiBody = named(
  'OpenApiDocument',
  z.looseObject({ openapi: z.string(), info: z.looseObject({ title: z.string(), version: z.string() }), paths: z.record(z.string(), z.unknown()) }),
);

/** A body that is text, not JSON: `/metrics`, the event stream. */
export const textBody = named('Text', z.string());
