/** A `thread`-isolation worker's heap cap (one job per thread) when `background.heapMb` is 0. */
export const THREAD_HEAP_MB = 512;
/**
 * A `shared`-isolation worker's heap cap when `background.heapMb` is 0. The thread holds many
 * jobs, and V8 grows a heap by less (so collects garbage more often) under a cap below 2 GiB.
 * 512 → 2048 in `shared`, bench cells, 3 alternated rounds on a quiet machine, medians: cpu
 * workload 532 → 309 CPU ms/job (RSS the same), parse 493 → 407 (+110 MB), I/O 200 jobs
 * 26.7 → 18.6 (+27 MB). `thread` keeps 512: there it saved no CPU and cost 4 MB a thread.
 */
export const SHARED_HEAP_MB = 2_048;

/**
 * A `shared`-isolation worker's heap cap when `background.heapMb` is 0 and the thread may hold
 * {@link MANY_JOBS_PER_THREAD} jobs or more: just under 2 GiB, on purpose. After each full GC V8
 * lets an old generation grow to 4× its live size when its cap is 2 GiB or more, and to at most
 * 2× under it (v8 src/heap/heap-controller.cc, `MaxGrowingFactor`; never past halfway from the
 * live size to the cap). A thread busy starting and running thousands of jobs allocates fast
 * enough that V8 takes the most it may. With few jobs a thread's live heap is small and 4× of it
 * is cheap CPU-wise (see SHARED_HEAP_MB); with tens of thousands it is hundreds of MB, and 4× of
 * that was most of the process's RSS (issue 40, docs/performance.md "Dec 6, session 14").
 */
export const MANY_JOBS_HEAP_MB = 2_047;
/** Jobs per `shared` thread from which the cap is {@link MANY_JOBS_HEAP_MB}. */
export const MANY_JOBS_PER_THREAD = 1_000;

/** A worker thread's heap cap: `background.heapMb`, or by isolation (and jobs per thread) when it is 0. */
export function workerHeapMb(background: { heapMb: number; isolation: 'thread' | 'shared'; tasksPerThread?: number }): number {
  if (background.heapMb) return background.heapMb;
  if (background.isolation === 'thread') return THREAD_HEAP_MB;
  return (background.tasksPerThread ?? 0) >= MANY_JOBS_PER_THREAD ? MANY_JOBS_HEAP_MB : SHARED_HEAP_MB;
}

/**
 * Every default limit, timeout and cap in one place. Merge with a spread; never mutate.
 */
