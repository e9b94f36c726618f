// Fixed limits and timings that are not configuration (no config key sets them), and the names of
// the built-in tools. The configurable defaults are in defaults.ts.

export const BUILTIN_TOOL_NAMES = ['read_file', 'list_dir', 'find_files', 'grep', 'code_outline', 'bash', 'write_file', 'edit_file'] as const;
export type BuiltinToolName = (typeof BUILTIN_TOOL_NAMES)[number];

/**
 * Bounds of a spawn's own spec (spawn-spec.ts): its system prompt (an agent's `systemPrompt`
 * has the same bound), a model name, a tool name.
 */
export const SPAWN_SPEC_LIMITS = {
  systemPromptMaxChars: 50_000,
  modelMaxChars: 200,
  toolNameMaxChars: 64,
  /** Names in a spawn's `tools` or `extras`. */
  maxToolNames: 256,
} as const;

/** Tools that act on the world; they need a grant in the permission store. */
export const GATED_TOOLS: readonly BuiltinToolName[] = ['bash', 'write_file', 'edit_file'];

/**
 * What write_file checks before it creates a folder: Linux's limits on a name and a path
 * (a longer one fails only at the end, after every folder above it was made), and a depth
 * beyond which a path is a runaway, not a project layout.
 */
export const WRITE_PATH_LIMITS = {
  /** Bytes of one file or folder name (Linux NAME_MAX). */
  nameMaxBytes: 255,
  /** Bytes of the whole absolute path (Linux PATH_MAX, less the terminating NUL). */
  pathMaxBytes: 4_095,
  /** Folders below the workspace root on the way to the file. */
  maxDepth: 128,
} as const;

/**
 * Fixed timings that are not configuration, kept here so every number that shapes how jobs
 * end is in one place.
 */
export const TIMINGS = {
  /** A run that settled may leave its port open a moment (its thread died mid-send). */
  portCloseFallbackMs: 2_000,
  /**
   * A `shared` thread asked, at a job's hard stop, whether its loop still runs: no answer in this
   * long (or the cancel grace, if longer) and it is stuck, so terminated (see PiscinaExecutor).
   */
  threadAnswerMs: 5_000,
  /** After close() hard-stops stragglers, how long it waits for their endings to arrive. */
  stragglerEndWaitMs: 1_000,
  /**
   * A durable write failed (a full disk): what it could not write is tried again this long after,
   * and again after each failure, when no other write takes it along (a quiet session).
   */
  ledgerRetryMs: 2_000,
  /** Idle Piscina threads above `minThreads` stay warm this long, so a later wave starts at once. */
  poolIdleTimeoutMs: 10 * 60_000,
  /** Piscina's own close bound (the manager destroys the pool; this only caps a stray close()). */
  poolCloseWaitMs: 2_000,
  /** A permission answer slower than this is a denial: a background job never waits on a person. */
  permissionAnswerMs: 5_000,
  /**
   * A tool's timeout counts the time its thread was free to run it, in steps of this long: a step
   * whose timer fires later than twice this (the thread's loop was held by other jobs, e.g.
   * thousands starting at once on a `shared` thread) counts as twice this. See withTimeout's `tickMs`.
   */
  toolTimeoutTickMs: 5_000,
  /**
   * A tool's timeout counts the share of each tick its thread's loop had to spare, at least this
   * share: on a thread saturated by other jobs, `toolTimeoutMs` 60 s is 4 minutes of wall time at
   * most. See withTimeout's `minShare`.
   */
  toolTimeoutMinShare: 0.25,
  /**
   * A grep or find_files call's `searchTimeoutMs` counts its own work in full and each of its
   * waits (for I/O, or for its turn on a loop held by other jobs) as twice this at most. See
   * steppedDeadline (shared/abort.ts).
   */
  searchWaitTickMs: 10,
} as const;

/**
 * The longest `forkpool fanout` input line, in bytes (its newline not counted). A task is at most
 * 200,000 characters (up to 6 bytes each as a JSON `\uXXXX` escape); a longer line is refused
 * while it is read, never held whole: one 100 MB line cost about 2.3 GB before.
 */
export const FANOUT_LINE_MAX_BYTES = 2 * 1024 * 1024;

