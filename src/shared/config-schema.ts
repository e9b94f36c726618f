/**
 * The configuration's schema: every field, its default and its bounds (zod). A configured
 * agent's fields are in agent-schema.ts, the fixed bounds in config-bounds.ts. Parsing, aliases
 * and the cross-field checks live in config.ts, which re-exports all three.
 */
import { z } from 'zod';
import { bullmqSchema, redisUrlSchema } from './bullmq-config.js';
import { modelUrlSchema } from './model-url.js';
import { BUILTIN_TOOL_NAMES, DEFAULTS, SPAWN_SPEC_LIMITS } from './defaults.js';
import { modelInfoSchema } from './models.js';
import { adaptiveSchema, joinSchema } from './scheduling-config.js';
import { budgetLimitsSchema } from './budget.js';
import { mcpServersSchema } from './mcp-config.js';
import { hooksConfigSchema } from './hooks.js';
import { STRUCTURED_OUTPUT_MODES } from './output-schema.js';
import { MAX_DEPTH, MAX_HEAP_MB, MAX_OUTPUT_CHARS, MAX_TIMEOUT_MINUTES, MAX_YOUNG_HEAP_MB, MIN_HEAP_MB, timerMs } from './config-bounds.js';
import { AGENT_NAME_EXPECTED, AGENT_NAME_PATTERN, agentSchema, modelApiSchema, thinkingSchema, toolModuleSchema, toolNameSchema } from './agent-schema.js';

const MIB = 1_048_576;
const YEAR_MS = 365 * 86_400_000;

const toolLimitsSchema = z.strictObject({
  readFileMaxBytes: z
    .number()
    .int()
    .positive()
    .max(64 * MIB)
    .default(DEFAULTS.tools.readFileMaxBytes),
  readFileDefaultLines: z.number().int().positive().max(100_000).default(DEFAULTS.tools.readFileDefaultLines),
  readFileMaxScanBytes: z
    .number()
    .int()
    .min(65_536)
    .max(1_024 * MIB)
    .default(DEFAULTS.tools.readFileMaxScanBytes),
  outputMaxChars: z.number().int().min(256).max(MAX_OUTPUT_CHARS).default(DEFAULTS.tools.outputMaxChars),
  grepMaxMatches: z.number().int().positive().max(100_000).default(DEFAULTS.tools.grepMaxMatches),
  grepMaxFileBytes: z
    .number()
    .int()
    .positive()
    .max(1_024 * MIB)
    .default(DEFAULTS.tools.grepMaxFileBytes),
  findMaxResults: z.number().int().positive().max(100_000).default(DEFAULTS.tools.findMaxResults),
  outlineMaxBytes: z
    .number()
    .int()
    .positive()
    .max(64 * MIB)
    .default(DEFAULTS.tools.outlineMaxBytes),
  bashTimeoutMs: timerMs(1).default(DEFAULTS.tools.bashTimeoutMs),
  toolTimeoutMs: timerMs(1).default(DEFAULTS.tools.toolTimeoutMs),
  searchTimeoutMs: timerMs(1).default(DEFAULTS.tools.searchTimeoutMs),
  hiddenScanMaxEntries: z.number().int().min(1).max(100_000_000).default(DEFAULTS.tools.hiddenScanMaxEntries),
  maxParallelToolCalls: z.number().int().min(1).max(1_000).default(DEFAULTS.tools.maxParallelToolCalls),
  /** Tool calls one model response may make; the rest are answered with a tool error, not run. */
  maxToolCallsPerResponse: z.number().int().min(1).max(10_000).default(DEFAULTS.tools.maxToolCallsPerResponse),
  bashMaxProcesses: z.number().int().min(8).max(1_000_000).default(DEFAULTS.tools.bashMaxProcesses),
  bashMaxMemoryMb: z.number().int().min(16).max(1_048_576).default(DEFAULTS.tools.bashMaxMemoryMb),
  bashMaxFileMb: z.number().int().min(1).max(1_048_576).default(DEFAULTS.tools.bashMaxFileMb),
  bashTmpMb: z.number().int().min(1).max(1_048_576).default(DEFAULTS.tools.bashTmpMb),
});

