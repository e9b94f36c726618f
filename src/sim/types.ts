/** Public types of the simulated chat-completions server. */

export type FaultKind =
  | '429'
  | '500'
  | '502'
  | '503'
  | 'bad_json'
  | 'malformed_tool_args'
  | 'unknown_tool'
  | 'truncated_stream'
  | 'hang_before_headers'
  | 'stall_mid_stream'
  | 'slow_drip'
  | 'endless_tool_calls'
  /** 401 with an OpenAI-style "Incorrect API key" body (not retried). */
  | '401'
  /** 404 with OpenAI's "model does not exist" body, naming the model asked for (not retried). */
  | '404'
  /** The reply is cut at the token limit: half its text, no tool calls, `finish_reason: "length"`. */
  | 'length';

export const FAULT_KINDS: readonly FaultKind[] = [
  '429',
  '500',
  '502',
  '503',
  'bad_json',
  'malformed_tool_args',
  'unknown_tool',
  'truncated_stream',
  'hang_before_headers',
  'stall_mid_stream',
  'slow_drip',
  'endless_tool_calls',
  '401',
  '404',
  'length',
];

export interface FaultSpec {
  kind: FaultKind;
  /** For '429': the `Retry-After` value in seconds (fractions allowed; also sent as `retry-after-ms`). Default 1. */
  retryAfterSeconds?: number;
  /** For 'slow_drip': the gap between chunks, in ms. Default 50. */
  dripIntervalMs?: number;
}

export interface ScriptToolCall {
  name: string;
  /** A string is sent verbatim (so it may be invalid JSON); an object is JSON-encoded. */
  arguments: string | Record<string, unknown>;
  /** Default `call_<request>_<index>`. */
  id?: string;
}

export interface ScriptStep {
  content?: string;
  toolCalls?: ScriptToolCall[];
  fault?: FaultSpec;
  /** Overrides the estimated usage of this response. */
  usage?: { prompt_tokens: number; completion_tokens: number };
  /** `length`: the reply says it was cut at the token limit (`finish_reason: "length"`), its content as given. */
  finishReason?: 'length';
}

export interface SimServerOptions {
  /** TCP port; default 0 (a free port). */
  port?: number;
  /** Default '127.0.0.1'. */
  host?: string;
  /** Fixed delay before the response starts, in ms. Default 0. */
  latencyMs?: number;
  /** Extra delay per output token, spread across stream chunks (non-stream: added up front). Default 0. */
  perTokenMs?: number;
  /** Uniform seeded jitter in [0, jitterMs) added to `latencyMs`. Default 0. */
  jitterMs?: number;
  /** PRNG seed for jitter and random faults. Default 1. */
  seed?: number;
  /** Scripted mode: the exact responses, in order. Absent: the plausible agent answers. */
  script?: ScriptStep[];
  /**
   * Faults keyed by 1-based request number (valid chat-completions requests only). Such a fault
   * replaces the response and does not consume a script step.
   */
  faults?: Record<number, FaultSpec>;
  /** Probability 0..1 of a random fault per request (seeded). Default 0. */
  faultRate?: number;
  /** Kinds drawn when `faultRate` hits. Default: every kind except 'hang_before_headers' and 'stall_mid_stream'. */
  faultKinds?: FaultKind[];
  /**
   * The model name responses carry, whatever the request asked for (llama-server answers with
   * its GGUF path, OpenAI with a dated snapshot). Default: the request's own `model`.
   */
  servedModel?: string;
  /** Stream chunking: at most this many estimated tokens (4 chars each) per content/arguments chunk. Default 4. */
  maxTokensPerChunk?: number;
  /** Every response is a tool call (list_dir with a varying path and counter): a model that never stops. Default false. */
  endlessToolCalls?: boolean;
  /**
   * Keep each request's parsed body in `requests`. Default false: a long-lived sim (a demo, a
   * benchmark, a server's test double) would otherwise keep every conversation it was sent.
   * Tests that read bodies ask for them.
   */
  recordBodies?: boolean;
  /**
   * Entries kept in `requests` (the oldest are dropped past it); `requestCount` counts them
   * all. Each entry without its body is a few dozen bytes. Default 10,000.
   */
  requestLogLimit?: number;
  /**
   * Model calls a research job makes (the plausible agent): past search and read, the missing
   * calls are `list_dir` calls before the answer. Values up to 3 change nothing. Default 3.
   */
  researchSteps?: number;
  /**
   * Server capacity: chat requests in flight beyond this many are answered at once with a 429
   * and `Retry-After` (see `capacityRetryAfterSeconds`), as a rate-limited endpoint does. Such
   * a refusal is counted in `overCapacity`, not numbered and not in `requests`. Default: none.
   */
  capacity?: number;
  /** `Retry-After` of an over-capacity 429, in seconds (fractions allowed). Default 1. */
  capacityRetryAfterSeconds?: number;
}

export interface RecordedRequest {
  /** 1-based number among valid chat-completions requests. */
  n: number;
  /** The API it came in on: `chat` (/v1/chat/completions), `responses` (/v1/responses) or `anthropic` (/v1/messages). */
  wire: 'chat' | 'responses' | 'anthropic';
  /** The parsed JSON body (undefined when `recordBodies` is false). */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the client's JSON as sent, in a public type: readers pick the fields they check
  body: any;
  receivedAt: number;
  fault?: FaultKind;
  /** Stream data chunks written so far (streamed responses only; a live count). */
  chunks?: number;
}

export interface SimServer {
  /** Base URL for the openai client, e.g. `http://127.0.0.1:PORT/v1`. */
  url: string;
  port: number;
  /** The latest valid chat-completions requests (up to `requestLogLimit`), in arrival order (a live array). */
  requests: RecordedRequest[];
  /** Every valid chat-completions request ever received, including those dropped from `requests`. */
  readonly requestCount: number;
  /** Chat requests refused with a 429 because `capacity` requests were already in flight. */
  readonly overCapacity: number;
  /** The most chat requests ever in flight at once (refused ones not counted). */
  readonly peakConcurrency: number;
  /** TCP connections open now, idle keep-alive ones included. */
  readonly openConnections: number;
  /** The most TCP connections ever open at once: what the clients' connection pools really used. */
  readonly peakConnections: number;
  /** e.g. "sim script exhausted at request 4" (a live array). */
  scriptErrors: string[];
  /** Changes options at runtime (latency, faults, ...). A new `script` restarts at its first step. */
  setOptions(patch: Partial<SimServerOptions>): void;
  /** Throws a `ForkpoolError` (code SIM_SCRIPT) if script steps are unused or a script error happened. */
  assertScriptDone(): void;
  /** Closes the server and destroys every open socket (hung requests included); clears all timers. */
  close(): Promise<void>;
}
