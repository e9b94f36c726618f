/**
 * The OpenAI Responses wire (`POST /v1/responses`) through the `openai` client: the tool loop's
 * Chat Completions history is translated here, per request, and the answer back into a
 * {@link ModelReply}. Stateless (`store: false`): each request sends the whole history, with the
 * reasoning items of earlier turns (encrypted, carried on the assistant messages: history.ts).
 * Retries, gates and connection slots are model-call.ts's, around one attempt of this.
 */
import OpenAI from 'openai';
import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
import type { FunctionTool, Response, ResponseInputItem, ResponseUsage } from 'openai/resources/responses/responses';
import { DEFAULTS } from '../defaults.js';
import { ForkpoolError } from '../errors.js';
import { responseTooLarge } from '../stream-assembler.js';
import type { Usage } from '../usage.js';
import type { ModelCallOptions, ModelReply } from '../model-types.js';
import { AttemptClocks, deadlineError } from './clocks.js';
import { carriedReasoning, messageText } from './history.js';
import { isReasoningModel, temperatureField } from './sampling.js';
import { isSdkClient, type ModelClient } from '../model-client.js';

/** The history as Responses input items: messages, function calls and their outputs, reasoning. */
export function responsesInput(messages: readonly ChatCompletionMessageParam[]): ResponseInputItem[] {
  const input: ResponseInputItem[] = [];
  for (const message of messages) {
    if (message.role === 'tool') {
      input.push({ type: 'function_call_output', call_id: message.tool_call_id, output: messageText(message.content) });
    } else if (message.role === 'assistant') {
      // Reasoning first: it came before the text and calls it led to, and must precede them.
      for (const item of carriedReasoning(message)) input.push(item as ResponseInputItem);
      const text = messageText(message.content);
      if (text) input.push({ role: 'assistant', content: text });
      for (const call of message.tool_calls ?? []) {
        if (call.type === 'function') input.push({ type: 'function_call', call_id: call.id, name: call.function.name, arguments: call.function.arguments });
      }
    } else if (message.role === 'system' || message.role === 'developer' || message.role === 'user') {
      input.push({ role: message.role, content: messageText(message.content) });
    }
  }
  return input;
}

export function responsesTools(tools: readonly ChatCompletionTool[] | undefined): FunctionTool[] {
  return (tools ?? []).flatMap((tool) =>
    tool.type === 'function'
      ? [
          {
            type: 'function' as const,
            name: tool.function.name,
            description: tool.function.description ?? null,
            parameters: tool.function.parameters ?? null,
            strict: false,
          },
        ]
      : [],
  );
}

function requestBody({ config, params }: ModelCallOptions) {
  const tools = responsesTools(params.tools);
  const maxTokens = (config as { maxTokens?: number }).maxTokens;
  return {
    model: config.model,
    ...temperatureField(config.temperature, isReasoningModel(config.model)),
    input: responsesInput(params.messages),
    ...(tools.length > 0 ? { tools } : {}),
    ...(maxTokens !== undefined ? { max_output_tokens: maxTokens } : {}),
    // Nothing kept at the provider: the reasoning comes back encrypted, for the next request.
    store: false,
    include: ['reasoning.encrypted_content' as const],
  };
}

function usageOf(raw: ResponseUsage | null | undefined): Usage {
  const prompt = raw?.input_tokens ?? 0;
  const completion = raw?.output_tokens ?? 0;
  const cached = raw?.input_tokens_details?.cached_tokens;
  return {
    promptTokens: prompt,
    completionTokens: completion,
    totalTokens: raw?.total_tokens ?? prompt + completion,
    requests: 1,
    ...(cached ? { cachedTokens: cached } : {}),
  };
}

/** A finished (or incomplete) response as a reply; `limit` caps text plus arguments. */
export function replyFromResponse(response: Response, fallbackModel: string, limit: number): ModelReply {
  if (response.status === 'failed' || response.error) {
    throw new ForkpoolError('MODEL_REQUEST_FAILED', `response failed: ${response.error?.code ?? 'error'}: ${response.error?.message ?? 'no message'}`);
  }
  let content = '';
  const toolCalls: ModelReply['toolCalls'] = [];
  const reasoningItems: unknown[] = [];
  for (const item of response.output ?? []) {
    if (item.type === 'message') {
      for (const part of item.content) if (part.type === 'output_text') content += part.text;
    } else if (item.type === 'function_call') {
      toolCalls.push({ id: item.call_id, type: 'function', function: { name: item.name, arguments: item.arguments } });
    } else if (item.type === 'reasoning') {
      reasoningItems.push(item);
    }
  }
  const size = content.length + toolCalls.reduce((n, c) => n + c.function.arguments.length, 0);
  if (size > limit) throw responseTooLarge(limit);
  return {
    content,
    toolCalls,
    finishReason: finishReasonOf(response, toolCalls.length > 0),
    usage: usageOf(response.usage),
    model: response.model || fallbackModel,
    ...(reasoningItems.length > 0 ? { reasoningItems } : {}),
  };
}

