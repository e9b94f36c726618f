import { z } from 'zod';
import { configSchema, type ForkpoolConfig } from './config.js';
import { ERROR_CODES, type SerializedError } from './errors.js';
import type { UsageByModel } from './usage.js';
import { budgetLimitsSchema, type BudgetLimits } from './budget.js';
import { spawnSpecWireFields, type SpawnSpec } from './spawn-spec.js';
import { JOB_HOOK_EVENTS, type JobHookEvent } from './hooks.js';
import { TRACEPARENT_PATTERN } from './trace-context.js';

// A job's spec as it crosses to its worker (the task handed to the executor), and the schemas
// the worker checks it with. The port messages that follow it are in protocol.ts.

export const usageSchema = z.object({
  promptTokens: z.number(),
  completionTokens: z.number(),
  totalTokens: z.number(),
  requests: z.number(),
  cachedTokens: z.number().optional(),
  cacheWriteTokens: z.number().optional(),
});

export const JOB_ROLES = ['primary', 'escalation', 'user'] as const;

/** A job's optional name: no spaces, unique among live jobs (the manager checks that). One schema for every door a spawn comes through. */
export const jobNameSchema = z
  .string()
  .trim()
  .min(1)
  .max(64)
  .regex(/^[^\s]+$/, 'a name has no spaces')
  .optional();
export type JobRole = (typeof JOB_ROLES)[number];

/**
 * What a worker needs to run one job: a cloned config, never a live object. Its spawn's own
 * system prompt, tool subset and model ({@link SpawnSpec}) were checked at admission.
 */
export interface JobSpec extends SpawnSpec {
  id: string;
  label: string;
  task: string;
  /** Whose job it is; its usage is booked under `<role>:subagent`. */
  role: JobRole;
  config: ForkpoolConfig;
  /** The parent's capped session summary, for `full_context: true`. */
  parentSummary?: string;
  /** A configured peer (a key of `config.agents`); unset: a fork of the parent. */
  agent?: string;
  /** The parent's tool call that started it (`agent_<name>`, `spawn_background_agent`). */
  parentToolId?: string;
  /** `remote`: it runs on the manager's remote executor (a spawn's `executor: "remote"`). */
  executor?: 'remote';
  /** 1 for a job the session started; a job's child is one deeper. It gets the spawn tool while below its max depth. */
  depth?: number;
  /** A job resumed after it waited for its children (its slot was given back meanwhile). */
  resume?: ResumeState;
  /**
   * A run from its task (no `resume`) after a restart or a re-queue: its children's results that
   * no run it has now read (held for it, or handed to the run that was stopped). Its first turn
   * reads them after the task, once.
   */
  heldResults?: string;
  /** 1 on the first run; higher after a re-queue (an innocent job killed with its thread). */
  attempt: number;
  /** Set in every child process's environment (see process-tag.ts): `<manager>.<job>.<attempt>`. */
  processTag?: string;
  /** Its budgets, resolved on the main thread (agent's, or the spawn's tighter override). */
  budget?: BudgetLimits;
  /** Messages sent to it that this run must still be given before its next model call (see steering.ts). */
  steering?: SteeringMessage[];
  /** The main-thread tools it is offered (host and MCP tools): stubs whose calls cross its port (see HostToolStub). */
  hostTools?: HostToolStub[];
  /** The job events that have hooks on the main thread that runs it: its thread asks for only those (docs/tools.md "Hooks"). */
  hooks?: JobHookEvent[];
  /** W3C trace context of the job's `invoke_agent` span (see tracing.ts): a remote worker's spans continue its trace. */
  traceparent?: string;
}

/**
 * What a job's thread knows of a tool that runs on the main thread (a host or MCP tool): enough
 * to offer it to the model and gate it. A call crosses the job's port as `tool-call`, is
 * validated there against the real schema, and is answered by `tool-answer`.
 */
export interface HostToolStub {
  name: string;
  description: string;
  /** The JSON Schema the model is shown. */
  parameters: Record<string, unknown>;
  gated: boolean;
  timeoutMs?: number;
}

export const hostToolStubSchema = z.strictObject({
  name: z.string().min(1).max(64),
  description: z.string().max(10_000),
  parameters: z.record(z.string(), z.unknown()),
  gated: z.boolean(),
  timeoutMs: z.number().int().min(1).optional(),
});

/** A message sent to a job (`send_to_background_agent`): its number among the job's messages, and its text. */
export interface SteeringMessage {
  id: number;
  text: string;
}

/** The longest message a job may be sent. */
export const STEERING_MAX_CHARS = 20_000;
export const steeringMessageSchema = z.strictObject({ id: z.number().int().min(1), text: z.string().min(1).max(STEERING_MAX_CHARS) });

export const serializedErrorSchema: z.ZodType<SerializedError> = z.lazy(() =>
  z.object({
    name: z.string(),
    code: z.enum(ERROR_CODES),
    message: z.string(),
    stack: z.string().optional(),
    jobId: z.string().optional(),
    toolName: z.string().optional(),
    timeoutMs: z.number().optional(),
    cause: serializedErrorSchema.optional(),
  }),
) as unknown as z.ZodType<SerializedError>;

export const jobSpecSchema = z.strictObject({
  id: z.string().min(1),
  label: z.string(),
  task: z.string().min(1),
  role: z.enum(JOB_ROLES),
  config: configSchema,
  parentSummary: z.string().optional(),
  agent: z.string().optional(),
  parentToolId: z.string().optional(),
  executor: z.literal('remote').optional(),
  depth: z.number().int().min(1).max(100).optional(),
  resume: z
    .strictObject({
      messages: z.array(z.unknown()),
      usage: z.record(z.string(), usageSchema),
      iterations: z.number().int().min(0),
      childResults: z.string(),
      wrapUpSent: z.boolean().optional(),
      approval: z.literal(true).optional(),
      scheduledTurn: z.strictObject({ at: z.number().int().min(0), reason: z.string().max(500) }).optional(),
    })
    .optional(),
  heldResults: z.string().optional(),
  attempt: z.number().int().min(1),
  processTag: z.string().min(1).max(200).optional(),
  budget: budgetLimitsSchema.optional(),
  steering: z.array(steeringMessageSchema).max(1_000).optional(),
  hostTools: z.array(hostToolStubSchema).max(1_000).optional(),
  /** The job events that have hooks where it is run (asked of that main thread over its port). */
  hooks: z.array(z.enum(JOB_HOOK_EVENTS)).max(JOB_HOOK_EVENTS.length).optional(),
  traceparent: z.string().regex(TRACEPARENT_PATTERN).optional(),
  ...spawnSpecWireFields,
});

/**
 * A run going on from an approval pause reads the results held for it (`ResumeState.childResults`)
 * before its next model call, not at once: it names them with this id among `seenChildren` once
 * it has, so the main thread holds them again when the run ends (asleep, paused) before reading them.
 */
export const HELD_RESULTS_ID = '(held results)';

/** Where a job that waited for its children picks up: its conversation, and what it had used. */
export interface ResumeState {
  messages: unknown[];
  usage: UsageByModel;
  iterations: number;
  /** Its children's results, not yet seen by its model: injected before its next model call. */
  childResults: string;
  /** It was told to wrap up already (a budget at 90%): never twice. */
  wrapUpSent?: boolean;
  /** It paused for approvals: its last response's unanswered calls run first (no user message is added). */
  approval?: true;
  /**
   * `sleep`: the batch that paused for approvals also held schedule_next_turn (the model was told
   * "Sleeping until…"): once the approved calls have run, the run ends asleep until this turn.
   */
  scheduledTurn?: { at: number; reason: string };
}
