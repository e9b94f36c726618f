/** The MCP hub's bounds, in one place (what a hostile or broken server can cost the host). */
export const MCP_LIMITS = {
  /**
   * One JSON-RPC message from a stdio server, in bytes. The client's own default is 10 MiB, so
   * a 10 MB answer would close the connection; past this one it does (the call fails, the hub
   * restarts the server), below it the answer is capped to `outputMaxChars`.
   */
  maxMessageBytes: 32 * 1_048_576,
  // (The same bound holds for one HTTP answer's body: bounded-fetch.ts.)
  /** One tool's input schema, as JSON characters: a larger one (10,000 properties) is refused, named in `status()`. */
  schemaMaxChars: 100_000,
  /** Tools taken from one server; the rest are refused, named in `status()`. */
  maxToolsPerServer: 256,
  /** A tool's description, characters (head kept). */
  descriptionMaxChars: 4_000,
  /** Connecting: the process start or HTTP request plus the initialize handshake and the first tools/list. */
  connectTimeoutMs: 30_000,
  /** A tools/list after `notifications/tools/list_changed`. */
  listTimeoutMs: 30_000,
  /**
   * Least time between two tools/list refreshes: a flood of `list_changed` notifications
   * costs one refresh in flight and one pending, never one per notification.
   */
  refreshMinIntervalMs: 250,
  /** Restart backoff: first delay, cap, and attempts in a row before the server is left `down`. */
  restartBaseMs: 250,
  restartMaxMs: 30_000,
  maxRestartAttempts: 8,
  /** A connection that stayed up this long starts the backoff from the first delay again. */
  stableAfterMs: 30_000,
  /** The end of a stdio server's stderr kept for its status (redacted). */
  stderrTailChars: 2_000,
  /** A status' `lastError`, characters. */
  errorMaxChars: 1_000,
} as const;