const retentionSchema = z.strictObject({
  keepResults: z.number().int().min(0).max(1_000_000).default(DEFAULTS.background.retention.keepResults),
  keepResultsMs: z.number().int().min(0).max(YEAR_MS).default(DEFAULTS.background.retention.keepResultsMs),
  keepRecords: z.number().int().min(0).max(1_000_000).default(DEFAULTS.background.retention.keepRecords),
});

/** A workspace-relative path: no NUL, not absolute, no ".." segment. */
const relativePathSchema = z
  .string()
  .min(1)
  .refine(
    (p) => !p.includes('\0') && !p.startsWith('/') && !p.split('/').includes('..'),
    'a workspace-relative path without ".." (e.g. ".git" or "config/secrets")',
  );
/** An absolute folder path. */
const absolutePathSchema = z
  .string()
  .min(2)
  .refine((p) => p.startsWith('/') && !p.includes('\0'), 'an absolute path');

/** Budgets of a fork of the parent, and the fallback of every agent's unset budget fields. */
const defaultBudgetSchema = z.strictObject({
  maxTurns: budgetLimitsSchema.shape.maxTurns.default(DEFAULTS.background.budget.maxTurns),
  maxTokens: budgetLimitsSchema.shape.maxTokens,
  maxCostUsd: budgetLimitsSchema.shape.maxCostUsd.default(DEFAULTS.background.budget.maxCostUsd),
  maxWallclockMinutes: budgetLimitsSchema.shape.maxWallclockMinutes.default(DEFAULTS.background.budget.maxWallclockMinutes),
});

/** One token and dollar pool for all of a session's (a manager's) background jobs; see docs/delivery.md "Budgets". */
const sessionBudgetSchema = z.strictObject({
  maxTokens: z.number().int().min(1).max(1_000_000_000_000).optional(),
  maxCostUsd: z.number().positive().max(1_000_000).optional(),
  /** A spawn the pool cannot cover: `refuse` it (a tool error the model reads) or `queue` it until leases return. */
  onExhausted: z.enum(['refuse', 'queue']).default('refuse'),
});

