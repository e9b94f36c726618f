import { APIConnectionError, APIConnectionTimeoutError, APIError } from 'openai/error';
import { AbortError, ForkpoolError, TimeoutError } from './errors.js';
import { abortableSleep } from './abort.js';
import { redactSecrets } from './tools/secrets.js';
import { anthropicOnce } from './wires/anthropic.js';
import { chatOnce } from './wires/chat.js';
import { clientSecrets } from './model-client.js';
import { describeConnectionError, endpointHost, httpErrorHint, requestUrlForHumans, type RequestFacts } from './model-errors.js';
import type { ModelReply, RateGate, GateTicket, ModelCallOptions, RequestOutcome } from './model-types.js';

export { clientSecrets, createModelClient, type ModelClient } from './model-client.js';

export type {
  ModelReply,
  PauseGate,
  RequestOutcome,
  GateTicket,
  AdmissionGate,
  RateGate,
  RetryEvent,
  ModelCallConfig,
  ModelCallOptions,
} from './model-types.js';

/** Waits at `gate` and returns the ticket to settle once the request has ended. */
export async function admitRequest(gate: RateGate | undefined, signal: AbortSignal): Promise<GateTicket | undefined> {
  if (!gate) return undefined;
  if ('admit' in gate) return gate.admit(signal);
  await gate.wait(signal);
  return {
    settle: (outcome) => {
      if ((outcome.kind === 'overloaded' || outcome.kind === 'failed') && outcome.retryAfterMs !== undefined) gate.pauseFor(outcome.retryAfterMs);
    },
  };
}

/** The gate's view of a failed request (its status, Retry-After, time taken). */
function outcomeOfFailure(verdict: Pick<Verdict, 'status' | 'retryAfterMs'>, latencyMs: number): RequestOutcome {
  const retryAfter = verdict.retryAfterMs !== undefined ? { retryAfterMs: verdict.retryAfterMs } : {};
  if (verdict.status === 429 || verdict.status === 503) return { kind: 'overloaded', status: verdict.status, latencyMs, ...retryAfter };
  return { kind: 'failed', latencyMs, ...retryAfter };
}

const RETRYABLE_STATUS = new Set([408, 409, 429]);
const BACKOFF_BASE_MS = 500;
const BACKOFF_CAP_MS = 8_000;
/**
 * Sends one chat-completions request, retrying 408/409/429/5xx and transport failures (a body
 * that is not JSON, a stream cut off or stalled) with exponential backoff, jitter and a cap,
 * honouring Retry-After. Other 4xx fail at once. Throws {@link ForkpoolError}.
 */
export async function callModel(options: ModelCallOptions): Promise<ModelReply> {
  const { config, signal } = options;
  for (let attempt = 0; ; attempt++) {
    if (signal.aborted) throw new AbortError(signal.reason);
    // A connection first, then the gate: the gate's latency and every timer below (ours and the
    // SDK's) start when the request can really be sent, so a wait in this thread's own queue of
    // requests never times a call out. An abort while waiting throws an AbortError, as below.
    const release = options.connections ? await options.connections.acquire(signal) : undefined;
    let ticket: GateTicket | undefined;
    try {
      ticket = await admitRequest(options.rateGate, signal);
    } catch (error) {
      release?.();
      throw error;
    }
    const sentAt = performance.now();
    try {
      const reply = await attemptOnce(options);
      ticket?.settle({ kind: 'ok', latencyMs: (reply.headersAt ?? performance.now()) - sentAt });
      return reply;
    } catch (error) {
      if (signal.aborted) {
        ticket?.settle({ kind: 'abandoned' });
        throw new AbortError(signal.reason);
      }
      const verdict = classify(error, requestFacts(options));
      // Settled before anything else can throw: the slot must come back whatever follows.
      ticket?.settle(outcomeOfFailure(verdict, performance.now() - sentAt));
      // Asking again would only grow the same runaway answer.
      if (error instanceof ForkpoolError && error.code === 'MODEL_RESPONSE_TOO_LARGE') throw error;
      // The reason quotes the server's body, which may echo the key: it goes into events and records.
      const reason = redactSecrets(verdict.reason, clientSecrets(options.client));
      if (!verdict.retryable || attempt >= config.maxRetries) {
        throw new ForkpoolError('MODEL_REQUEST_FAILED', `model request failed after ${attempt + 1} attempt(s): ${reason}`, { cause: error });
      }
      const backoff = Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** attempt) * (0.5 + Math.random() * 0.5);
      const delayMs = Math.max(backoff, verdict.retryAfterMs ?? 0);
      // The backoff holds no connection: others may use it meanwhile.
      release?.();
      options.onRetry?.({
        attempt: attempt + 1,
        delayMs: Math.round(delayMs),
        reason,
        ...(verdict.status !== undefined ? { status: verdict.status } : {}),
        host: endpointHost(options.client.baseURL),
        maxRetries: config.maxRetries,
      });
      await abortableSleep(delayMs, signal);
    } finally {
      // Once the body is read (or the request failed): the socket is idle again, or gone.
      release?.();
    }
  }
}

