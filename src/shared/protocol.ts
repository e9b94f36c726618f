import { z } from 'zod';
import { configSchema, type ForkpoolConfig } from './config.js';
import { ERROR_CODES, type SerializedError } from './errors.js';
import type { LoopEvent, StopReason } from './tool-loop.js';
import type { UsageByModel } from './usage.js';

/**
 * Everything that crosses the thread boundary, defined once. Messages are validated with zod
 * where they enter: the worker checks the spec, the main thread checks each port message.
 */

export const JOB_ROLES = ['primary', 'escalation', 'user'] as const;
export type JobRole = (typeof JOB_ROLES)[number];

/** What a worker needs to run one job: a cloned config, never a live object. */
export interface JobSpec {
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
  /** The parent's tool call that started it (`agent_<name>`). */
  parentToolId?: string;
  /** 1 for a job the session started; a job's child is one deeper. It gets the spawn tool while below its max depth. */
  depth?: number;
  /** A job resumed after it waited for its children (its slot was given back meanwhile). */
  resume?: ResumeState;
  /** 1 on the first run; higher after a re-queue (an innocent job killed with its thread). */
  attempt: number;
  /** Set in every child process's environment (see process-tag.ts): `<manager>.<job>.<attempt>`. */
  processTag?: string;
}

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
  depth: z.number().int().min(1).max(100).optional(),
  resume: z
    .strictObject({
      messages: z.array(z.unknown()),
      usage: z.record(z.string(), z.object({ promptTokens: z.number(), completionTokens: z.number(), totalTokens: z.number(), requests: z.number() })),
      iterations: z.number().int().min(0),
      childResults: z.string(),
    })
    .optional(),
  attempt: z.number().int().min(1),
  processTag: z.string().min(1).max(200).optional(),
});

/** Where a job that waited for its children picks up: its conversation, and what it had used. */
export interface ResumeState {
  messages: unknown[];
  usage: UsageByModel;
  iterations: number;
  /** Its children's results, not yet seen by its model: injected before its next model call. */
  childResults: string;
}

/** A job asks the main thread to start a child (a thread never creates threads). */
export interface ChildSpawnRequest {
  task: string;
  label: string;
  agent?: string | undefined;
  name?: string | undefined;
}

/** How a job's tool loop ended, as the worker reports it. */
export interface JobOutcome {
  stopReason: StopReason;
  /** The job's whole answer (or what it found before it stopped). Never capped here. */
  text: string;
  usage: UsageByModel;
  iterations: number;
  error?: SerializedError;
}

/** Worker → main, over the job's port. */
export type WorkerMessage =
  | { type: 'started'; jobId: string; threadId: number; at: number }
  | { type: 'progress'; jobId: string; event: LoopEvent }
  | { type: 'done'; jobId: string; outcome: JobOutcome }
  /** A tool started (or saw the end of) a child process group; the main thread kills what is left. */
  | { type: 'process'; jobId: string; pgid: number; state: 'started' | 'ended' }
  /** The job's `report_alert`: something its parent should know before the job ends. */
  | { type: 'alert'; jobId: string; message: string; severity: AlertSeverity }
  /** The job's spawn tool: start a child; answered by `spawn-result`. */
  | { type: 'spawn'; jobId: string; requestId: number; request: ChildSpawnRequest }
  /**
   * The job gave its final answer with children still running and waits for them: it ends this
   * attempt (its slot and thread go back) and is resumed with their results. Ends the attempt.
   */
  | { type: 'suspend'; jobId: string; state: Omit<ResumeState, 'childResults'>; seenChildren: string[] };

export const ALERT_SEVERITIES = ['info', 'warning', 'critical'] as const;
export type AlertSeverity = (typeof ALERT_SEVERITIES)[number];
/** The longest alert message a job may send. */
export const ALERT_MAX_CHARS = 2_000;

/** Main → worker, over the job's port. */
export type MainMessage =
  | { type: 'cancel'; reason: 'cancel' | 'timeout' | 'close' }
  | { type: 'spawn-result'; requestId: number; ok: true; childId: string; label: string }
  | { type: 'spawn-result'; requestId: number; ok: false; code: string; message: string }
  /** Children that ended, for the job's next model call; `childIds` says whose. */
  | { type: 'child-results'; childIds: string[]; text: string };

const usageSchema = z.object({
  promptTokens: z.number(),
  completionTokens: z.number(),
  totalTokens: z.number(),
  requests: z.number(),
});

const loopEventSchema = z.looseObject({ type: z.string() });

export const workerMessageSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('started'), jobId: z.string(), threadId: z.number(), at: z.number() }),
  z.object({ type: z.literal('progress'), jobId: z.string(), event: loopEventSchema }),
  z.object({
    type: z.literal('done'),
    jobId: z.string(),
    outcome: z.object({
      stopReason: z.enum(['final', 'budget_exceeded', 'loop_detected', 'aborted', 'error']),
      text: z.string(),
      usage: z.record(z.string(), usageSchema),
      iterations: z.number(),
      error: serializedErrorSchema.optional(),
    }),
  }),
  z.object({ type: z.literal('process'), jobId: z.string(), pgid: z.number().int().min(2), state: z.enum(['started', 'ended']) }),
  z.object({ type: z.literal('alert'), jobId: z.string(), message: z.string().min(1).max(ALERT_MAX_CHARS), severity: z.enum(ALERT_SEVERITIES) }),
  z.object({
    type: z.literal('spawn'),
    jobId: z.string(),
    requestId: z.number().int(),
    request: z.object({ task: z.string(), label: z.string(), agent: z.string().optional(), name: z.string().optional() }),
  }),
  z.object({
    type: z.literal('suspend'),
    jobId: z.string(),
    state: z.object({ messages: z.array(z.unknown()), usage: z.record(z.string(), usageSchema), iterations: z.number().int().min(0) }),
    seenChildren: z.array(z.string()),
  }),
]);

export const mainMessageSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('cancel'), reason: z.enum(['cancel', 'timeout', 'close']) }),
  z.object({ type: z.literal('spawn-result'), requestId: z.number(), ok: z.boolean(), childId: z.string().optional(), label: z.string().optional(), code: z.string().optional(), message: z.string().optional() }),
  z.object({ type: z.literal('child-results'), childIds: z.array(z.string()), text: z.string() }),
]);

/** The value handed to the executor as one task. Ports are transferred, not copied. */
export interface JobTask {
  spec: JobSpec;
  /** Events and results (worker → main) and cooperative cancel (main → worker). */
  port: import('node:worker_threads').MessagePort;
  /** Comlink channel to the main thread's permission store. */
  permissionPort: import('node:worker_threads').MessagePort;
  /** Shared by every job of an executor: the 429 back-off gate (see rate-gate.ts). */
  rateGateBuffer?: SharedArrayBuffer;
  /**
   * Set by an executor that must find the job's thread itself (shared isolation): the job
   * writes its thread id into element 0 as it starts.
   */
  threadSlot?: Int32Array;
}

/** The permission service the main thread exposes to workers over comlink. */
export interface PermissionService {
  isGranted(tool: string): boolean;
}

export type { ForkpoolConfig };
