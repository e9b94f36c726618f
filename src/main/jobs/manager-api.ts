/**
 * The background manager's public shapes (options, requests, events) and spawn admission,
 * apart from the engine in manager.ts.
 */
import type { Logger } from 'pino';
import type { ToolDefinition } from '../../shared/tool-contract.js';
import type { ToolSource } from '../tools/catalog.js';
import { z } from 'zod';
import { agentEntry } from '../../shared/agents.js';
import type { ForkpoolConfig } from '../../shared/config.js';
import { joinSchema, type JoinPolicy } from '../../shared/scheduling-config.js';
import { ForkpoolError, JobError, errorMessage, type SerializedError } from '../../shared/errors.js';
import { JOB_ROLES, jobNameSchema, type AlertSeverity, type JobRole } from '../../shared/protocol.js';
import type { LoopEvent } from '../../shared/loop-events.js';
import type { ApprovalRecord, PendingApproval } from '../../shared/approvals.js';
import { budgetLimitsSchema, type BudgetLimits } from '../../shared/budget.js';
import type { Executor } from '../executors/executor.js';
import type { RemoteSpawner } from '../remote/spawner.js';
import type { DeliveryLedger, JobRecord } from '../ledger/ledger.js';
import type { JobStore } from '../ledger/ledger-store.js';
import type { PermissionStore } from '../limits/permissions.js';
import type { JobScheduler } from '../executors/scheduler.js';
import { WORKSPACE_MODES, type WorkspaceMode } from './worktrees.js';
import type { FunctionHooks } from '../hooks/hook-runner.js';
import { TRACEPARENT_PATTERN } from '../../shared/trace-context.js';
import { outputSchemaFrom, type OutputSchema } from '../../shared/output-schema.js';
import { checkSpawnSpec, spawnSpecInputFields, type SpawnSpec } from '../../shared/spawn-spec.js';

/** Where a spawn runs: the manager's executor, or its `remote` one. */
export const SPAWN_EXECUTORS = ['local', 'remote'] as const;
export type SpawnExecutor = (typeof SPAWN_EXECUTORS)[number];

export interface BackgroundManagerOptions {
  config: ForkpoolConfig;
  /**
   * Defaults to a Piscina executor shaped by `config.background`, which the manager then owns
   * and closes. An executor passed in is the caller's: close() leaves it running unless
   * `closeExecutor` says otherwise.
   */
  executor?: Executor;
  /** Close the executor on close(). Default: only when the manager created it. */
  closeExecutor?: boolean;
  /**
   * A second executor for remote spawns (a `RemoteExecutor` around your spawner, or one
   * such spawner, which the manager then wraps and closes): a spawn's `executor: "remote"` runs
   * there, and the parent's model gets `spawn_remote_agent`. See docs/scale-out.md "Remote spawns".
   */
  remote?: Executor | RemoteSpawner;
  /** The session's grants, served to workers; background jobs never ask a person. */
  permissions?: PermissionStore;
  logger?: Logger;
  /** Job timers (timeout, cancel grace); tests inject a manual one to drive time. */
  scheduler?: JobScheduler;
  /**
   * A durable ledger scope (`openSqliteLedger(path).jobs(scope)`): every record is written there
   * before it is acted on, and the manager starts by recovering what a previous process left
   * (docs/durability.md). Default: the ledger lives in memory.
   */
  store?: JobStore;
  /**
   * Host tools: the embedder's functions, offered to jobs by name (`config.tools`, an agent's
   * `tools`, a spawn's `extras`). They run here on the main thread; a job's call crosses its
   * thread's link and is validated against the real schema (docs/tools.md "Your own tools").
   */
  tools?: readonly ToolDefinition[];
  /** Tool sources with a life (MCP servers): started before first use, closed with the manager. */
  toolSources?: readonly ToolSource[];
  /**
   * Library hooks by event, run on the main thread beside the config's command hooks: a job's
   * PreToolUse/PostToolUse/SubagentStart/SubagentStop reach them over its thread's link
   * (docs/tools.md "Hooks").
   */
  hooks?: FunctionHooks;
}

