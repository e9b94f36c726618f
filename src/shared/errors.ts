/**
 * One error hierarchy for forkpool. Every error has a stable `code`; subclasses carry the
 * fields a caller needs (job id, milliseconds, tool name). Errors cross the worker boundary
 * as plain {@link SerializedError} objects, because structured clone drops custom fields.
 */

/**
 * Every error code, in one list. Each way a job can end has its own: a caller (or a test)
 * switches on the code, never on message text.
 */
export const ERROR_CODES = [
  'CONFIG_INVALID',
  'TOOL_ARGUMENTS_INVALID',
  'TOOL_UNKNOWN',
  'TOOL_FAILED',
  'TOOL_TIMEOUT',
  'PATH_OUTSIDE_WORKSPACE',
  'PERMISSION_DENIED',
  /** A PreToolUse hook blocked the call (docs/tools.md "Hooks"). */
  'HOOK_BLOCKED',
  /** A bash command hit one of the sandbox's resource limits (toolLimits.bashMax*, bashTmpMb). */
  'SANDBOX_LIMIT',
  'MODEL_REQUEST_FAILED',
  'MODEL_STREAM_STALLED',
  /** The model's reply was cut at the token limit (`finish_reason: "length"`): a `partial` job. */
  'MODEL_OUTPUT_TRUNCATED',
  /** One model response passed `maxResponseChars`. */
  'MODEL_RESPONSE_TOO_LARGE',
  /** Stopped from outside (an AbortSignal, a hard stop). */
  'ABORTED',
  'JOB_TIMEOUT',
  'JOB_CANCELLED',
  'JOB_UNKNOWN',
  'QUEUE_FULL',
  /** A spawn asked for `executor: "remote"` and the manager has no remote executor. */
  'EXECUTOR_UNAVAILABLE',
  /** The remote spawner refuses every spawn (refuseRemoteSpawner): its reason. */
  'REMOTE_REFUSED',
  'MANAGER_CLOSED',
  /** The same tool call repeated `loopStopAfter` times. */
  'LOOP_DETECTED',
  /** The parent's `maxIterations` model calls in one turn without a final answer (a job's limit is BUDGET_EXCEEDED on maxTurns). */
  'ITERATION_LIMIT',
  /** One turn (a model call plus the tools it called) ran past `turnTimeoutMs`: both were aborted. */
  'TURN_TIMEOUT',
  /** A job's budget (turns, tokens, cost, wall clock) ran out. */
  'BUDGET_EXCEEDED',
  /** A spawn asked for a budget above its agent's limit (a spawn may only tighten it). */
  'BUDGET_OVER_LIMIT',
  /** The session's pooled budget (`sessionBudget`) cannot cover a spawn's budget. */
  'SESSION_BUDGET_EXHAUSTED',
  /** The job's task function threw; its thread lives on. */
  'TASK_FAILED',
  /** The job's thread died under it (uncaught error, `process.exit`). */
  'THREAD_LOST',
  'WORKER_OUT_OF_MEMORY',
  /** The process died while the job ran (a durable ledger's restart recovery found it running). */
  'JOB_INTERRUPTED',
  /** No session with that id in the durable ledger. */
  'SESSION_UNKNOWN',
  /** Another live process holds the lease on this durable ledger scope (one writer per scope). */
  'LEDGER_BUSY',
  /** A worker broke the port protocol (a second `started`, an unknown message, another job's id). */
  'PROTOCOL_INVALID',
  /** A spawn named an agent that is not in the config's catalog (or not offered to the caller). */
  'AGENT_UNKNOWN',
  /** A spawn's `tools` named a tool the job would not have anyway (its agent's tools, else the caller's). */
  'TOOL_NOT_ALLOWED',
  /** A spawn's `model` is not among those the config allows (`background.spawnModels`). */
  'MODEL_NOT_ALLOWED',
  /** A spawn asked its `systemPrompt` to replace the baseline, and `background.allowSystemPromptReplace` is off. */
  'PROMPT_REPLACE_NOT_ALLOWED',
  /** A spawn's name is held by a job that is still queued or running. */
  'NAME_TAKEN',
  /** A job below the depth limit may spawn; one at it may not. */
  'DEPTH_EXCEEDED',
  /** A job already spawned `background.maxChildrenPerJob` children. */
  'CHILDREN_LIMIT',
  /** A spawn's `scheduler` (or the config's `background.scheduler`) is none of default, sleep, exit_on_defer, none. */
  'SCHEDULER_UNKNOWN',
  /** A job's `report_alert` calls ran past `background.maxAlertsPerJob`. */
  'ALERT_LIMIT',
  /** `check_background_agent` on a job checked moments ago with nothing new: no polling. */
  'CHECKED_RECENTLY',
  /** `resume_background_agent` on a job that has not ended, or whose conversation was not kept. */
  'RESUME_UNAVAILABLE',
  /** `read_background_result` on a job that has not ended, or whose text retention dropped. */
  'RESULT_UNAVAILABLE',
  /** A queued BullMQ job named a model endpoint its worker's own configuration does not allow. */
  'ENDPOINT_NOT_ALLOWED',
  /**
   * A write to the durable ledger failed (disk full, I/O error, a read-only file). A write the
   * caller asked for (a spawn, a delivery) is refused with it and changes nothing.
   */
  'LEDGER_WRITE_FAILED',
  /** `completeAttempt` for a job that is not running that attempt now (queued, or not started). */
  'ATTEMPT_NOT_RUNNING',
  /** A message sent to a job that has ended (`send_to_background_agent`): nothing can reach it now. */
  'JOB_ENDED',
  /** A tool was asked to open a file hidden from the tools (a config, ledger or `.env`-style file: it may hold keys). */
  'PATH_HIDDEN',
  /** forkpool runs on a Node.js older than it needs (package.json `engines`). */
  'NODE_UNSUPPORTED',
  /** An optional package a feature needs is not installed (the message names it). */
  'PACKAGE_MISSING',
  'SIM_SCRIPT',
  /** A `workspace: "worktree"` spawn cannot have a git worktree (no git, no repository, a dirty or mid-merge state). */
  'WORKTREE_UNAVAILABLE',
  /** A worktree action failed: unknown job, no worktree, or a merge conflict (aborted, nothing half-merged). */
  'WORKTREE_ACTION_FAILED',
  /**
   * `ParentAgent.runTurn` while a turn already runs on that agent: one turn at a time (an
   * `AgentSession` queues turns instead; the server and the chat go through it).
   */
  'TURN_BUSY',
  /** A typed job's final value did not match its output schema, after its one repair turn (docs/delivery.md "Typed results"). */
  'RESULT_INVALID',
  /** `approve()` named a job or call that does not wait for an approval (unknown, answered, or ended). */
  'APPROVAL_UNKNOWN',
  /** `approve()` was given a decision of the wrong shape (the message names the field). */
  'APPROVAL_INVALID',
  'INTERNAL',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

export class ForkpoolError extends Error {
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ForkpoolError';
    this.code = code;
  }
}