const backgroundSchema = z.strictObject({
  /**
   * Jobs out at once: running here, or (with a remote executor such as `bullmq`) handed to the
   * queue. Up to 1,000,000; above about 10,000 it makes sense only with a remote executor, whose
   * cap is how many jobs are out in Redis at once.
   */
  maxConcurrent: z.number().int().min(1).max(1_000_000).default(DEFAULTS.background.maxConcurrent),
  timeoutMinutes: z.number().positive().max(MAX_TIMEOUT_MINUTES).default(DEFAULTS.background.timeoutMinutes),
  /**
   * The job timeout in milliseconds, instead of `timeoutMinutes` (setting both is an error).
   * Parsing turns it into `timeoutMinutes`, the one field the runtime reads.
   */
  timeoutMs: z
    .number()
    .int()
    .min(1)
    .max(MAX_TIMEOUT_MINUTES * 60_000)
    .optional(),
  queueLimit: z.number().int().min(0).max(10_000_000).default(DEFAULTS.background.queueLimit),
  /** 1: jobs cannot spawn; 2: a job may spawn children (through the main thread), 3: grandchildren... */
  maxDepth: z.number().int().min(0).max(MAX_DEPTH).default(DEFAULTS.background.maxDepth),
  /** Children one job may have spawned; past it a job's spawn is refused with CHILDREN_LIMIT (a tool error). */
  maxChildrenPerJob: z.number().int().min(1).max(1_000_000).default(DEFAULTS.background.maxChildrenPerJob),
  /** Jobs waiting for a slot past which a job's own spawn is refused with QUEUE_FULL (a tool error); 0: no limit. */
  nestedQueueLimit: z.number().int().min(0).max(10_000_000).default(DEFAULTS.background.nestedQueueLimit),
  /** A job that answers with children still running: `wait` gives its slot back, waits and resumes with their results; `cancel` cancels them. */
  childrenOnEnd: z.enum(['wait', 'cancel']).default(DEFAULTS.background.childrenOnEnd),
  isolation: z.enum(['thread', 'shared']).default(DEFAULTS.background.isolation),
  workspace: z.enum(['shared', 'worktree']).default(DEFAULTS.background.workspace),
  /** A spawn's scheduler when it names none (or `default`): sleep, exit_on_defer or none (checked in config.ts: SCHEDULER_UNKNOWN). */
  scheduler: z.string().max(40).default(DEFAULTS.background.scheduler),
  worktreeDir: z.string().max(4096).default(DEFAULTS.background.worktreeDir),
  tasksPerThread: z.number().int().min(1).max(100_000).default(DEFAULTS.background.tasksPerThread),
  threads: z.number().int().min(0).max(256).default(DEFAULTS.background.threads),
  /** Heap cap of each worker thread, MiB; 0: by isolation (see DEFAULTS.background.heapMb). */
  heapMb: z
    .number()
    .int()
    .min(0)
    .max(MAX_HEAP_MB)
    .refine((mb) => mb === 0 || mb >= MIN_HEAP_MB, `0 (by isolation) or a value >= ${MIN_HEAP_MB}`)
    .default(DEFAULTS.background.heapMb),
  /** Young-generation cap of each worker thread, MiB; 0: by isolation (see DEFAULTS.background.youngHeapMb). */
  youngHeapMb: z.number().int().min(0).max(MAX_YOUNG_HEAP_MB).default(DEFAULTS.background.youngHeapMb),
  niceIncrement: z.number().int().min(0).max(19).default(DEFAULTS.background.niceIncrement),
  cancelGraceMs: timerMs(0).default(DEFAULTS.background.cancelGraceMs),
  resultMaxChars: z.number().int().min(200).max(10_000_000).default(DEFAULTS.background.resultMaxChars),
  closeTimeoutMs: timerMs(0).default(DEFAULTS.background.closeTimeoutMs),
  maxRequeues: z.number().int().min(0).max(10).default(DEFAULTS.background.maxRequeues),
  /** What the ledger keeps of delivered jobs; see `DEFAULTS.background.retention`. */
  retention: retentionSchema.default(retentionSchema.parse({})),
  /** The agent user-started jobs run when none is named (the seeds' `background_agent`); unset: a fork of the parent. */
  defaultAgent: z.string().optional(),
  /**
   * The models a spawn may name in its own spec (`model`; docs/agents.md "A spawn's own spec").
   * Unset: the top-level `model`, every agent's `model` and every key of `models`.
   */
  spawnModels: z.array(z.string().min(1).max(SPAWN_SPEC_LIMITS.modelMaxChars)).max(1_000).optional(),
  /** A spawn's own `systemPrompt` may replace the background baseline (`replaceSystemPrompt: true`); default false: a replace is refused. */
  allowSystemPromptReplace: z.boolean().default(DEFAULTS.background.allowSystemPromptReplace),
  /** The parent's spawn tool offers `output_schema` (its model may type a job's answer); default false: not offered (it costs prompt bytes). */
  allowOutputSchema: z.boolean().default(DEFAULTS.background.allowOutputSchema),
  /** `queue`: a spawn past the cap waits (the first seed); `reject`: it is refused with QUEUE_FULL (core-agent). */
  onFull: z.enum(['queue', 'reject']).default(DEFAULTS.background.onFull),
  /** `report_alert` calls kept per job; later ones are refused (the job is told). */
  maxAlertsPerJob: z.number().int().min(0).max(100).default(DEFAULTS.background.maxAlertsPerJob),
  /** An ended job's conversation is kept up to this many characters, for resume (cut to fit: see conversation-cap.ts); 0: not kept. */
  keepConversationChars: z.number().int().min(0).max(50_000_000).default(DEFAULTS.background.keepConversationChars),
  /** Alerts a session holds for its next turn; past this the oldest are dropped, with a warning. */
  alertBufferMax: z.number().int().min(1).max(10_000).default(DEFAULTS.background.alertBufferMax),
  /** `check_background_agent` refuses a job checked this recently when nothing changed since. */
  checkCooldownMs: timerMs(0).default(DEFAULTS.background.checkCooldownMs),
  /** `fixed` (a cap of `maxConcurrent` jobs) or `adaptive` (AIMD on model requests per endpoint; docs/scale-out.md "Adaptive concurrency"). */
  concurrency: z.enum(['fixed', 'adaptive']).default(DEFAULTS.background.concurrency),
  adaptive: adaptiveSchema.default(adaptiveSchema.parse({})),
  /** A wave's follow-up before all its jobs end: `{deadlineSeconds}` and/or `{quorum}` (docs/delivery.md "Wave joins"). Unset: all. */
  join: joinSchema.optional(),
  /** Per-job budgets of a fork of the parent (and the fallback of each agent's own `budget`). */
  budget: defaultBudgetSchema.default(defaultBudgetSchema.parse({})),
});

