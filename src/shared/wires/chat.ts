/**
 * The Chat Completions wire (`POST {baseUrl}/chat/completions`), streamed or not. With the
 * client forkpool builds the request goes out with `node:http` (wires/http.ts), with the headers the
 * `openai` client sent; a caller's own `openai` client sends it itself. Either way the raw
 * response is read here, under the request's clocks. Retries, gates and connection slots are
 * model-call.ts's, around one attempt of this.
 */
import type { ChatCompletion, ChatCompletionChunk, ChatCompletionCreateParams, ChatCompletionMessageFunctionToolCall } from 'openai/resources/chat/completions';
import { APIConnectionTimeoutError } from 'openai/error';
import { AbortError, ForkpoolError, TimeoutError } from '../errors.js';
import { usageFromApi } from '../usage.js';
import { linkedAbort } from '../abort.js';
import { DEFAULTS } from '../defaults.js';
import { readEventStream } from '../sse-reader.js';
import { StreamAssembler, maxEventChars, responseTooLarge } from '../stream-assembler.js';
import { RequestClock, firstByteError } from '../request-clock.js';
import { isSdkClient, type ModelClient } from '../model-client.js';
import type { ModelReply, ModelCallOptions, ModelCallConfig } from '../model-types.js';
import { chatMessages } from './history.js';
import { isReasoningModel, temperatureField } from './sampling.js';
import { postJson, statusError, type HttpReply } from './http.js';

/** One attempt on the Chat Completions wire. */
export function chatOnce(options: ModelCallOptions): Promise<ModelReply> {
  const chat = { ...options, params: { ...options.params, messages: chatMessages(options.params.messages) } };
  return options.config.stream ? streamOnce(chat) : requestOnce(chat);
}

/**
 * Sends the request; the response once its headers came. A non-2xx is the `openai` client's
 * error for its status, as that client raises it.
 */
async function send(client: ModelClient, body: ChatCompletionCreateParams, signal: AbortSignal): Promise<HttpReply> {
  if (isSdkClient(client)) return client.chat.completions.create(body, { signal }).asResponse();
  const response = await postJson(`${client.baseURL.replace(/\/+$/, '')}/chat/completions`, { accept: 'application/json', ...client.headers }, body, signal);
  if (!response.ok) throw await statusError(response);
  return response;
}

/**
 * The request's clocks: the wait for its headers is the shorter of `firstByteTimeoutMs` and
 * the client's `timeout` (the same span; a client built apart from the config may differ).
 */
function requestClock(local: AbortController, client: ModelClient, config: ModelCallConfig): RequestClock {
  const firstByteTimeoutMs = Math.min(config.firstByteTimeoutMs ?? DEFAULTS.firstByteTimeoutMs, client.timeout);
  return new RequestClock(local, { requestTimeoutMs: config.requestTimeoutMs, firstByteTimeoutMs });
}

/**
 * The SDK's own timer (the client's `timeout`, the same span as our first-byte clock, up to the
 * headers) may fire first on a busy thread: the same timeout, said the same way, whichever won.
 */
function sdkDeadline(error: unknown, client: ModelClient): unknown {
  return error instanceof APIConnectionTimeoutError ? firstByteError(client.timeout) : error;
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
  // The first-byte clock stops at the response headers; the body is read here, under the
  // deadline, so a body that stalls after them cannot hang the call.
  const local = linkedAbort(signal);
  const clock = requestClock(local.controller, client, config);
  let response: ChatCompletion;
  let headersAt: number;
  try {
    const raw = await send(client, requestBody(config, params), local.signal);
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
  const clock = requestClock(local.controller, client, config);
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
    // The raw response (its status checked by send): its events are read by readEventStream.
    const response = await send(client, { ...requestBody(config, params), stream: true, stream_options: { include_usage: true } }, local.signal);
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