/** Chat Completions' words for how a response ended (the loop and its callers read those). */
function finishReasonOf(response: Response, calledTools: boolean): string {
  if (response.status === 'incomplete') {
    const reason = response.incomplete_details?.reason;
    return reason === 'max_output_tokens' ? 'length' : reason === 'content_filter' ? 'content_filter' : 'length';
  }
  return calledTools ? 'tool_calls' : 'stop';
}

/** The SDK's own timer is the same deadline, said the same way (see wires/chat.ts sdkDeadline). */
function sameDeadline(error: unknown, client: ModelClient): unknown {
  return error instanceof OpenAI.APIConnectionTimeoutError ? deadlineError(client.timeout) : error;
}

/** The `openai` clients built for forkpool's own clients (model-client.ts), one each. */
const sdks = new WeakMap<ModelClient, OpenAI>();

/** The client that sends a Responses request: the caller's own, or one built once from forkpool's. */
function sdkFor(client: ModelClient): OpenAI {
  if (isSdkClient(client)) return client;
  let sdk = sdks.get(client);
  if (!sdk) {
    // Retries are ours (model-call.ts); parse failures become typed retries, not console lines.
    sdk = new OpenAI({ apiKey: client.apiKey, baseURL: client.baseURL, timeout: client.timeout, maxRetries: 0, logLevel: 'off' });
    sdks.set(client, sdk);
  }
  return sdk;
}

export async function responsesRequestOnce(options: ModelCallOptions): Promise<ModelReply> {
  const { client, config } = options;
  const clocks = new AttemptClocks(options.signal, config);
  const limit = config.maxResponseChars ?? DEFAULTS.maxResponseChars;
  try {
    const response = await sdkFor(client).responses.create(requestBody(options), { signal: clocks.signal });
    if (!response || typeof response !== 'object' || !Array.isArray(response.output)) {
      throw new ForkpoolError('MODEL_REQUEST_FAILED', 'response is not a Responses API response');
    }
    return replyFromResponse(response, config.model, limit);
  } catch (error) {
    throw clocks.timeout() ?? sameDeadline(error, client);
  } finally {
    clocks.dispose();
  }
}

export async function responsesStreamOnce(options: ModelCallOptions): Promise<ModelReply> {
  const { client, config } = options;
  const clocks = new AttemptClocks(options.signal, config);
  const limit = config.maxResponseChars ?? DEFAULTS.maxResponseChars;
  try {
    const response = await sdkFor(client)
      .responses.create({ ...requestBody(options), stream: true }, { signal: clocks.signal })
      .asResponse();
    const headersAt = performance.now();
    const stream = new ResponsesStream(limit);
    await clocks.readStream(response, limit, (event) => stream.add(event as StreamEvent));
    return { ...replyFromResponse(stream.finish(), config.model, limit), headersAt };
  } catch (error) {
    throw clocks.timeout() ?? sameDeadline(error, client);
  } finally {
    clocks.dispose();
  }
}

type StreamEvent = { type?: string; delta?: unknown; response?: Response };

/**
 * A streamed response: the deltas are only counted against the cap (a runaway answer stops as
 * it arrives); the answer itself is the final event's whole response, which carries every
 * output item, reasoning included.
 */
class ResponsesStream {
  #size = 0;
  readonly #limit: number;
  #final: Response | undefined;

  constructor(limit: number) {
    this.#limit = limit;
  }

  add(event: StreamEvent): void {
    if (event.type === 'response.output_text.delta' || event.type === 'response.function_call_arguments.delta') {
      this.#size += typeof event.delta === 'string' ? event.delta.length : 0;
      if (this.#size > this.#limit) throw responseTooLarge(this.#limit);
    } else if (event.type === 'response.completed' || event.type === 'response.incomplete' || event.type === 'response.failed') {
      if (event.response) this.#final = event.response;
    }
  }

  finish(): Response {
    // No closing event: the stream was cut off; retry it rather than trust it.
    if (!this.#final) throw new ForkpoolError('MODEL_REQUEST_FAILED', 'stream ended without response.completed (cut off)');
    return this.#final;
  }
}