const deliverySchema = z.strictObject({
  /**
   * Estimated tokens (4 characters each) of background results injected into one turn, all
   * results together, shared fairly. Unset: `contextShare` of the parent model's context window.
   */
  maxInjectedTokens: z.number().int().min(500).max(100_000_000).optional(),
  contextShare: z.number().gt(0).max(1).default(DEFAULTS.delivery.contextShare),
  /** Longest page `read_background_result` returns, in characters. */
  pageMaxChars: z.number().int().min(500).max(10_000_000).default(DEFAULTS.delivery.pageMaxChars),
  /** A result based on files changed since the job read them: `annotate` the delivery, or `rerun` the job once. */
  staleResults: z.enum(['annotate', 'rerun']).default(DEFAULTS.delivery.staleResults),
  /**
   * How results are put before the parent's turn: `forkpool` (default), one `<background_results>`
   * block in the turn's own input; `remy`, a hidden message that opens with the marker line
   * `@@automated::background_results@@`, one `<tool_result id="<tool-call id>" job_id="<job id>" name="<agent or label>">`
   * per result (docs/delivery.md "Delivery format").
   */
  format: z.enum(['forkpool', 'remy']).default(DEFAULTS.delivery.format),
});

const dedupSchema = z.strictObject({
  /** A spawn whose task, agent and model match a running job joins it. */
  attach: z.boolean().default(DEFAULTS.dedup.attach),
  /** ... or a job that ended `ok` at most this long ago: its result is reused (0: never). */
  reuseWithinSeconds: z.number().min(0).max(86_400).default(DEFAULTS.dedup.reuseWithinSeconds),
});

/** The durable ledger: SQLite (WAL) at `path`; without a path the ledger lives in memory only. */
const ledgerSchema = z.strictObject({
  /** The SQLite file (created if missing), relative to the working directory. Unset: in memory. */
  path: z.string().min(1).optional(),
  onInterrupted: z.enum(['rerun', 'deliver']).default(DEFAULTS.ledger.onInterrupted),
  maxReruns: z.number().int().min(0).max(10).default(DEFAULTS.ledger.maxReruns),
  synchronous: z.enum(['normal', 'full']).default(DEFAULTS.ledger.synchronous),
  /** A scope's lease is taken over once its heartbeat is this old (see DEFAULTS.ledger.leaseStaleMs). */
  leaseStaleMs: z.number().int().min(1_000).max(3_600_000).default(DEFAULTS.ledger.leaseStaleMs),
  /** Accept `path` inside `workspaceRoot` (refused by default: jobs could read and forge it). */
  allowInWorkspace: z.boolean().default(DEFAULTS.ledger.allowInWorkspace),
});

const serverSchema = z.strictObject({
  host: z.string().min(1).default(DEFAULTS.server.host),
  port: z.number().int().min(0).max(65_535).default(DEFAULTS.server.port),
  bodyLimitBytes: z
    .number()
    .int()
    .min(1_024)
    .max(100 * 1_048_576)
    .default(DEFAULTS.server.bodyLimitBytes),
  corsOrigins: z.array(z.url({ protocol: /^https?$/ })).default([...DEFAULTS.server.corsOrigins]),
  eventBufferSize: z.number().int().min(10).max(1_000_000).default(DEFAULTS.server.eventBufferSize),
  maxSessions: z.number().int().min(1).max(10_000).default(DEFAULTS.server.maxSessions),
  /** `POST /v1/jobs/wait` requests open at once; the next is refused with 429 (TOO_MANY_WAITS). */
  maxWaits: z.number().int().min(1).max(100_000).default(DEFAULTS.server.maxWaits),
});