/**
 * One attempt on the endpoint's wire. The tool loop's history is Chat Completions messages on
 * every wire; the others translate it (src/shared/wires/). For `anthropic` the client only
 * carries the base URL and the key (the wire is spoken with fetch).
 */
function attemptOnce(options: ModelCallOptions): Promise<ModelReply> {
  const { config } = options;
  if (config.api === 'responses') return responsesOnce(options);
  if (config.api === 'anthropic') return anthropicOnce(options, clientSecrets(options.client)[0]);
  return chatOnce(options);
}

/**
 * The Responses wire goes through the `openai` client: imported on its first request, so a
 * thread whose jobs speak another wire never evaluates the package (model-client.ts).
 */
async function responsesOnce(options: ModelCallOptions): Promise<ModelReply> {
  const wire = await import('./wires/responses.js');
  return options.config.stream ? wire.responsesStreamOnce(options) : wire.responsesRequestOnce(options);
}

interface Verdict {
  retryable: boolean;
  status?: number;
  reason: string;
  retryAfterMs?: number;
}

/** The request as a person may see it: method, URL without a key, the configured model, whether a key went along. */
function requestFacts({ client, config }: ModelCallOptions): RequestFacts {
  return { method: 'POST', url: requestUrlForHumans(client.baseURL, '/chat/completions'), model: config.model, keySent: clientSecrets(client).length > 0 };
}

function classify(error: unknown, facts: RequestFacts): Verdict {
  // `instanceof` on the generic class narrows to APIError<any, any, any>: read it with its defaults.
  const apiError = error instanceof APIError ? (error as InstanceType<typeof APIError>) : undefined;
  if (apiError && typeof apiError.status === 'number') {
    const status = apiError.status;
    const excerpt = bodyExcerpt(apiError);
    const reason = `HTTP ${status}${excerpt ? `: ${excerpt}` : ''}${httpErrorHint(status, facts)}`;
    const retryable = RETRYABLE_STATUS.has(status) || status >= 500;
    const retryAfterMs = parseRetryAfter(apiError.headers);
    return retryAfterMs === undefined ? { retryable, reason, status } : { retryable, reason, status, retryAfterMs };
  }
  if (error instanceof TimeoutError) return { retryable: true, reason: error.message };
  if (error instanceof APIConnectionTimeoutError) return { retryable: true, reason: 'request timed out' };
  if (error instanceof APIConnectionError) return { retryable: true, reason: describeConnectionError(error, facts.method, facts.url) };
  // A body that is not JSON, a stream cut short: transport trouble, worth another try.
  const message = error instanceof Error ? error.message : String(error);
  return { retryable: true, reason: `transport error: ${message.slice(0, 200)}` };
}

function bodyExcerpt(error: InstanceType<typeof APIError>): string {
  const raw = error.error === undefined ? error.message : JSON.stringify(error.error);
  return raw.length > 200 ? `${raw.slice(0, 200)}…` : raw;
}

function parseRetryAfter(headers: Headers | undefined): number | undefined {
  const ms = headers?.get('retry-after-ms');
  if (ms && Number.isFinite(Number(ms))) return Number(ms);
  const value = headers?.get('retry-after');
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isFinite(date) ? Math.max(0, date - Date.now()) : undefined;
}
