import { z } from 'zod';
import type { ForkpoolConfig } from './config.js';
import { STOP_REASONS, type LoopEvent, type StopReason } from './loop-events.js';
import type { UsageByModel } from './usage.js';
import type { RequestOutcome } from './model-types.js';
import { BUDGET_NAMES, type BudgetName } from './budget.js';
import { serializedErrorSchema, steeringMessageSchema, usageSchema, type JobSpec, type ResumeState } from './job-spec.js';
import type { SerializedError } from './errors.js';
import type { FileRead } from './tools/file-reads.js';

export type { FileRead };
// The job spec and its schemas moved to job-spec.ts; re-exported so the many importers of this module keep one door.
export {
  HELD_RESULTS_ID,
  JOB_ROLES,
  STEERING_MAX_CHARS,
  jobNameSchema,
  jobSpecSchema,
  serializedErrorSchema,
  type HostToolStub,
  type JobRole,
  type JobSpec,
  type ResumeState,
  type SteeringMessage,
} from './job-spec.js';

/**
 * Everything that crosses the thread boundary, defined once. Messages are validated with zod
 * where they enter: the worker checks the spec, the main thread checks each port message.
 */

/** A host tool's answer, main → worker: its text (capped), or its error for the model to read. */
export type HostToolAnswer = { ok: true; output: string } | { ok: false; code: string; message: string };

/** A gated call that waits for an approval, as the job reports it when it pauses. */
export interface AwaitedCall {
  callId: string;
  tool: string;
  summary: string;
  /** The call's arguments as the model wrote them (the main thread redacts and caps them). */
  args: string;
}

/**
 * A job asks the main thread to start a child (a thread never creates threads). Its own spec
 * (system prompt, tool subset, model) is as the job's model asked: the main thread checks it
 * at admission, as for any spawn.
 */
export interface ChildSpawnRequest {
  task: string;
  label: string;
  agent?: string | undefined;
  name?: string | undefined;
  systemPrompt?: string | undefined;
  replaceSystemPrompt?: boolean | undefined;
  tools?: string[] | undefined;
  model?: string | undefined;
  scheduler?: string | undefined;
  /** JSON Schema its answer must match (its spawn tool offers it only with `background.allowOutputSchema`). */
  outputSchema?: Record<string, unknown> | undefined;
}

