/**
 * What the tool loop's history (Chat Completions messages) carries for the other wires. The
 * Responses API's reasoning items must go back with the next request of the same job (a
 * reasoning model otherwise starts its thinking over, and rejects a function call output whose
 * reasoning is missing); Anthropic's `thinking` / `redacted_thinking` blocks likewise, unchanged
 * (their `signature` is checked: the API refuses a tool-use turn that lost them). They ride on the
 * assistant message as `reasoningItems` and `thinkingBlocks`: plain data that survives a thread
 * hop and a suspended job's state, sent only by their own wire, never part of the answer's text.
 */
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';

export const REASONING_FIELD = 'reasoningItems';
export const THINKING_FIELD = 'thinkingBlocks';
const CARRIED = [REASONING_FIELD, THINKING_FIELD] as const;

/** The fields a reply adds to its assistant message in the history (none on most wires). */
export function carriedFields(reply: { reasoningItems?: unknown[] | undefined; thinkingBlocks?: unknown[] | undefined }): {
  reasoningItems?: unknown[];
  thinkingBlocks?: unknown[];
} {
  return {
    ...(reply.reasoningItems && reply.reasoningItems.length > 0 ? { [REASONING_FIELD]: reply.reasoningItems } : {}),
    ...(reply.thinkingBlocks && reply.thinkingBlocks.length > 0 ? { [THINKING_FIELD]: reply.thinkingBlocks } : {}),
  };
}

/** The Anthropic thinking blocks an assistant message carries (see {@link carriedFields}). */
export function carriedThinking(message: ChatCompletionMessageParam): unknown[] {
  const blocks = (message as { thinkingBlocks?: unknown }).thinkingBlocks;
  return Array.isArray(blocks) ? blocks : [];
}

/** The reasoning items an assistant message carries (see {@link carriedFields}). */
export function carriedReasoning(message: ChatCompletionMessageParam): unknown[] {
  const items = (message as { reasoningItems?: unknown }).reasoningItems;
  return Array.isArray(items) ? items : [];
}

/**
 * The messages as a Chat Completions server may see them: without the fields of other wires
 * (a history begun on the Responses or Anthropic wire, forked to an agent on another). A copy only when needed.
 */
export function chatMessages(messages: ChatCompletionMessageParam[]): ChatCompletionMessageParam[] {
  const carries = (m: ChatCompletionMessageParam) => CARRIED.some((field) => field in m);
  if (!messages.some(carries)) return messages;
  return messages.map((m) => {
    if (!carries(m)) return m;
    const {
      [REASONING_FIELD]: _reasoning,
      [THINKING_FIELD]: _thinking,
      ...rest
    } = m as ChatCompletionMessageParam & {
      reasoningItems?: unknown;
      thinkingBlocks?: unknown;
    };
    return rest;
  });
}

/** A message's text: a string, or the text parts of an array (other parts have no text to send). */
export function messageText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((part: unknown) => (part && typeof part === 'object' && typeof (part as { text?: unknown }).text === 'string' ? (part as { text: string }).text : ''))
    .join('');
}