export const DEFAULTS = {
  /** Model name used when none is configured; the simulator answers to any name. */
  model: 'forkpool-sim',
  temperature: 0,
  /**
   * The parent agent's model calls in one turn before the turn ends with `budget_exceeded`
   * (ITERATION_LIMIT). Not a background job's limit: a job's model calls are its budget's
   * `maxTurns` (`background.budget.maxTurns`, an agent's `budget.maxTurns`), one limit with a
   * wrap-up message before it.
   */
  maxIterations: 20,
  /**
   * One model HTTP request, from the response's first byte (its headers) to its last: time the
   * request waits in the server's own queue before it answers does not count (a local server
   * busy with other jobs). The wait for that first byte is bounded by `firstByteTimeoutMs`.
   */
  requestTimeoutMs: 120_000,
  /**
   * How long one model request may wait for the first byte of its response (the headers): a
   * server that queues requests, or never answers. 10 minutes: a local model behind a few
   * long jobs answers within it, a dead endpoint is still given up.
   */
  firstByteTimeoutMs: 600_000,
  /**
   * `max_tokens` sent with every model request: a reply past it is cut by the server
   * (`finish_reason: "length"`, a `partial` job). Without a bound a local server generates
   * until its context is full.
   */
  maxTokens: 8_192,
  /**
   * One turn of a tool loop, the parent's or a job's: a model call (its retries included) plus
   * the tools it calls. Past it the call and the tools are aborted and the run ends with
   * TURN_TIMEOUT. 0: no such limit (the per-request, per-tool and per-job timeouts still apply).
   */
  turnTimeoutMs: 0,
  /**
   * HTTP connections one thread keeps to one model endpoint (`baseUrl`); its other requests wait
   * in FIFO order, before their timeout starts. 256: far below common open-file limits (1,024
   * soft on many Linux systems) at a few threads, and beyond what one endpoint usually admits.
   */
  modelConnectionsPerThread: 256,
  /** A streamed response that sends nothing for this long is aborted. */
  streamIdleTimeoutMs: 60_000,
  /** Retries of 408/409/429/5xx and connection errors, with backoff and jitter. */
  maxRetries: 3,
  stream: true,
  /** The wire a model endpoint speaks: Chat Completions (docs/configuration.md "Providers"). */
  api: 'chat' as 'chat' | 'responses' | 'anthropic',
  /**
   * `max_tokens` of an Anthropic Messages request when none is configured: that API requires
   * one (the other wires send none unless configured).
   */
  anthropicMaxTokens: 8_192,
  /**
   * Characters of one model response (content plus tool-call arguments) before the call fails
   * with MODEL_RESPONSE_TOO_LARGE: a runaway model would otherwise grow until the heap dies.
   */
  maxResponseChars: 8_000_000,
  /** Where jobs run: Piscina worker threads (crash-isolated, hard-stoppable). */
  executor: 'piscina' as 'piscina' | 'tinypool' | 'worker-per-job' | 'inline' | 'bullmq',
  /** `record.error` without stacks and absolute paths; `debug` keeps them. */
  errorDetail: 'brief' as 'brief' | 'debug',
  /** Same tool + same arguments this many times in a row: warn the model. */
  loopWarnAfter: 3,
  /** ... and this many times: stop the run with `loop_detected`. */
  loopStopAfter: 5,
  /** A job's call of an ungranted gated tool: `deny` at once, or `ask` and wait (docs/tools.md "Approvals"). */
  approvals: 'deny' as 'deny' | 'ask',
  /** How long a call waits for its answer before `approvalTimeoutAction`. */
  approvalTimeoutMs: 600_000,
  approvalTimeoutAction: 'deny' as 'deny' | 'cancel',
  tools: {
    readFileMaxBytes: 256 * 1024,
    readFileDefaultLines: 400,
    /**
     * Bytes one read_file call reads at most, counting the lines it skips to reach `offset`:
     * what it reads stays bounded by what it can return, whatever the file's size.
     */
    readFileMaxScanBytes: 64 * 1024 * 1024,
    outputMaxChars: 30_000,
    grepMaxMatches: 200,
    grepMaxFileBytes: 2 * 1024 * 1024,
    findMaxResults: 500,
    /** Largest file code_outline parses (parsing is synchronous CPU work: about 10-20 ms per 100 KB). */
    outlineMaxBytes: 1024 * 1024,
    bashTimeoutMs: 30_000,
    toolTimeoutMs: 60_000,
    /** Tool calls of one model message that run at once; the rest wait their turn (all run, results in order). */
    maxParallelToolCalls: 8,
    /**
     * Tool calls one model response may make; the calls past it are not run, each is answered
     * with a TOOL_CALLS_PER_RESPONSE tool error (one response of 30,000 calls held the main
     * thread 11 s with their events and transcript).
     */
    maxToolCallsPerResponse: 256,
    /**
     * One grep or find_files call ends with TOOL_TIMEOUT after this long (a huge tree), counting
     * its own work in full and each of its waits as 20 ms at most (TIMINGS.searchWaitTickMs):
     * a search on a thread held by thousands of other jobs is slowed down, not timed out.
     */
    searchTimeoutMs: 20_000,
    /**
     * bash: processes (threads count) one command may run at once. Enforced by a cgroup's pids
     * limit where forkpool can make one, else by RLIMIT_NPROC inside bubblewrap when not root.
     */
    bashMaxProcesses: 512,
    /** bash: MiB of memory: a cgroup's memory limit where one can be made, and each process's RLIMIT_DATA. */
    bashMaxMemoryMb: 2_048,
    /** bash: MiB of the largest file one process may write, anywhere (RLIMIT_FSIZE). */
    bashMaxFileMb: 1_024,
    /** bash in bubblewrap: MiB of the sandbox's private /tmp (a RAM tmpfs). */
    bashTmpMb: 512,
    /**
     * Entries bash's start looks through for files hidden by name, to mask them in the sandbox;
     * past it bash is refused (a masked set it could not finish would leave some readable).
     */
    hiddenScanMaxEntries: 200_000,
  },
  /**
   * How bash is confined. `auto`: inside bubblewrap when it works on this machine, else a plain
   * process group (said once at start); `bwrap`: always bubblewrap (startup fails without it);
   * `none`: a plain process group.
   */
  sandbox: 'auto' as 'auto' | 'bwrap' | 'none',
  /** Where bubblewrap is looked for (Debian's `bubblewrap` package). */
  bwrapPath: '/usr/bin/bwrap',
  /** bash inside the sandbox may use the network. */
  sandboxNetwork: false,
  /** Paths the write tools refuse (a name matches that segment anywhere; a path with "/" a workspace-relative prefix). */
  protectedPaths: ['.git'] as readonly string[],
  /**
   * The walk that finds protected entries (every `.git`, at any depth) before and after each
   * sandboxed bash command; past these bounds deeper entries are neither bound read-only nor checked.
   */
  protectedScan: { maxEntries: 100_000, maxDepth: 64, maxBinds: 256 },
  /**
   * File names no tool opens, anywhere in the workspace (they usually hold keys); `.env.<x>`
   * counts too, except the templates in {@link DEFAULTS.hiddenNameTemplates}. See tools/hidden.ts.
   */
  hiddenNames: ['forkpool.config.json', '.env', '.envrc'] as readonly string[],
  /** `.env.<suffix>` files that are templates, not secrets: readable. */
  hiddenNameTemplates: ['example', 'sample', 'template'] as readonly string[],
  background: {
    /** The seeds' `max_background_agents`. */
    maxConcurrent: 3,
    /** The seeds' `background_agent_timeout_minutes`, counted from start, not from queueing. */
    timeoutMinutes: 20,
    /** Jobs waiting for a slot; `0` means no limit. */
    queueLimit: 0,
    /** 1: a background job has no spawn tool (the fork-bomb guard). */
    maxDepth: 1,
    /**
     * Children one job may have spawned (depth above 1); past it its spawn is refused with
     * CHILDREN_LIMIT, a tool error its model reads. With `maxDepth` 3 a tree is then at most
     * 1 + 50 + 2,500 jobs.
     */
    maxChildrenPerJob: 50,
    /**
     * Jobs waiting for a slot past which a job's own spawn is refused with QUEUE_FULL (a tool
     * error; a spawn of the parent's model or the API obeys `queueLimit` only). One tree once
     * queued 300,000 jobs. 0: no limit.
     */
    nestedQueueLimit: 1_000,
    /** A job answering with children still running waits for them (its slot given back meanwhile). */
    childrenOnEnd: 'wait' as 'wait' | 'cancel',
    isolation: 'thread' as 'thread' | 'shared',
    /**
     * Where a job's file tools and bash work: `shared`, the workspace itself; `worktree`, a fresh
     * `git worktree` on a branch `forkpool/<job-id>` that the parent merges, keeps or drops
     * (docs/delivery.md "Worktrees"). A spawn may choose for itself.
     */
    workspace: 'shared' as 'shared' | 'worktree',
    /** No schedule_next_turn tool unless a spawn asks for one (core-agent's nil WithDefaultScheduler). */
    scheduler: 'none',
    /** Where worktrees are made; '' for the user's cache folder (`~/.cache/forkpool/worktrees/<repo>-<hash>/`). */
    worktreeDir: '',
    /** In `shared` isolation, jobs per worker thread. */
    tasksPerThread: 32,
    /** Worker threads; 0 picks from the concurrency cap and isolation mode. */
    threads: 0,
    /**
     * Old-generation heap cap of a worker thread, in MiB; 0 picks by isolation:
     * {@link THREAD_HEAP_MB} in `thread`, {@link SHARED_HEAP_MB} in `shared`.
     */
    heapMb: 0,
    /**
     * Young-generation cap of a worker thread, in MiB; 0 picks by isolation: 4 in `thread`
     * (THREAD_YOUNG_HEAP_MB in piscina-executor.ts), 16 in `shared` (SHARED_YOUNG_HEAP_MB).
     */
    youngHeapMb: 0,
    /**
     * Worker threads run this much nicer (Linux) than the main thread, so jobs that burn CPU
     * yield it to the parent (or the server embedding forkpool). 0 turns it off.
     */
    niceIncrement: 10,
    /** Cooperative cancel → hard stop after this grace period. */
    cancelGraceMs: 2_000,
    /** Injected result text is capped to this many characters, head and tail kept. */
    resultMaxChars: 6_000,
    /** `close()` waits this long for jobs to end before hard-stopping them. */
    closeTimeoutMs: 5_000,
    /** A job killed with its thread while innocent (shared mode) is re-queued this many times. */
    maxRequeues: 1,
    /** A spawn past the cap waits in the queue (`reject`: refused with QUEUE_FULL). */
    onFull: 'queue' as 'queue' | 'reject',
    /** `report_alert` calls a job may make. */
    maxAlertsPerJob: 5,
    /** A spawn's own `systemPrompt` is appended to the background baseline; true lets it replace the baseline instead. */
    allowSystemPromptReplace: false,
    /** The parent's spawn tool does not offer `output_schema` (true: its model may type a job's answer). */
    allowOutputSchema: false,
    /** An ended job's conversation is kept up to this many characters (JSON), for `resume_background_agent`; 0: not kept. */
    keepConversationChars: 200_000,
    /** Alerts a session buffers for its next turn (oldest dropped past it). */
    alertBufferMax: 256,
    /** `check_background_agent` refuses a job checked this recently when nothing changed since. */
    checkCooldownMs: 5_000,
    /** Per-job budgets of a fork (core-agent's defaults): model calls, dollars, minutes; no token limit. */
    budget: { maxTurns: 50, maxCostUsd: 1.0, maxWallclockMinutes: 10 },
    /**
     * `fixed`: at most `maxConcurrent` jobs, each sending its model requests freely (a 429's
     * Retry-After pauses everyone). `adaptive`: model requests in flight per endpoint follow
     * AIMD between `adaptive.floor` and `adaptive.ceiling`, and the parent's requests go first.
     */
    concurrency: 'fixed' as 'fixed' | 'adaptive',
    /** AIMD settings of `concurrency: "adaptive"` (the ceiling defaults to `maxConcurrent`). */
    adaptive: {
      floor: 1,
      /** The limit is multiplied by this on a 429 or 503 (once per burst). */
      decreaseFactor: 0.7,
      /** Short-term average latency past this multiple of the long-term one counts as overload; 0: off. */
      latencyTolerance: 3,
    },
    /**
     * What the ledger keeps of delivered jobs (undelivered ones are always kept whole). Results
     * are the bulk (a job's answer, its task); a record without them is about 1.5 KB.
     */
    retention: {
      /** Delivered results whose full text is kept, newest first. */
      keepResults: 1_000,
      /** ... for at most this long after delivery (one hour). */
      keepResultsMs: 3_600_000,
      /** Delivered records kept at all; older ones are forgotten (about 1.5 KB each without results: 10,000 ≈ 15 MB). */
      keepRecords: 10_000,
    },
  },
  /** The durable ledger (docs/durability.md); off (in memory) until `ledger.path` is set. */
  ledger: {
    /** A job that was running when the process died: `rerun` it (read-only agents only) or `deliver` it as interrupted. */
    onInterrupted: 'rerun' as 'rerun' | 'deliver',
    /** Restarts that may re-run one interrupted job; past it the job is delivered as interrupted. */
    maxReruns: 2,
    /** SQLite `synchronous`: `normal` survives a killed process (WAL); `full` also a power cut, at about 10x the write cost. */
    synchronous: 'normal' as 'normal' | 'full',
    /**
     * One process owns a scope (a session, a fan-out) at a time: it holds a lease row and
     * heartbeats it every fifth of this. A lease whose heartbeat is older is taken over (its owner
     * crashed or hangs); one whose owner exited on this machine is taken over at once.
     */
    leaseStaleMs: 30_000,
    /** Accept a ledger file inside the workspace, where every job's file tools could read and rewrite it. */
    allowInWorkspace: false,
  },
  /** `forkpool serve`. */
  server: {
    /** Loopback only unless told otherwise (any other address is served with a warning). */
    host: '127.0.0.1',
    /** Shortest bearer token accepted (`FORKPOOL_SERVER_TOKEN` or the `token` option); a generated one has 43. */
    minTokenChars: 16,
    port: 4477,
    /** Largest request body; a bigger one is refused with 413. */
    bodyLimitBytes: 1_048_576,
    /** Origins allowed to call the API from a browser; none (no CORS headers at all) by default. */
    corsOrigins: [] as string[],
    /** Events kept for `Last-Event-ID` resume on `/v1/events`. */
    eventBufferSize: 2_000,
    /** Parent-agent sessions open at once. */
    maxSessions: 16,
    /** `POST /v1/jobs/wait` requests open at once; the next is refused with 429 (TOO_MANY_WAITS). */
    maxWaits: 256,
  },
  /** What reaches the parent's context when background results are delivered (docs/delivery.md "Bounded delivery", "Stale results"). */
  delivery: {
    /** Without `maxInjectedTokens`: this share of the parent model's context window, per turn, for all results together. */
    contextShare: 0.2,
    /** Longest page `read_background_result` returns, in characters. */
    pageMaxChars: 20_000,
    /** A result based on files changed since the job read them: `annotate` it, or `rerun` the job once. */
    staleResults: 'annotate' as 'annotate' | 'rerun',
    /** `forkpool`: results in the turn's own input; `remy`: a hidden automated message (`@@automated::background_results@@`). */
    format: 'forkpool' as 'forkpool' | 'remy',
  },
  /** Spawn de-duplication (docs/delivery.md "De-duplication"). */
  dedup: {
    /** A spawn identical to a running job joins it instead of starting another. */
    attach: true,
    /** ... and one identical to a job that ended `ok` this recently gets its result (0: never). */
    reuseWithinSeconds: 120,
  },
  /** Capped parent session summary handed to `full_context` jobs. */
  sessionSummaryMaxChars: 4_000,
  /**
   * The parent's history, in tokens estimated by text kind (token-estimate.ts) and scaled by the endpoint's
   * reported usage (token-ratio.ts): past this, its oldest turns are folded into the session summary (down to
   * about 60% of it, so folding is rare).
   */
  parentHistoryMaxTokens: 100_000,
} as const;

// Moved to fixed-limits.ts; re-exported only for the modules that other work has open (import from fixed-limits.js instead).
export { BUILTIN_TOOL_NAMES, FANOUT_ISOLATION, FANOUT_LINE_MAX_BYTES, SPAWN_SPEC_LIMITS, TIMINGS, TRANSCRIPT_LIMITS } from './fixed-limits.js';

/** Failures in a row of one shared kind before `fanout` stops starting jobs (`--max-consecutive-failures`; src/cli/fanout-failures.ts). */
export const FANOUT_MAX_CONSECUTIVE_FAILURES = 10;