/** A configuration value is wrong: names the field, what was expected and what was received. */
export class ConfigError extends ForkpoolError {
  readonly issues: readonly ConfigIssue[];
  constructor(issues: readonly ConfigIssue[], code: ErrorCode = 'CONFIG_INVALID') {
    super(code, issues.map(formatConfigIssue).join('\n'));
    this.name = 'ConfigError';
    this.issues = issues;
  }
}

export interface ConfigIssue {
  /** Dotted path of the field, e.g. `background.maxConcurrent`. */
  field: string;
  expected: string;
  received: string;
  /** Where the value came from: a file path, an environment variable or a flag. */
  source?: string;
}

function formatConfigIssue(issue: ConfigIssue): string {
  const from = issue.source ? ` (from ${issue.source})` : '';
  return `config field "${issue.field}"${from}: expected ${issue.expected}, received ${issue.received}`;
}

/** A tool call the model made cannot be carried out; goes back to the model as a tool result. */
export class ToolError extends ForkpoolError {
  readonly toolName: string;
  constructor(code: ErrorCode, toolName: string, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
    this.name = 'ToolError';
    this.toolName = toolName;
  }
}

/** The codes a {@link TimeoutError} carries: each timeout has its own. */
export const TIMEOUT_CODES = [
  'TOOL_TIMEOUT',
  'JOB_TIMEOUT',
  'TURN_TIMEOUT',
  'MODEL_STREAM_STALLED',
  'MODEL_REQUEST_FAILED',
] as const satisfies readonly ErrorCode[];
export type TimeoutCode = (typeof TIMEOUT_CODES)[number];

export class TimeoutError extends ForkpoolError {
  readonly timeoutMs: number;
  constructor(code: TimeoutCode, message: string, timeoutMs: number) {
    super(code, message);
    this.name = 'TimeoutError';
    this.timeoutMs = timeoutMs;
  }
}

export class AbortError extends ForkpoolError {
  constructor(reason?: unknown) {
    super('ABORTED', `aborted${reason instanceof Error ? `: ${reason.message}` : typeof reason === 'string' ? `: ${reason}` : ''}`, {
      cause: reason,
    });
    this.name = 'AbortError';
  }
}

/** An error raised by the background manager about one job. */
export class JobError extends ForkpoolError {
  readonly jobId: string;
  constructor(code: ErrorCode, jobId: string, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
    this.name = 'JobError';
    this.jobId = jobId;
  }
}

