/**
 * Every default limit, timeout and cap in one place. Merge with a spread; never mutate.
 */
export const DEFAULTS = {
  /** Model name used when none is configured; the simulator answers to any name. */
  model: 'forkpool-sim',
  temperature: 0,
  /** Tool-loop iterations (model calls) before a run ends with `budget_exceeded`. */
  maxIterations: 20,
  /** One model HTTP request, headers to last byte. */
  requestTimeoutMs: 120_000,
  /** A streamed response that sends nothing for this long is aborted. */
  streamIdleTimeoutMs: 60_000,
  /** Retries of 408/409/429/5xx and connection errors, with backoff and jitter. */
  maxRetries: 3,
  stream: true,
  /** Same tool + same arguments this many times in a row: warn the model. */
  loopWarnAfter: 3,
  /** ... and this many times: stop the run with `loop_detected`. */
  loopStopAfter: 5,
  tools: {
    readFileMaxBytes: 256 * 1024,
    readFileDefaultLines: 400,
    outputMaxChars: 30_000,
    grepMaxMatches: 200,
    grepMaxFileBytes: 2 * 1024 * 1024,
    findMaxResults: 500,
    bashTimeoutMs: 30_000,
    toolTimeoutMs: 60_000,
    /** One grep or find_files call ends with TOOL_TIMEOUT after this long (a huge tree). */
    searchTimeoutMs: 20_000,
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
  background: {
    /** The seeds' `max_background_agents`. */
    maxConcurrent: 3,
    /** The seeds' `background_agent_timeout_minutes`, counted from start, not from queueing. */
    timeoutMinutes: 20,
    /** Jobs waiting for a slot; `0` means no limit. */
    queueLimit: 0,
    /** 1: a background job has no spawn tool (the fork-bomb guard). */
    maxDepth: 1,
    isolation: 'thread' as 'thread' | 'shared',
    /** In `shared` isolation, jobs per worker thread. */
    tasksPerThread: 32,
    /** Worker threads; 0 picks from the concurrency cap and isolation mode. */
    threads: 0,
    /** Old-generation heap cap of a worker thread, in MiB. */
    heapMb: 512,
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
  },
  /** Capped parent session summary handed to `full_context` jobs. */
  sessionSummaryMaxChars: 4_000,
} as const;

export const BUILTIN_TOOL_NAMES = ['read_file', 'list_dir', 'find_files', 'grep', 'bash', 'write_file', 'edit_file'] as const;
export type BuiltinToolName = (typeof BUILTIN_TOOL_NAMES)[number];

/** Tools that act on the world; they need a grant in the permission store. */
export const GATED_TOOLS: readonly BuiltinToolName[] = ['bash', 'write_file', 'edit_file'];
