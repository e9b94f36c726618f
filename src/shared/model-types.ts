// The model call's types, apart from model-call.ts so the wires and the stream assembler can name
// them without importing the call itself (which imports them: an import circle).
import type { ModelClient } from './model-client.js';
import type { ChatCompletionCreateParams, ChatCompletionMessageFunctionToolCall } from 'openai/resources/chat/completions';
import type { Usage } from './usage.js';
import type { ForkpoolConfig } from './config.js';
import type { SlotSource } from './connection-slots.js';

/** What one model call produced, whether streamed or not. */
export interface ModelReply {
  content: string;
  toolCalls: ChatCompletionMessageFunctionToolCall[];
  finishReason: string | null;
  usage: Usage;
  model: string;
  /**
   * `performance.now()` when the response headers came: time to first byte is the endpoint's
   * latency (its queueing), without the time this thread took to read the rest.
   */
  headersAt?: number;
  /** The Responses wire's reasoning items, sent back with the job's next request (wires/history.ts). */
  reasoningItems?: unknown[];
  /** The Anthropic wire's `thinking` / `redacted_thinking` blocks, sent back unchanged the same way. */
  thinkingBlocks?: unknown[];
}

/**
 * The simple gate: after a 429 with Retry-After, every request waits, not only the one that saw
 * it. {@link SharedRateGate} shares one across the threads of an executor.
 */
export interface PauseGate {
  /** Resolves when requests may be sent again. */
  wait(signal: AbortSignal): Promise<void>;
  /** Nobody sends before `Date.now() + ms`. */
  pauseFor(ms: number): void;
}

/** How one request through a gate ended, reported to the gate exactly once. */
export type RequestOutcome =
  /** `latencyMs`: from sending to the response headers (streamed) or the whole response. */
  | { kind: 'ok'; latencyMs: number }
  /** The endpoint said it is overloaded: 429 or 503. */
  | { kind: 'overloaded'; status: number; latencyMs: number; retryAfterMs?: number }
  /** Any other failure (another status, a transport error, a timeout). */
  | { kind: 'failed'; latencyMs: number; retryAfterMs?: number }
  /** Given up before an answer (an abort), or never sent. */
  | { kind: 'abandoned' };

/** An admitted request's slot: `settle` gives it back and says how the request went. */
export interface GateTicket {
  settle(outcome: RequestOutcome): void;
}

/**
 * A gate that counts requests in flight (adaptive concurrency, src/main/request-gate.ts):
 * each request is admitted, holds a slot, and gives it back with its outcome.
 */
export interface AdmissionGate {
  /** Resolves when this request may be sent; rejects with an AbortError if `signal` aborts first. */
  admit(signal: AbortSignal): Promise<GateTicket>;
}

/** What a model call waits on before each request (the seam for other limiters, e.g. cluster-wide). */
export type RateGate = PauseGate | AdmissionGate;

/**
 * A retry about to wait: `attempt` of `maxRetries`, the HTTP `status` when there was one, the
 * endpoint's `host` (for `rate limited by <host>, retrying in 15 s (2/4)`, see retryLine).
 */
export type RetryEvent = { attempt: number; delayMs: number; reason: string; status?: number; host?: string; maxRetries?: number };

export type ModelCallConfig = Pick<ForkpoolConfig, 'model' | 'temperature' | 'stream' | 'streamIdleTimeoutMs' | 'maxRetries' | 'requestTimeoutMs'> &
  Partial<Pick<ForkpoolConfig, 'maxResponseChars' | 'api' | 'maxTokens' | 'firstByteTimeoutMs' | 'thinking'>>;

export interface ModelCallOptions {
  client: ModelClient;
  config: ModelCallConfig;
  params: Pick<ChatCompletionCreateParams, 'messages' | 'tools' | 'response_format'>;
  signal: AbortSignal;
  rateGate?: RateGate | undefined;
  /**
   * The thread's connections to this endpoint (`modelConnectionsPerThread`): each attempt holds
   * a slot from before it is sent to its last byte. Undefined: no bound (the HTTP agent's own pool).
   */
  connections?: SlotSource | undefined;
  onRetry?: ((event: RetryEvent) => void) | undefined;
}
