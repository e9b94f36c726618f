/**
 * The Anthropic Messages wire (`POST {baseUrl}/messages`), spoken with `fetch` and the SSE reader
 * every wire shares: one request shape and six event types do not need `@anthropic-ai/sdk`, a
 * package of several MB that every worker thread would load (docs/configuration.md "Providers").
 * Errors are raised as the `openai` client's error classes, so model-call.ts classifies and
 * retries them as it does for the other wires (429/5xx, Retry-After, transport failures).
 */
import { APIError } from 'openai/error';
import { DEFAULTS } from '../defaults.js';
import { ForkpoolError } from '../errors.js';
import { responseTooLarge } from '../stream-assembler.js';
import type { ModelCallOptions, ModelReply } from '../model-types.js';
import { AttemptClocks } from './clocks.js';
import { anthropicRequest, anthropicUsage, finishReasonOf, replyFromMessage, type AnthropicUsage, type ThinkingBlock } from './anthropic-messages.js';
import { temperatureField } from './sampling.js';
import { asHeaders, postJson, type HttpReply } from './http.js';

/** The API version every request names (the Messages API's stable one). */
export const ANTHROPIC_VERSION = '2023-06-01';

/**
 * One attempt on the Messages wire, streamed or not as `config.stream` says. `apiKey`: sent as
 * `x-api-key` (undefined: no key, as for the simulator or a local proxy).
 */
export async function anthropicOnce(options: ModelCallOptions, apiKey: string | undefined): Promise<ModelReply> {
  const { client, config, params } = options;
  const clocks = new AttemptClocks(options.signal, config);
  const limit = config.maxResponseChars ?? DEFAULTS.maxResponseChars;
  const maxTokens = (config as { maxTokens?: number }).maxTokens ?? DEFAULTS.anthropicMaxTokens;
  const budget = config.thinking?.budgetTokens;
  if (budget !== undefined && budget >= maxTokens) {
    // Said here, not by a 400 after a round trip: the fields to change are ours.
    throw new ForkpoolError(
      'CONFIG_INVALID',
      `thinking.budgetTokens (${budget}) must be below maxTokens (${maxTokens}) for model ${config.model}: raise maxTokens or lower the budget`,
    );
  }
  const body = {
    model: config.model,
    max_tokens: maxTokens,
    // Thinking takes no temperature but the API's own (1): an unset one is left out.
    ...temperatureField(config.temperature, budget !== undefined),
    ...(budget !== undefined ? { thinking: { type: 'enabled', budget_tokens: budget } } : {}),
    ...anthropicRequest(params.messages, params.tools),
    ...(config.stream ? { stream: true } : {}),
  };
  try {
    const response = await send(`${client.baseURL.replace(/\/+$/, '')}/messages`, apiKey, body, clocks.signal);
    const headersAt = performance.now();
    if (!response.ok) throw await httpError(response);
    if (!config.stream) {
      const message = parseJson(await response.text()) as Parameters<typeof replyFromMessage>[0];
      if (!message || typeof message !== 'object' || !Array.isArray(message.content)) {
        throw new ForkpoolError('MODEL_REQUEST_FAILED', 'response is not an Anthropic message');
      }
      const reply = replyFromMessage(message, config.model);
      if (replySize(reply) > limit) throw responseTooLarge(limit);
      return { ...reply, headersAt };
    }
    const stream = new MessageStream(config.model, limit);
    await clocks.readStream(response, limit, (event) => stream.add(event as StreamEvent));
    return { ...stream.finish(), headersAt };
  } catch (error) {
    throw clocks.timeout() ?? error;
  } finally {
    clocks.dispose();
  }
}

function send(url: string, apiKey: string | undefined, body: unknown, signal: AbortSignal): Promise<HttpReply> {
  const headers = { 'anthropic-version': ANTHROPIC_VERSION, ...(apiKey !== undefined ? { 'x-api-key': apiKey } : {}) };
  return postJson(url, headers, body, signal);
}

/** A non-2xx answer as the client's typed error (status, body's `error`, headers for Retry-After). */
async function httpError(response: HttpReply): Promise<Error> {
  const text = await response.text().catch(() => '');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = text ? { error: { message: text.slice(0, 500) } } : undefined;
  }
  return APIError.generate(response.status, parsed as object | undefined, undefined, asHeaders(response.headers));
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    // A transport error (retried), as a cut or garbled body is on the other wires.
    throw new SyntaxError('Error reading response: the body is not JSON.');
  }
}

function replySize(reply: ModelReply): number {
  const thinking = JSON.stringify(reply.thinkingBlocks ?? []).length;
  return reply.content.length + thinking + reply.toolCalls.reduce((n, c) => n + c.function.arguments.length, 0);
}