/** How a job's tool loop ended, as the worker reports it. */
export interface JobOutcome {
  stopReason: StopReason;
  /** The job's whole answer (or what it found before it stopped). Never capped here. */
  text: string;
  usage: UsageByModel;
  iterations: number;
  error?: SerializedError;
  /** The budget that ran out, when it stopped for one. */
  budgetExceeded?: BudgetName;
  /** Files it read, for the stale check (absent: none recorded). */
  reads?: FileRead[];
  /** A typed job's value, validated against its output schema in the worker (absent: untyped, or it failed RESULT_INVALID). */
  data?: unknown;
  /** Its final conversation, cut to `background.keepConversationChars` (conversation-cap.ts), kept for a resume; absent: not kept. */
  conversation?: unknown[];
  /**
   * Set by a remote worker that stopped the job itself (a BullMQ worker enforces the job's
   * timeout on its side): the main thread reads it as its own stop request.
   */
  stoppedBy?: StopRequest;
  /** `exit_on_defer`: it answered after schedule_next_turn; it ends `deferred`, to run again at `at` (epoch ms). */
  deferred?: { at: number; reason: string };
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
  /** A gated tool asks the main thread's permission store; answered by `permission-answer`. */
  | { type: 'permission'; jobId: string; requestId: number; tool: string; callId?: string }
  /**
   * Its gated calls wait for approvals (`approvals: "ask"`): the job ends this attempt (its slot
   * and thread go back) and runs again from `state` once they are answered. Ends the attempt.
   * `seenChildren`: the children whose results its model read; the main thread holds the others'
   * (handed to this run, never read) for its next run.
   */
  | { type: 'await-approval'; jobId: string; state: Omit<ResumeState, 'childResults'>; calls: AwaitedCall[]; seenChildren: string[] }
  /**
   * `sleep` scheduler: it called schedule_next_turn; it ends this attempt (its slot and thread go
   * back) and the main thread runs it again from `state` at `at` (epoch ms). Ends the attempt.
   * `seenChildren` as for `await-approval`.
   */
  | { type: 'sleep'; jobId: string; state: Omit<ResumeState, 'childResults'>; at: number; reason: string; seenChildren: string[] }
  /** A host tool's call (see HostToolStub); answered by `tool-answer` with the same request id. */
  | { type: 'tool-call'; jobId: string; requestId: number; name: string; callId: string; args: unknown }
  /** The job no longer waits for that call (cancel, timeout): its signal on the main thread aborts. */
  | { type: 'tool-abort'; jobId: string; requestId: number }
  /** Adaptive concurrency: model request `ticket` asks its endpoint's gate for a slot; answered by `gate-admitted`. */
  | { type: 'gate-admit'; jobId: string; ticket: number }
  /** Request `ticket` ended, or was given up while waiting: its slot (or its place in line) goes back. */
  | { type: 'gate-settle'; jobId: string; ticket: number; outcome: RequestOutcome }
  /**
   * The job gave its final answer with children still running and waits for them: it ends this
   * attempt (its slot and thread go back) and is resumed with their results. Ends the attempt.
   */
  | { type: 'suspend'; jobId: string; state: Omit<ResumeState, 'childResults'>; seenChildren: string[] };

export const ALERT_SEVERITIES = ['info', 'warning', 'critical'] as const;
export type AlertSeverity = (typeof ALERT_SEVERITIES)[number];
/** The longest alert message a job may send. */
export const ALERT_MAX_CHARS = 2_000;

/**
 * Why the main thread asks a job to stop: the user or parent cancelled it, its timeout fired,
 * the manager is closing, or its wall-clock budget ran out. Sent with `cancel` over the job's
 * port (and over BullMQ's control channel); the job's loop then stops `aborted` (a
 * {@link StopReason}), and the manager turns the request into the record's `status`.
 */
export const STOP_REQUESTS = ['cancel', 'timeout', 'close', 'budget'] as const;
export type StopRequest = (typeof STOP_REQUESTS)[number];

/** Main → worker, over the job's port. */
export type MainMessage =
  | { type: 'cancel'; reason: StopRequest }
  /** `joined`: an identical job was already running (attached) or ended moments ago (reused); no new job started. */
  | { type: 'spawn-result'; requestId: number; ok: true; childId: string; label: string; joined?: 'attached' | 'reused' }
  | { type: 'spawn-result'; requestId: number; ok: false; code: string; message: string }
  /** Children that ended, for the job's next model call; `childIds` says whose. */
  | { type: 'child-results'; childIds: string[]; text: string }
  /** A message for the job's next model call; `interrupt`: cancel the model call in flight (the job goes on with the message). */
  | { type: 'steer'; id: number; text: string; interrupt: boolean }
  /** `ask`: the call waits for an approval (the job pauses); `reason`: a deny someone gave, read by the model. */
  | { type: 'permission-answer'; requestId: number; granted: boolean; ask?: true; reason?: string }
  | ({ type: 'tool-answer'; requestId: number } & HostToolAnswer)
  /** The gate's answer to `gate-admit`: request `ticket` may be sent. */
  | { type: 'gate-admitted'; ticket: number };

const fileReadSchema = z.strictObject({
  path: z.string().min(1).max(4_096),
  sha256: z.string().regex(/^(?:[0-9a-f]{64})?$/),
  size: z.number().int().min(0),
  mtimeMs: z.number(),
  readAt: z.number(),
  ranges: z.array(z.tuple([z.number().int().min(1), z.number().int().min(1)])).max(10_000),
});

const loopEventSchema = z.looseObject({ type: z.string() });

/** A model request's outcome as a job reports it to its gate (see RequestOutcome). */
const requestOutcomeSchema = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('ok'), latencyMs: z.number() }),
  z.strictObject({
    kind: z.literal('overloaded'),
    status: z.number().int(),
    latencyMs: z.number(),
    retryAfterMs: z.number().min(0).optional(),
  }),
  z.strictObject({ kind: z.literal('failed'), latencyMs: z.number(), retryAfterMs: z.number().min(0).optional() }),
  z.strictObject({ kind: z.literal('abandoned') }),
]);

