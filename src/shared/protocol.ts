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
  /** 1 on the first run; higher after a re-queue (an innocent job killed with its thread). */
  attempt: number;
}

const serializedErrorSchema: z.ZodType<SerializedError> = z.lazy(() =>
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
  attempt: z.number().int().min(1),
});

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
  | { type: 'alert'; jobId: string; message: string; severity: AlertSeverity };

export const ALERT_SEVERITIES = ['info', 'warning', 'critical'] as const;
export type AlertSeverity = (typeof ALERT_SEVERITIES)[number];
/** The longest alert message a job may send. */
export const ALERT_MAX_CHARS = 2_000;

/** Main → worker, over the job's port. */
export type MainMessage = { type: 'cancel'; reason: 'cancel' | 'timeout' | 'close' };

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
]);

export const mainMessageSchema = z.object({ type: z.literal('cancel'), reason: z.enum(['cancel', 'timeout', 'close']) });

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
