import OpenAI from 'openai';
import type { ChatCompletion, ChatCompletionChunk, ChatCompletionMessageFunctionToolCall } from 'openai/resources/chat/completions';
import { AbortError, ForkpoolError, TimeoutError } from './errors.js';
import { usageFromApi } from './usage.js';
import { abortableSleep, linkedAbort } from './abort.js';
import { modelBaseUrl, type ForkpoolConfig } from './config.js';
import { redactSecrets } from './tools/secrets.js';
import { DEFAULTS } from './defaults.js';
import { readEventStream } from './sse-reader.js';
import { StreamAssembler, maxEventChars, responseTooLarge } from './stream-assembler.js';
import { anthropicOnce } from './wires/anthropic.js';
import { chatMessages } from './wires/history.js';
import { responsesRequestOnce, responsesStreamOnce } from './wires/responses.js';
import { isReasoningModel, temperatureField } from './wires/sampling.js';
import { RequestClock, firstByteError } from './request-clock.js';
import { describeConnectionError, endpointHost, httpErrorHint, requestUrlForHumans, type RequestFacts } from './model-errors.js';
import type { ModelReply, RateGate, GateTicket, ModelCallOptions, ModelCallConfig, RequestOutcome } from './model-types.js';

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
/** The SDK insists on a key; this stands in when none is configured (the sim, local servers). */
const NO_KEY = 'forkpool-no-key';

/**
 * The client's API key, as a secret to scrub from what the loop hands out: a server may echo
 * the key in an error body, and a tool may read it from somewhere outside its environment.
 */
export function clientSecrets(client: OpenAI): string[] {
  const key = client.apiKey;
  return typeof key === 'string' && key.length >= 4 && key !== NO_KEY ? [key] : [];
}

/**
 * Builds the client from a (cloned) config. Retries are ours, so the SDK's are off. The SDK's
 * `timeout` ends at the response headers: it is the wait for the first byte (`firstByteTimeoutMs`).
 */
export function createModelClient(
  config: Pick<ForkpoolConfig, 'baseUrl' | 'apiKey' | 'requestTimeoutMs'> & Partial<Pick<ForkpoolConfig, 'firstByteTimeoutMs' | 'api'>>,
): OpenAI {
  return new OpenAI({
    // The simulator and many local servers need no key, but the SDK insists on one.
    apiKey: config.apiKey ?? NO_KEY,
    // Always explicit: the SDK would otherwise read OPENAI_BASE_URL from the process environment.
    baseURL: modelBaseUrl(config),
    timeout: config.firstByteTimeoutMs ?? DEFAULTS.firstByteTimeoutMs,
    maxRetries: 0,
    // The SDK would print parse failures to the console; ours become typed retries and events.
    logLevel: 'off',
  });
}

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
  if (config.api === 'responses') return config.stream ? responsesStreamOnce(options) : responsesRequestOnce(options);
  if (config.api === 'anthropic') return anthropicOnce(options, clientSecrets(options.client)[0]);
  const chat = { ...options, params: { ...options.params, messages: chatMessages(options.params.messages) } };
  return config.stream ? streamOnce(chat) : requestOnce(chat);
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
  const apiError = error instanceof OpenAI.APIError ? (error as InstanceType<typeof OpenAI.APIError>) : undefined;
  if (apiError && typeof apiError.status === 'number') {
    const status = apiError.status;
    const excerpt = bodyExcerpt(apiError);
    const reason = `HTTP ${status}${excerpt ? `: ${excerpt}` : ''}${httpErrorHint(status, facts)}`;
    const retryable = RETRYABLE_STATUS.has(status) || status >= 500;
    const retryAfterMs = parseRetryAfter(apiError.headers);
    return retryAfterMs === undefined ? { retryable, reason, status } : { retryable, reason, status, retryAfterMs };
  }
  if (error instanceof TimeoutError) return { retryable: true, reason: error.message };
  if (error instanceof OpenAI.APIConnectionTimeoutError) return { retryable: true, reason: 'request timed out' };
  if (error instanceof OpenAI.APIConnectionError) return { retryable: true, reason: describeConnectionError(error, facts.method, facts.url) };
  // A body that is not JSON, a stream cut short: transport trouble, worth another try.
  const message = error instanceof Error ? error.message : String(error);
  return { retryable: true, reason: `transport error: ${message.slice(0, 200)}` };
}

