/**
 * How the endpoint counts, learned from what it reports. token-estimate.ts guesses a request's
 * tokens from its text; every reply's `usage.prompt_tokens` says what the endpoint's own
 * tokenizer made of the same request. The ratio of the two, per model, corrects later estimates
 * (the parent's history against `parentHistoryMaxTokens`), so a tokenizer that packs fewer
 * characters into a token than the estimate assumes no longer overruns a small context.
 */
import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
import { estimateJsonTokens, estimateTokens } from './token-estimate.js';

/** A request this small is mostly framing the estimate does not see: its ratio says little. */
const MIN_ESTIMATE = 32;
/** The bounds of a learned ratio: past them the reported usage is not a count of this request (a cached or made-up figure). */
const MIN_RATIO = 0.25;
const MAX_RATIO = 4;
/** Each observation moves the ratio this share of the way: a few requests settle it, one odd reply does not swing it. */
const WEIGHT = 0.5;

/**
 * The estimated tokens of a chat history, by text kind (token-estimate.ts), plus a little per
 * message and per call for its framing.
 */
export function estimateMessagesTokens(messages: readonly ChatCompletionMessageParam[]): number {
  let tokens = 0;
  for (const message of messages) {
    tokens += 4;
    const content = message.content;
    if (typeof content === 'string') tokens += estimateTokens(content);
    else if (Array.isArray(content)) tokens += estimateTokens(JSON.stringify(content));
    if (message.role === 'assistant') {
      for (const call of message.tool_calls ?? [])
        if (call.type === 'function') tokens += estimateTokens(call.function.name) + estimateTokens(call.function.arguments) + 6;
    }
  }
  return tokens;
}

/** The estimated prompt tokens of one request: its messages and its tool schemas. */
export function estimateRequestTokens(messages: readonly ChatCompletionMessageParam[], tools: readonly ChatCompletionTool[]): number {
  return estimateMessagesTokens(messages) + (tools.length ? estimateJsonTokens(tools) : 0);
}

/** Reported ÷ estimated prompt tokens, per model (1 until a model has reported usage). */
export class TokenRatios {
  readonly #byModel = new Map<string, number>();

  /** One request's estimate against the endpoint's `prompt_tokens` for it; ignored when either is too small to say anything. */
  observe(model: string, estimated: number, reported: number): void {
    if (!(estimated >= MIN_ESTIMATE) || !(reported > 0) || !Number.isFinite(reported)) return;
    const seen = Math.min(MAX_RATIO, Math.max(MIN_RATIO, reported / estimated));
    const before = this.#byModel.get(model);
    this.#byModel.set(model, before === undefined ? seen : before + WEIGHT * (seen - before));
  }

  ratio(model: string): number {
    return this.#byModel.get(model) ?? 1;
  }

  /** An estimate in the endpoint's own count, as far as it has been learned. */
  scale(model: string, estimate: number): number {
    return Math.ceil(estimate * this.ratio(model));
  }
}