/**
 * The durable ledger could not write (SQLite's own error is the cause). `sqliteCode` is what
 * SQLite said (`SQLITE_FULL`, `SQLITE_IOERR_…`, `SQLITE_READONLY`), `operation` what was written.
 */
export class LedgerWriteError extends ForkpoolError {
  readonly sqliteCode: string;
  readonly operation: string;
  constructor(operation: string, cause: unknown) {
    const sqliteCode = typeof (cause as { code?: unknown } | null)?.code === 'string' ? String((cause as { code: string }).code) : 'UNKNOWN';
    super('LEDGER_WRITE_FAILED', `the durable ledger could not write (${operation}): ${errorMessage(cause)} [${sqliteCode}]`, { cause });
    this.name = 'LedgerWriteError';
    this.sqliteCode = sqliteCode;
    this.operation = operation;
  }
}

/** Who holds a durable ledger scope's lease (see src/main/ledger-lease.ts). */
export interface LeaseHolder {
  pid: number;
  host: string;
  /** When it took the lease (ms since the epoch). */
  since: number;
  /** Its last heartbeat (ms since the epoch). */
  heartbeatAt: number;
}

/** A second owner for a durable ledger scope: refused while the holder lives and heartbeats. */
export class LedgerBusyError extends ForkpoolError {
  readonly scope: string;
  readonly file: string;
  readonly holder: LeaseHolder;
  constructor(file: string, scope: string, holder: LeaseHolder, staleMs: number, now = Date.now()) {
    super(
      'LEDGER_BUSY',
      `the ledger scope "${scope}" of ${file} is held by pid ${holder.pid} on host ${holder.host} since ${new Date(holder.since).toISOString()} ` +
        `(last heartbeat ${Math.max(0, Math.round((now - holder.heartbeatAt) / 1000))} s ago): one process at a time writes a scope; ` +
        `it is taken over once that process has exited or its heartbeat is older than ${Math.round(staleMs / 1000)} s (ledger.leaseStaleMs)`,
    );
    this.name = 'LedgerBusyError';
    this.scope = scope;
    this.file = file;
    this.holder = holder;
  }
}

/** The plain shape an error takes on the wire (and in job records). */
export interface SerializedError {
  name: string;
  code: ErrorCode;
  message: string;
  stack?: string;
  jobId?: string;
  toolName?: string;
  timeoutMs?: number;
  cause?: SerializedError;
}

const KNOWN_CODES = new Set<string>(ERROR_CODES);

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && KNOWN_CODES.has(value);
}

export function serializeError(error: unknown, depth = 0): SerializedError {
  if (error instanceof Error) {
    const raw = error as Error & { code?: unknown; jobId?: unknown; toolName?: unknown; timeoutMs?: unknown };
    const out: SerializedError = {
      name: error.name,
      code: isErrorCode(raw.code) ? raw.code : codeForForeignError(raw),
      message: error.message,
    };
    if (error.stack !== undefined) out.stack = error.stack;
    if (typeof raw.jobId === 'string') out.jobId = raw.jobId;
    if (typeof raw.toolName === 'string') out.toolName = raw.toolName;
    if (typeof raw.timeoutMs === 'number') out.timeoutMs = raw.timeoutMs;
    if (error.cause !== undefined && depth < 4) out.cause = serializeError(error.cause, depth + 1);
    return out;
  }
  return { name: 'Error', code: 'INTERNAL', message: typeof error === 'string' ? error : safeString(error) };
}

function codeForForeignError(error: Error & { code?: unknown }): ErrorCode {
  if (error.name === 'AbortError' || error.name === 'APIUserAbortError') return 'ABORTED';
  if (error.code === 'ERR_WORKER_OUT_OF_MEMORY') return 'WORKER_OUT_OF_MEMORY';
  return 'INTERNAL';
}

function safeString(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/** Rebuilds the typed error class from its serialized shape. */
export function deserializeError(data: SerializedError): ForkpoolError {
  const cause = data.cause ? deserializeError(data.cause) : undefined;
  const opts = cause ? { cause } : undefined;
  let error: ForkpoolError;
  if (data.jobId !== undefined) error = new JobError(data.code, data.jobId, data.message, opts);
  else if (data.toolName !== undefined) error = new ToolError(data.code, data.toolName, data.message, opts);
  else if (data.timeoutMs !== undefined && isTimeoutCode(data.code)) error = new TimeoutError(data.code, data.message, data.timeoutMs);
  else error = new ForkpoolError(data.code, data.message, opts);
  if (data.stack !== undefined) error.stack = data.stack;
  return error;
}

function isTimeoutCode(code: ErrorCode): code is TimeoutCode {
  return (TIMEOUT_CODES as readonly ErrorCode[]).includes(code);
}

export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