/**
 * `forkpool fanout`'s `background.isolation` when no flag, variable or file sets it: `shared`
 * (many jobs per thread). 200 I/O jobs at a cap of 50 on two cores (docs/performance.md, the Dec 2
 * run): `thread` took 3.1× the CPU per job, 7× the memory and 2.7× the wall time of `shared`, for
 * an isolation a batch of one's own tasks seldom needs. The library keeps {@link DEFAULTS}' `thread`.
 */
export const FANOUT_ISOLATION: 'thread' | 'shared' = 'shared';

/** Bounds of a wait for jobs (`ParentControls.wait`, wait_background_agents; src/main/jobs/waits.ts). */
export const WAIT_LIMITS = {
  /** The longest wait the library accepts, in ms (one hour); wait again for longer. */
  maxTimeoutMs: 3_600_000,
  /** Jobs one wait may name. */
  maxJobs: 1_000,
  /**
   * The tool's `timeout_ms` may be at most `toolLimits.toolTimeoutMs` less this: its own timer
   * then ends the wait with an answer before the tool loop's timeout fails the call.
   */
  toolMarginMs: 1_000,
  /** The chat's `/bg wait` without `--timeout`. */
  chatDefaultMs: 30_000,
  /** `POST /v1/jobs/wait`: characters of one job's result an answer carries (the rest: `GET /v1/jobs/{id}/result?offset=`). */
  resultPageChars: 100_000,
  /** `POST /v1/jobs/wait`: bytes of ended jobs one answer carries; past it a job comes without its result (`resultNext: 0`). */
  answerMaxBytes: 4_000_000,
} as const;

/**
 * A job's transcript (src/main/jobs/transcripts.ts): what its progress events carry, and what is
 * kept of them per job. Past `maxSteps` or `maxChars` the first `headSteps` stay and the oldest
 * step after them goes (a read says how many went), so memory and the ledger row stay bounded.
 */
export const TRANSCRIPT_LIMITS = {
  /** Text in one progress event: an `assistant_text`, a `tool_call`'s arguments, a `tool_result`'s output (head and tail). */
  event: { textChars: 4_000, argsChars: 2_000, outputChars: 2_000 },
  maxSteps: 200,
  maxChars: 60_000,
  /** Characters one model step holds for its tool calls (id, name and arguments); past it the calls are counted, not kept. */
  stepCallChars: 20_000,
  headSteps: 20,
  /** Ended jobs' transcripts held in memory (the newest); a durable ledger keeps each until retention drops its job's result. */
  heldEnded: 2_000,
  /** One page of `GET /v1/jobs/{id}/transcript` at most. */
  pageMax: 200,
} as const;

/** The stale-on-arrival check at delivery (src/main/delivery/staleness.ts), which runs on the main thread. */
export const STALE_CHECK_LIMITS = {
  /** Files stat'ed or hashed at once, over all the results of one delivery. */
  concurrency: 8,
  /**
   * Bytes hashed in one delivery, over all its files. A file whose size or time changed past
   * this is reported modified without reading it (a touched file may then be called stale).
   */
  hashBytes: 256 * 1024 * 1024,
} as const;

/** What a durable ledger file keeps (src/main/ledger/sqlite-prune.ts). */
export const LEDGER_PRUNING = {
  /**
   * Sessions kept, newest activity first; an older one goes with all its jobs' rows once none of
   * its jobs waits to run or to be delivered and no process holds it.
   */
  keepSessions: 1_000,
} as const;

/**
 * forkpool's own git (src/main/jobs/git-leash.ts, worktrees.ts): how long one command may run,
 * how much output is kept, and how big a job's commit may be. A job that left more than this in
 * its worktree is not committed: its worktree is kept as it is, and its result says why.
 */
export const WORKTREE_LIMITS = {
  /** One git command run off the main thread (commit, merge, checkout): stopped past this. */
  gitTimeoutMs: 120_000,
  /** One of the checks made before a worktree job's first launch (rev-parse, status, worktree add), awaited off the main thread. */
  quickTimeoutMs: 60_000,
  /** Output kept of one git command; the rest is dropped. */
  gitOutputMaxBytes: 32 * 1024 * 1024,
  /** Changed files one job's commit may hold. */
  maxCommitFiles: 20_000,
  /** Bytes of changed files one job's commit may hold. */
  maxCommitBytes: 256 * 1024 * 1024,
} as const;