export interface SpawnRequest {
  task: string;
  label: string;
  /** Default `primary`. `user` jobs are not wave-gated. */
  role?: JobRole;
  /** The agent turn that spawned it; omit for a user-started job. */
  wave?: number | null;
  /** The parent's capped session summary (`full_context: true`). */
  parentSummary?: string;
  /** A configured peer agent; unset: a fork of the parent (a `user` job: `background.defaultAgent`). */
  agent?: string;
  /** Unique among live jobs; usable wherever an id is (cancel, check, restart). */
  name?: string;
  /** The parent's tool call that started it (`agent_<name>`, `spawn_background_agent`); its events carry it. */
  parentToolId?: string;
  /** When its wave's follow-up may come early (docs/delivery.md "Wave joins"); replaces the wave's join. */
  join?: JoinPolicy;
  /** Tighter budgets than its agent's (or `background.budget`'s); a field above them is refused (BUDGET_OVER_LIMIT). */
  budget?: BudgetLimits;
  /** `worktree`: run in a fresh git worktree on branch `forkpool/<id>` (default `background.workspace`; see worktrees.ts). */
  workspace?: WorkspaceMode;
  /** `remote`: run on the manager's `remote` executor (EXECUTOR_UNAVAILABLE without one). Default `local`, the manager's executor. */
  executor?: SpawnExecutor;
  /**
   * This job's own system prompt, appended to the background baseline (after its agent's).
   * At most 50,000 characters. See docs/agents.md "A spawn's own spec".
   */
  systemPrompt?: string;
  /** `systemPrompt` replaces the baseline instead; refused (PROMPT_REPLACE_NOT_ALLOWED) unless `background.allowSystemPromptReplace`. */
  replaceSystemPrompt?: boolean;
  /**
   * Built-in tools by name: the job gets only these. Each must be one it would have anyway (its
   * agent's `tools`, else the config's): an unknown name is TOOL_UNKNOWN, another TOOL_NOT_ALLOWED.
   */
  tools?: string[];
  /** Catalog tools added to its set (core-agent's `Extras`): any tool of the catalog; an unknown name is TOOL_UNKNOWN. */
  extras?: string[];
  /** The model it runs, among `background.spawnModels` (by default the models the config names); else MODEL_NOT_ALLOWED. */
  model?: string;
  /**
   * Its between-turn scheduler (core-agent's `Spec.Scheduler`): `default` (absent:
   * `background.scheduler`), `sleep`, `exit_on_defer` or `none`; another name is SCHEDULER_UNKNOWN.
   * See docs/delivery.md "Schedulers".
   */
  scheduler?: string;
  /**
   * The schema its final answer must match: a zod schema (converted with `z.toJSONSchema`) or a
   * JSON Schema object. The validated value is the record's `data`; after one repair turn a
   * value that still does not match fails the job with RESULT_INVALID. A bad schema is refused
   * at spawn (TOOL_ARGUMENTS_INVALID naming `outputSchema`). See docs/delivery.md "Typed results".
   */
  outputSchema?: OutputSchema | z.ZodType;
  /** Its own turn timeout in ms (0: off), over its agent's `turnTimeoutMs` and the config's; past it: TURN_TIMEOUT. */
  turnTimeoutMs?: number;
  /**
   * A guess (docs/delivery.md "Speculative jobs"): cancelled when a real job waits for its slot
   * or budget, and, spawned in a session's turn, when that turn ends without referring to it.
   * A cancelled guess is never delivered. Never joins nor is joined by an identical spawn. Default false.
   */
  speculative?: boolean;
  /**
   * W3C trace context of the span that caused this spawn (a tool call, a request of the host's):
   * the job's `invoke_agent` span is its child. Default: the active span, if any (docs/observability.md).
   */
  traceparent?: string;
}

export interface SpawnOptions {
  /** Aborting it cancels the job (at once while queued, in two phases while running). */
  signal?: AbortSignal;
  /** Default true: an identical spawn may join or reuse a job (docs/delivery.md "De-duplication"). False: always a job of its own (an `agent_<name>` call waits on its own). */
  dedup?: boolean;
}

export interface JobAlert {
  jobId: string;
  label: string;
  message: string;
  severity: AlertSeverity;
  /** 1-based among this job's alerts. */
  number: number;
  at: number;
}

export interface JobHandle {
  id: string;
  label: string;
  state: JobRecord['state'];
  /**
   * Set when no new job started (see docs/delivery.md "De-duplication"): `attached`, an identical job was
   * running and this is it; `reused`, one ended `ok` `ageMs` ago and its result stands.
   */
  joined?: 'attached' | 'reused';
  ageMs?: number;
}