type StreamEvent = {
  type?: string;
  index?: number;
  message?: { model?: string; usage?: AnthropicUsage };
  content_block?: { type?: string; id?: string; name?: string; text?: string; thinking?: string; signature?: string; data?: string };
  delta?: { type?: string; text?: string; partial_json?: string; thinking?: string; signature?: string; stop_reason?: string | null };
  usage?: AnthropicUsage;
};

/** A streamed message put back together event by event, counted against the cap as it arrives. */
class MessageStream {
  #model: string;
  readonly #limit: number;
  #size = 0;
  #text = '';
  #calls = new Map<number, { id: string; name: string; json: string }>();
  /** Thinking blocks by index, assembled from their deltas; kept apart from the text, never shown as the answer. */
  #thinking = new Map<number, ThinkingBlock>();
  #usage: AnthropicUsage = {};
  #stopReason: string | null = null;
  #stopped = false;

  constructor(model: string, limit: number) {
    this.#model = model;
    this.#limit = limit;
  }

  add(event: StreamEvent): void {
    switch (event.type) {
      case 'message_start':
        if (event.message?.model) this.#model = event.message.model;
        this.#usage = { ...event.message?.usage };
        return;
      case 'content_block_start':
        if (event.content_block?.type === 'tool_use' && event.index !== undefined) {
          this.#calls.set(event.index, { id: event.content_block.id ?? '', name: event.content_block.name ?? '', json: '' });
        } else if (event.content_block?.type === 'text' && event.content_block.text) this.#addText(event.content_block.text);
        else if (event.content_block?.type === 'thinking' && event.index !== undefined) {
          const { thinking = '', signature = '' } = event.content_block;
          this.#thinking.set(event.index, { type: 'thinking', thinking, signature });
          this.#grow(thinking.length + signature.length);
        } else if (event.content_block?.type === 'redacted_thinking' && event.index !== undefined) {
          const data = event.content_block.data ?? '';
          this.#thinking.set(event.index, { type: 'redacted_thinking', data });
          this.#grow(data.length);
        }
        return;
      case 'content_block_delta':
        if (event.delta?.type === 'text_delta' && event.delta.text) this.#addText(event.delta.text);
        else if ((event.delta?.type === 'thinking_delta' || event.delta?.type === 'signature_delta') && event.index !== undefined) {
          this.#addThinking(event.index, event.delta.thinking ?? '', event.delta.signature ?? '');
        } else if (event.delta?.type === 'input_json_delta' && event.index !== undefined) {
          const call = this.#calls.get(event.index);
          if (call && event.delta.partial_json) {
            call.json += event.delta.partial_json;
            this.#grow(event.delta.partial_json.length);
          }
        }
        return;
      case 'message_delta':
        if (event.delta?.stop_reason) this.#stopReason = event.delta.stop_reason;
        // Its usage is cumulative: output tokens so far, input ones again on some servers.
        this.#usage = { ...this.#usage, ...definedOnly(event.usage) };
        return;
      case 'message_stop':
        this.#stopped = true;
        return;
      default:
        // ping, content_block_stop: nothing to keep.
        return;
    }
  }

  finish(): ModelReply {
    // No message_stop or no stop_reason: the stream was cut off; retry it rather than trust it.
    if (!this.#stopped || this.#stopReason === null) throw new ForkpoolError('MODEL_REQUEST_FAILED', 'stream ended without message_stop (cut off)');
    const toolCalls = [...this.#calls.entries()]
      .sort(([a], [b]) => a - b)
      .map(([index, c]) => ({ id: c.id || `toolu_${index}`, type: 'function' as const, function: { name: c.name, arguments: c.json || '{}' } }));
    const thinkingBlocks = [...this.#thinking.entries()].sort(([a], [b]) => a - b).map(([, block]) => block);
    return {
      content: this.#text,
      toolCalls,
      finishReason: finishReasonOf(this.#stopReason),
      usage: anthropicUsage(this.#usage),
      model: this.#model,
      ...(thinkingBlocks.length > 0 ? { thinkingBlocks } : {}),
    };
  }

  /** A thinking delta (its text) or a signature delta (the whole signature, sent once at its end). */
  #addThinking(index: number, thinking: string, signature: string): void {
    const block = this.#thinking.get(index);
    if (block?.type !== 'thinking') return;
    block.thinking += thinking;
    block.signature += signature;
    this.#grow(thinking.length + signature.length);
  }

  #addText(text: string): void {
    this.#text += text;
    this.#grow(text.length);
  }

  #grow(chars: number): void {
    this.#size += chars;
    // Thrown inside the read: leaving it cancels the body, so the rest is never read.
    if (this.#size > this.#limit) throw responseTooLarge(this.#limit);
  }
}

function definedOnly(usage: AnthropicUsage | undefined): AnthropicUsage {
  return Object.fromEntries(Object.entries(usage ?? {}).filter(([, v]) => v !== undefined && v !== null));
}