function bodyExcerpt(error: InstanceType<typeof OpenAI.APIError>): string {
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

/**
 * The SDK's own timer (the client's `timeout`, the same span as our first-byte clock, up to the
 * headers) may fire first on a busy thread: the same timeout, said the same way, whichever won.
 */
function sdkDeadline(error: unknown, client: OpenAI): unknown {
  return error instanceof OpenAI.APIConnectionTimeoutError ? firstByteError(client.timeout) : error;
}

/** The request body's fields both request shapes share: a bounded reply (`max_tokens`), so a local server stops. */
function requestBody(config: ModelCallConfig, params: ModelCallOptions['params']) {
  const reasoning = isReasoningModel(config.model);
  const maxTokens = config.maxTokens ?? DEFAULTS.maxTokens;
  return {
    model: config.model,
    ...temperatureField(config.temperature, reasoning),
    // OpenAI's reasoning models refuse `max_tokens` here and take the newer name (sampling.ts).
    ...(reasoning ? { max_completion_tokens: maxTokens } : { max_tokens: maxTokens }),
    messages: params.messages,
    ...(params.tools?.length ? { tools: params.tools } : {}),
    ...(params.response_format ? { response_format: params.response_format } : {}),
  };
}

async function requestOnce({ client, config, params, signal }: ModelCallOptions): Promise<ModelReply> {
  // The SDK's `timeout` stops at the response headers; the body is read here, under the clock,
  // so a body that stalls after them cannot hang the call.
  const local = linkedAbort(signal);
  const clock = new RequestClock(local.controller, config);
  let response: ChatCompletion;
  let headersAt: number;
  try {
    const raw = await client.chat.completions.create(requestBody(config, params), { signal: local.signal }).asResponse();
    headersAt = performance.now();
    clock.firstByte();
    response = JSON.parse(await raw.text()) as ChatCompletion;
  } catch (error) {
    throw clock.expired ?? sdkDeadline(error, client);
  } finally {
    clock.dispose();
    local.dispose();
  }
  if (!response || typeof response !== 'object' || !Array.isArray(response.choices)) {
    throw new ForkpoolError('MODEL_REQUEST_FAILED', 'response is not a chat completion');
  }
  const choice = response.choices[0];
  const size =
    (choice?.message.content?.length ?? 0) +
    (choice?.message.tool_calls ?? []).reduce((n, c) => n + (c.type === 'function' ? c.function.arguments.length : 0), 0);
  checkResponseSize(size, config);
  const toolCalls = (choice?.message.tool_calls ?? []).filter((c): c is ChatCompletionMessageFunctionToolCall => c.type === 'function');
  return {
    content: choice?.message.content ?? '',
    toolCalls,
    finishReason: choice?.finish_reason ?? null,
    usage: usageFromApi(response.usage),
    model: response.model || config.model,
    headersAt,
  };
}

/**
 * Streams one response under three clocks: the wait for its first byte (`firstByteTimeoutMs`),
 * an idle watchdog that aborts a stream sending nothing for `streamIdleTimeoutMs`, and a
 * deadline that aborts one still going `requestTimeoutMs` after its first byte, however
 * steadily it drips (headers to last byte, as promised).
 */
async function streamOnce({ client, config, params, signal }: ModelCallOptions): Promise<ModelReply> {
  const local = linkedAbort(signal);
  let idleTimer: NodeJS.Timeout | undefined;
  let stalled = false;
  const clock = new RequestClock(local.controller, config);
  // Which clock ended the stream, if one did: the SDK reports either as a bare abort, or not at all.
  const timeout = (): TimeoutError | undefined =>
    stalled ? new TimeoutError('MODEL_STREAM_STALLED', `stream sent nothing for ${config.streamIdleTimeoutMs} ms`, config.streamIdleTimeoutMs) : clock.expired;
  // One timer for the whole stream, pushed back on every chunk with refresh() (no new timer and
  // closure per chunk, which is most of a response's chunks' bookkeeping on this thread).
  const armWatchdog = () => {
    if (idleTimer) return void idleTimer.refresh();
    idleTimer = setTimeout(() => {
      stalled = true;
      local.controller.abort(new TimeoutError('MODEL_STREAM_STALLED', `stream sent nothing for ${config.streamIdleTimeoutMs} ms`, config.streamIdleTimeoutMs));
    }, config.streamIdleTimeoutMs);
  };
  try {
    // The raw response (the SDK has checked its status): its events are read by readEventStream.
    const response = await client.chat.completions
      .create({ ...requestBody(config, params), stream: true, stream_options: { include_usage: true } }, { signal: local.signal })
      .asResponse();
    const headersAt = performance.now();
    clock.firstByte();
    armWatchdog();
    const limit = config.maxResponseChars ?? DEFAULTS.maxResponseChars;
    const reply = new StreamAssembler(config.model, limit);
    if (!response.body) throw new ForkpoolError('MODEL_REQUEST_FAILED', 'streamed response has no body');
    const eventCap = { chars: maxEventChars(limit), error: () => responseTooLarge(limit) };
    await readEventStream(
      response.body,
      response.headers,
      (chunk) => {
        armWatchdog();
        reply.add(chunk as ChatCompletionChunk);
      },
      eventCap,
    );
    // An abort may end a read quietly: check, or a cut-short answer looks whole.
    const timedOut = timeout();
    if (timedOut) throw timedOut;
    if (local.signal.aborted) throw new AbortError(local.signal.reason);
    return { ...reply.finish(), headersAt };
  } catch (error) {
    throw timeout() ?? sdkDeadline(error, client);
  } finally {
    clearTimeout(idleTimer);
    clock.dispose();
    local.dispose();
  }
}

function checkResponseSize(size: number, config: ModelCallConfig): void {
  const limit = config.maxResponseChars ?? DEFAULTS.maxResponseChars;
  if (size > limit) throw responseTooLarge(limit);
}