/** How a message is sent to a job (ParentControls.send). */
export interface SteerOptions {
  /** Cancel the job's model call in flight: it asks again at once, with the message. Default false (before its next model call). */
  interrupt?: boolean;
}

/** What sending a message did. */
export interface SteerReceipt {
  jobId: string;
  label: string;
  /** The message's 1-based number among the job's (its record's `messages`). */
  message: number;
  /** The job's state when it was sent (`queued`, `dispatched`, `running`, `suspended`). */
  state: string;
  /** `posted`: over the port to its run; `kept`: it is queued or waits for its children and is given it when it runs again. */
  delivery: 'posted' | 'kept';
  interrupt: boolean;
}

export interface CloseReport {
  /** Jobs cancelled by close (queued or running). */
  cancelled: string[];
  /** Jobs that did not end within the bound and were hard-stopped with their threads. */
  stragglers: string[];
}

/**
 * What the delivery side (src/main/delivery/deliveries.ts) works through, and nothing else
 * does: the ledger's hand-over operations, the end of a spawning turn, and `backgrounded`.
 */
export interface DeliveryPort {
  readonly ledger: Pick<DeliveryLedger, 'drain' | 'markDelivered' | 'markShown' | 'undelivered' | 'undeliveredCount' | 'snapshot' | 'undeliver'>;
  /** The spawning turn is over: its wave can now end. */
  sealWave(wave: number): void;
  /** Marks a running job `backgrounded` and emits `backgrounded` the first time. */
  markBackgrounded(id: string): Readonly<JobRecord> | undefined;
}

/** Records in events are frozen values: keep them, never change them. */
export type ManagerEvents = {
  spawned: [Readonly<JobRecord>];
  started: [Readonly<JobRecord>];
  /** `parentToolId`: set for a job an `agent_<name>` or `spawn_background_agent` call started. */
  progress: [{ jobId: string; event: LoopEvent; parentToolId?: string }];
  /** An `agent_<name>(background: true)` call returned early; the job goes on. */
  backgrounded: [Readonly<JobRecord>];
  done: [Readonly<JobRecord>];
  requeued: [Readonly<JobRecord>];
  'wave-done': [{ wave: number; jobs: Readonly<JobRecord>[] }];
  /** A wave's join let its follow-up come before all its jobs ended (`wave-done` still comes at the end). */
  'wave-joined': [{ wave: number; reason: 'quorum' | 'deadline'; ended: Readonly<JobRecord>[]; pending: Readonly<JobRecord>[] }];
  /** A message was sent to a job (send_to_background_agent, `send()`); its record's `messages` has it. */
  message: [SteerReceipt];
  /** A job's `report_alert`, at once (at most `background.maxAlertsPerJob` per job). */
  alert: [JobAlert];
  /** A job's gated call waits for an answer (`approvals: "ask"`); answer it with `approve()`. */
  'approval-requested': [PendingApproval];
  /** A waiting call was answered (by someone, or by its timeout). */
  'approval-resolved': [ApprovalRecord];
  /** A job fell asleep (`sleep` scheduler) until its record's `sleepWait.at`; it holds no slot meanwhile. */
  sleeping: [Readonly<JobRecord>];
  idle: [];
  /**
   * A write to the durable ledger failed (disk full, I/O error). A spawn or delivery it belonged
   * to was refused; a job's start or ending was kept in memory and is written again before the
   * next write (`unsaved`). `first`: the first failure since writes last went through.
   */
  'ledger-error': [{ error: SerializedError; sqliteCode: string; operation: string; unsaved: number; first: boolean }];
  /** Writes go through again after `ledger-error`: everything unsaved is on disk now. */
  'ledger-recovered': [{ failedWrites: number }];
};

/** Fires one of the manager's events. */
export type Emit = <K extends keyof ManagerEvents>(event: K, ...args: ManagerEvents[K]) => void;