export const EXECUTOR_KINDS = ['piscina', 'tinypool', 'worker-per-job', 'inline', 'bullmq'] as const;

/**
 * The one configuration schema. Plain data only: a config is structured-cloned into every
 * worker, so it must survive `postMessage` unchanged.
 */
export const configSchema = z.strictObject({
  model: z.string().min(1).default(DEFAULTS.model),
  /**
   * OpenAI-compatible base URL, e.g. `https://api.openai.com/v1`. Unset with an `apiKey`:
   * OpenAI's; unset without one: a CONFIG_INVALID error when a manager or session starts (the
   * CLI starts its built-in simulator instead). See {@link assertModelConfigured}.
   */
  baseUrl: modelUrlSchema.optional(),
  /**
   * The wire the endpoint speaks: `chat` (Chat Completions, any OpenAI-compatible server),
   * `responses` (OpenAI's Responses API) or `anthropic` (Anthropic Messages; unset `baseUrl`:
   * https://api.anthropic.com/v1, key from ANTHROPIC_API_KEY). Default `chat`.
   */
  api: modelApiSchema.default(DEFAULTS.api),
  /** Never printed, logged or put in an event. */
  apiKey: z.string().min(1).optional(),
  /**
   * Unset: 0, except for a model that refuses it (OpenAI's reasoning models, o1…o4 and gpt-5*, and
   * an Anthropic request with `thinking`), to which no `temperature` is sent. Set, it is always sent.
   */
  temperature: z.number().min(0).max(2).optional(),
  /** The parent agent's model calls per turn (a background job's are its budget's `maxTurns`). */
  maxIterations: z.number().int().min(1).max(10_000).default(DEFAULTS.maxIterations),
  /** One model request, from its response's first byte to its last (server-side queueing not counted). */
  requestTimeoutMs: timerMs(100).default(DEFAULTS.requestTimeoutMs),
  /** One model request's wait for the first byte of its response (a server's queue, a server that never answers). */
  firstByteTimeoutMs: timerMs(100).default(DEFAULTS.firstByteTimeoutMs),
  /** `max_tokens` sent with each model request; a reply cut at it ends a job `partial`. An agent may set its own. */
  maxTokens: z.number().int().min(1).max(10_000_000).default(DEFAULTS.maxTokens),
  /** Anthropic extended thinking, `{budgetTokens}` (below `maxTokens`); an agent may set its own. Unset: off. */
  thinking: thinkingSchema.optional(),
  /** One turn (a model call plus the tools it calls), parent or job; past it: TURN_TIMEOUT. 0: off. */
  turnTimeoutMs: timerMs(0).default(DEFAULTS.turnTimeoutMs),
  streamIdleTimeoutMs: timerMs(100).default(DEFAULTS.streamIdleTimeoutMs),
  /**
   * HTTP connections a thread (a worker, or the main thread for inline jobs) keeps to one model
   * endpoint, shared by every job it runs; requests past it wait in FIFO order. The wait does not
   * count toward `requestTimeoutMs` (that clock starts when the request is sent), but it does
   * count toward `turnTimeoutMs` and a job's wall-clock budget. It also bounds how many jobs a
   * thread lets build their loop while its queues are full: a new job waits to start (holding only
   * its spec) while this many of the thread's jobs wait for a connection or a search slot
   * (src/shared/thread-backlog.ts). Default 256.
   */
  modelConnectionsPerThread: z.number().int().min(1).max(100_000).default(DEFAULTS.modelConnectionsPerThread),
  maxRetries: z.number().int().min(0).max(10).default(DEFAULTS.maxRetries),
  stream: z.boolean().default(DEFAULTS.stream),
  /**
   * How a typed job (one with an output schema) is bound: `response_format` (json_schema on its
   * requests), `tool` (a terminating `submit_result` tool), or `auto`: response_format on
   * api.openai.com, the tool elsewhere (docs/delivery.md "Typed results").
   */
  structuredOutput: z.enum(STRUCTURED_OUTPUT_MODES).default('auto'),
  /** Characters of one model response before it fails with MODEL_RESPONSE_TOO_LARGE. */
  maxResponseChars: z.number().int().min(1_000).max(500_000_000).default(DEFAULTS.maxResponseChars),
  /** Where jobs run; `inline` shares the caller's thread (no isolation, no hard stop). */
  executor: z.enum(EXECUTOR_KINDS).default(DEFAULTS.executor),
  /** Redis for `executor: "bullmq"` (e.g. `redis://127.0.0.1:6379`); never printed (it may hold a password). */
  redisUrl: redisUrlSchema.optional(),
  /** The BullMQ executor and `forkpool worker` (see docs/scale-out.md "BullMQ"). */
  bullmq: bullmqSchema.default(bullmqSchema.parse({})),
  /** `brief`: records' errors carry code, message and two causes, no stacks or absolute paths. `debug`: all of it. */
  errorDetail: z.enum(['brief', 'debug']).default(DEFAULTS.errorDetail),
  /** Absolute path; every file and shell tool stays inside it. Defaults to the working directory. */
  workspaceRoot: z.string().min(1),
  /** Accept `/` or the home folder as the workspace (refused by default: the tools would reach everything). */
  allowBroadWorkspace: z.boolean().default(false),
  /** How bash is confined: `auto` (bubblewrap when it works, else a process group), `bwrap` or `none`. */
  sandbox: z.enum(['auto', 'bwrap', 'none']).default(DEFAULTS.sandbox),
  /** Path of the bubblewrap binary. */
  bwrapPath: absolutePathSchema.default(DEFAULTS.bwrapPath),
  /** bash inside the sandbox may use the network. Default false. */
  sandboxNetwork: z.boolean().default(DEFAULTS.sandboxNetwork),
  /** Extra folders bash may read (read-only) inside the sandbox, e.g. a toolchain in the home folder. */
  sandboxReadPaths: z.array(absolutePathSchema).default([]),
  /** Paths write_file and edit_file refuse (and bash sees read-only in the sandbox). Default [".git"]. */
  protectedPaths: z.array(relativePathSchema).default([...DEFAULTS.protectedPaths]),
  /** Let the write tools and bash write protected paths after all. Default false. */
  allowProtectedWrites: z.boolean().default(false),
  /**
   * Files or folders no tool may open (bash sees them masked in its sandbox): key files,
   * credentials. Relative paths resolve against the working directory. `loadConfig` adds the
   * config file it read; the durable ledger and `.env`-style files are hidden without being
   * listed (docs/tools.md "What the tools cannot see").
   */
  hiddenPaths: z.array(z.string().min(1)).default([]),
  /**
   * Tools offered to the model, by catalog name: the built-ins, the embedder's host tools, tool
   * modules' and MCP servers' tools (docs/tools.md "Your own tools"). Default: the built-ins.
   * An unknown name is a config error when the manager or session starts.
   */
  tools: z.array(toolNameSchema).default([...BUILTIN_TOOL_NAMES]),
  /** Gated tools granted up front (`bash`, `write_file`, `edit_file`, or any gated catalog tool). */
  grantedTools: z.array(toolNameSchema).default([]),
  /**
   * Modules of tools (a path relative to the config file, or a package specifier): each
   * default-exports `ToolDefinition[]` or `(ctx) => ToolDefinition[]`, imported once per worker
   * thread and once on the main thread. One that fails to load is a config error naming it.
   */
  toolModules: z.array(toolModuleSchema).default([]),
  /** `ask`: the parent asks a person on a terminal; `config`: only `grantedTools`. Background jobs never ask. */
  permissionMode: z.enum(['ask', 'config']).default('config'),
  /**
   * The parent agent's role (`--role`): its own usage is booked under `<role>`, its jobs' under
   * `<role>:subagent`, and each job's record carries it. `AgentSessionOptions.role` wins. Default `primary`.
   */
  role: z.enum(['primary', 'escalation']).default('primary'),
  /**
   * A background job's call of an ungranted gated tool: `deny` fails the call at once (the model
   * reads why); `ask` pauses the job until someone answers (`manager.approve`, the chat, the HTTP
   * API), its slot given back meanwhile (docs/tools.md "Approvals"). Default `deny`.
   */
  approvals: z.enum(['deny', 'ask']).default(DEFAULTS.approvals),
  /** How long a job's call waits for an approval, ms; then `approvalTimeoutAction`. Default 600000 (10 minutes). */
  approvalTimeoutMs: timerMs(1).default(DEFAULTS.approvalTimeoutMs),
  /** What an approval's timeout does: `deny` the call (the model reads why) or `cancel` the job. Default `deny`. */
  approvalTimeoutAction: z.enum(['deny', 'cancel']).default(DEFAULTS.approvalTimeoutAction),
  /** The parent's model may answer its jobs' approvals (`approve_background_tool_call`). Default false. */
  parentModelApprovals: z.boolean().default(false),
  loopWarnAfter: z.number().int().min(2).max(10_000).default(DEFAULTS.loopWarnAfter),
  loopStopAfter: z.number().int().min(2).max(10_000).default(DEFAULTS.loopStopAfter),
  toolLimits: toolLimitsSchema.default(toolLimitsSchema.parse({})),
  background: backgroundSchema.default(backgroundSchema.parse({})),
  /** Where jobs and sessions are kept: in memory (default) or a SQLite file (docs/durability.md). */
  ledger: ledgerSchema.default(ledgerSchema.parse({})),
  /** `forkpool serve`: address, body limit, CORS, event buffer. */
  server: serverSchema.default(serverSchema.parse({})),
  sessionSummaryMaxChars: z.number().int().min(200).max(1_000_000).default(DEFAULTS.sessionSummaryMaxChars),
  /** Past this many (estimated) tokens, the parent's oldest turns are folded into the session summary. */
  parentHistoryMaxTokens: z.number().int().min(1_000).max(100_000_000).default(DEFAULTS.parentHistoryMaxTokens),
  /** Configured peer agents by name (see docs/agents.md). */
  agents: z.record(z.string().regex(AGENT_NAME_PATTERN, AGENT_NAME_EXPECTED), agentSchema).default({}),
  /** Agents offered to the parent as `agent_<name>(task, background?)` tools; each must be in `agents`. */
  agentTools: z.array(z.string()).default([]),
  /** Per model name: price per million tokens (input, output) and context window (see src/shared/models.ts). */
  models: z.record(z.string().min(1), modelInfoSchema).default({}),
  /** The session's pooled budget: each spawn leases its expected spend from it (see docs/delivery.md "Budgets"). */
  sessionBudget: sessionBudgetSchema.optional(),
  /** Per-turn injection budget, paging and the stale check (docs/delivery.md "Bounded delivery", "Stale results"). */
  delivery: deliverySchema.default(deliverySchema.parse({})),
  /** Spawn de-duplication (docs/delivery.md "De-duplication"). */
  dedup: dedupSchema.default(dedupSchema.parse({})),
  /** MCP servers whose tools join the catalog as `mcp__<server>__<tool>` (docs/tools.md "MCP servers"). */
  mcpServers: mcpServersSchema.default({}),
  /**
   * Command hooks in Claude Code's contract, by event: `{ matcher, command, timeoutMs }` each
   * (docs/tools.md "Hooks"). A BullMQ worker runs its own config's, never a job's.
   */
  hooks: hooksConfigSchema.default({}),
});

export type ForkpoolConfig = z.output<typeof configSchema>;
export type ForkpoolConfigInput = z.input<typeof configSchema>;
export type BackgroundConfig = ForkpoolConfig['background'];
export type ToolLimits = ForkpoolConfig['toolLimits'];