export const workerMessageSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('started'), jobId: z.string(), threadId: z.number(), at: z.number() }),
  z.object({ type: z.literal('progress'), jobId: z.string(), event: loopEventSchema }),
  z.object({
    type: z.literal('done'),
    jobId: z.string(),
    outcome: z.object({
      stopReason: z.enum(STOP_REASONS),
      text: z.string(),
      usage: z.record(z.string(), usageSchema),
      iterations: z.number(),
      error: serializedErrorSchema.optional(),
      budgetExceeded: z.enum(BUDGET_NAMES).optional(),
      reads: z.array(fileReadSchema).max(1_000).optional(),
      data: z.unknown().optional(),
      conversation: z.array(z.unknown()).optional(),
      stoppedBy: z.enum(STOP_REQUESTS).optional(),
      deferred: z.strictObject({ at: z.number().int().min(0), reason: z.string().max(500) }).optional(),
    }),
  }),
  z.object({ type: z.literal('process'), jobId: z.string(), pgid: z.number().int().min(2), state: z.enum(['started', 'ended']) }),
  // A gated tool asks the main thread's permission store; answered by `permission-answer` on the same port.
  z.object({ type: z.literal('permission'), jobId: z.string(), requestId: z.number().int(), tool: z.string(), callId: z.string().max(1_000).optional() }),
  z.object({
    type: z.literal('await-approval'),
    jobId: z.string(),
    state: z.looseObject({ messages: z.array(z.unknown()), usage: z.record(z.string(), usageSchema), iterations: z.number().int().min(0) }),
    calls: z
      .array(z.strictObject({ callId: z.string().max(1_000), tool: z.string().max(200), summary: z.string().max(10_000), args: z.string().max(10_000_000) }))
      .min(1)
      .max(1_000),
    seenChildren: z.array(z.string()),
  }),
  z.object({
    type: z.literal('sleep'),
    jobId: z.string(),
    state: z.looseObject({ messages: z.array(z.unknown()), usage: z.record(z.string(), usageSchema), iterations: z.number().int().min(0) }),
    at: z.number().int().min(0),
    reason: z.string().max(500),
    seenChildren: z.array(z.string()),
  }),
  z.object({
    type: z.literal('tool-call'),
    jobId: z.string(),
    requestId: z.number().int(),
    name: z.string().max(64),
    callId: z.string().max(1_000),
    args: z.unknown(),
  }),
  z.object({ type: z.literal('tool-abort'), jobId: z.string(), requestId: z.number().int() }),
  z.object({ type: z.literal('gate-admit'), jobId: z.string(), ticket: z.number().int().min(1) }),
  z.object({ type: z.literal('gate-settle'), jobId: z.string(), ticket: z.number().int().min(1), outcome: requestOutcomeSchema }),
  z.object({ type: z.literal('alert'), jobId: z.string(), message: z.string().min(1).max(ALERT_MAX_CHARS), severity: z.enum(ALERT_SEVERITIES) }),
  z.object({
    type: z.literal('spawn'),
    jobId: z.string(),
    requestId: z.number().int(),
    request: z.object({
      task: z.string(),
      label: z.string(),
      agent: z.string().optional(),
      name: z.string().optional(),
      // Loose here: admission checks them as it checks any spawn's (a bad one is a refusal the job's model reads, not a broken protocol).
      systemPrompt: z.string().optional(),
      replaceSystemPrompt: z.boolean().optional(),
      tools: z.array(z.string()).optional(),
      extras: z.array(z.string()).optional(),
      model: z.string().optional(),
      scheduler: z.string().max(40).optional(),
      outputSchema: z.record(z.string(), z.unknown()).optional(),
    }),
  }),
  z.object({
    type: z.literal('suspend'),
    jobId: z.string(),
    state: z.object({
      messages: z.array(z.unknown()),
      usage: z.record(z.string(), usageSchema),
      iterations: z.number().int().min(0),
      wrapUpSent: z.boolean().optional(),
    }),
    seenChildren: z.array(z.string()),
  }),
]);