const spawnRequestSchema = z.strictObject({
  task: z.string().trim().min(1, 'task must not be empty').max(200_000),
  label: z.string().max(200),
  role: z.enum(JOB_ROLES).optional(),
  wave: z.number().int().nullable().optional(),
  parentSummary: z.string().optional(),
  agent: z.string().min(1).max(64).optional(),
  name: jobNameSchema,
  parentToolId: z.string().min(1).max(200).optional(),
  join: joinSchema.optional(),
  budget: budgetLimitsSchema.optional(),
  workspace: z.enum(WORKSPACE_MODES).optional(),
  executor: z.enum(SPAWN_EXECUTORS).optional(),
  ...spawnSpecInputFields,
  speculative: z.boolean().optional(),
  traceparent: z.string().regex(TRACEPARENT_PATTERN, 'a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>)').optional(),
});

/** The request with a zod `outputSchema` as JSON Schema (TOOL_ARGUMENTS_INVALID when it has none). */
export function withJsonOutputSchema(request: SpawnRequest): SpawnRequest {
  if (!(request?.outputSchema instanceof z.ZodType)) return request;
  try {
    return { ...request, outputSchema: outputSchemaFrom(request.outputSchema, 'outputSchema') };
  } catch (error) {
    throw new JobError('TOOL_ARGUMENTS_INVALID', '-', errorMessage(error));
  }
}

/** A spawn request after {@link checkSpawn}: its validated fields, role, agent and own spec. */
export interface CheckedSpawn {
  data: z.output<typeof spawnRequestSchema>;
  role: JobRole;
  agent: string | undefined;
  spec: SpawnSpec;
}

/**
 * The one validation of a spawn, whatever door it came through (library, the spawn tools, HTTP,
 * the CLI, a job's child, a BullMQ producer): called once per spawn, by the booking
 * (JobTable.book). A clear, typed error the model can read when it is not valid:
 * `TOOL_ARGUMENTS_INVALID`, `AGENT_UNKNOWN`, or the spec's `TOOL_UNKNOWN`, `TOOL_NOT_ALLOWED`,
 * `MODEL_NOT_ALLOWED`, `PROMPT_REPLACE_NOT_ALLOWED`, `SCHEDULER_UNKNOWN`.
 */
export function checkSpawn(request: SpawnRequest, config: ForkpoolConfig, knownTool?: (name: string) => boolean): CheckedSpawn {
  const parsed = spawnRequestSchema.safeParse(request);
  if (!parsed.success) throw new JobError('TOOL_ARGUMENTS_INVALID', '-', `invalid spawn request: ${z.prettifyError(parsed.error)}`);
  const role = parsed.data.role ?? 'primary';
  const agent = parsed.data.agent ?? (role === 'user' ? config.background.defaultAgent : undefined);
  if (agent !== undefined) {
    try {
      agentEntry(config, agent);
    } catch (error) {
      throw new JobError('AGENT_UNKNOWN', '-', errorMessage(error));
    }
  }
  let spec: SpawnSpec;
  try {
    spec = checkSpawnSpec(config, agent, parsed.data, knownTool);
  } catch (error) {
    if (!(error instanceof ForkpoolError)) throw error;
    throw new JobError(error.code, '-', error.message);
  }
  return { data: parsed.data, role, agent, spec };
}

/**
 * Whether a valid spawn ({@link checkSpawn}) may be queued now: `QUEUE_FULL`, `NAME_TAKEN` when
 * not. `waiting` counts the jobs that would wait for a slot (not those about to take a free one).
 */
export function admitSpawn(
  checked: CheckedSpawn,
  config: ForkpoolConfig,
  waiting: number,
  nameHolder: (name: string) => string | undefined,
  stateOf: (id: string) => string | undefined,
): void {
  const { queueLimit, maxConcurrent, onFull } = config.background;
  if (onFull === 'reject' && waiting >= 0) {
    throw new JobError('QUEUE_FULL', '-', `all ${maxConcurrent} background slots are taken (onFull: reject); wait for a job to finish or cancel one`);
  }
  if (queueLimit > 0 && waiting >= queueLimit) {
    throw new JobError('QUEUE_FULL', '-', `the background queue is full (${queueLimit} jobs waiting); wait for some to finish or cancel one`);
  }
  const name = checked.data.name;
  const holder = name === undefined ? undefined : nameHolder(name);
  if (holder !== undefined) {
    throw new JobError(
      'NAME_TAKEN',
      holder,
      `the name "${name}" belongs to job ${holder}, which is still ${stateOf(holder) ?? 'live'}; pick another name or wait for it to end`,
    );
  }
}