export const mainMessageSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('cancel'), reason: z.enum(STOP_REQUESTS) }),
  z.object({
    type: z.literal('spawn-result'),
    requestId: z.number(),
    ok: z.boolean(),
    childId: z.string().optional(),
    label: z.string().optional(),
    joined: z.enum(['attached', 'reused']).optional(),
    code: z.string().optional(),
    message: z.string().optional(),
  }),
  z.object({ type: z.literal('child-results'), childIds: z.array(z.string()), text: z.string() }),
  z.object({
    type: z.literal('permission-answer'),
    requestId: z.number().int(),
    granted: z.boolean(),
    ask: z.literal(true).optional(),
    reason: z.string().max(10_000).optional(),
  }),
  z.object({
    type: z.literal('tool-answer'),
    requestId: z.number().int(),
    ok: z.boolean(),
    output: z.string().optional(),
    code: z.string().optional(),
    message: z.string().optional(),
  }),
  steeringMessageSchema.extend({ type: z.literal('steer'), interrupt: z.boolean() }),
  z.object({ type: z.literal('gate-admitted'), ticket: z.number().int().min(1) }),
]);

/** The value handed to the executor as one task. Ports are transferred, not copied. */
export interface JobTask {
  spec: JobSpec;
  /**
   * Events and results (worker → main) and cooperative cancel (main → worker). A Piscina task is
   * sent without one: the worker's loader sets it, from {@link linkId}, before the task runs
   * (the one place a JobTask is built without it is Attempt.launch).
   */
  port: import('node:worker_threads').MessagePort;
  /** This job's id on its thread's link (thread-links.ts), in place of a port of its own. */
  linkId?: number;
  /**
   * The main thread serves this job's adaptive rate gate (`concurrency: "adaptive"`, a job on
   * this process's threads): its model requests ask it over `port` (`gate-admit`). Unset: the
   * shared pause-on-429 gate ({@link rateGateBuffer}).
   */
  adaptiveGate?: true;
  /** Shared by every job of an executor: the 429 back-off gate (see rate-gate.ts). */
  rateGateBuffer?: SharedArrayBuffer;
  /**
   * Set by an executor that must find the job's thread itself (shared isolation): the job
   * writes its thread id into element 0 as it starts.
   */
  threadSlot?: Int32Array;
  /**
   * Which manager launched it: its durable ledger scope. An executor shared by several managers
   * on one ledger (a server's and its sessions') keeps their `bg-1`s apart by it, and a
   * restarted manager on the same scope finds its own again (BullMQ job ids).
   */
  owner?: string;
}

/** The ports a task carries, to transfer with it (or close when it will not run). */
export function taskPorts(task: Pick<JobTask, 'port'>): import('node:worker_threads').MessagePort[] {
  // A linked task's port is not set (see JobTask.port).
  return [task.port as JobTask['port'] | undefined].filter((port) => port !== undefined);
}

/**
 * A job attempt's lease on its endpoint's adaptive gate (src/main/limits/request-gate.ts): its
 * Attempt answers the job's `gate-admit` and `gate-settle` with it.
 */
export interface RequestGateService {
  /** Resolves once request `ticket` (numbered by the worker) may be sent. */
  admitRequest(ticket: number): Promise<void>;
  /** Request `ticket` ended (or was given up while waiting): its slot comes back. */
  settleRequest(ticket: number, outcome: RequestOutcome): void;
}

/** The main thread's permission store, as an attempt asks it for a job's `permission` message. */
export interface PermissionService {
  isGranted(tool: string): boolean;
}

export type { ForkpoolConfig };
