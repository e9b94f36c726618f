/**
 * What the tool loop's history (Chat Completions messages) carries for the other wires. The
 * Responses API's reasoning items must go back with the next request of the same job (a
 * reasoning model otherwise starts its thinking over, and rejects a function call output whose
 * reasoning is missing); they ride on the assistant message as `reasoningItems`, plain data that
 * survives a thread hop and a suspended job's state, and that no other wire sends.
 */
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';

export const REASONING_FIELD = 'reasoningItems';

/** The fields a reply adds to its assistant message in the history (none on most wires). */
export function carriedFields(reply: { reasoningItems?: unknown[] | undefined }): { reasoningItems?: unknown[] } {
  return reply.reasoningItems && reply.reasoningItems.length > 0 ? { [REASONING_FIELD]: reply.reasoningItems } : {};
}

/** The reasoning items an assistant message carries (see {@link carriedFields}). */
export function carriedReasoning(message: ChatCompletionMessageParam): unknown[] {
  const items = (message as { reasoningItems?: unknown }).reasoningItems;
  return Array.isArray(items) ? items : [];
}

/**
 * The messages as a Chat Completions server may see them: without the fields of other wires
 * (a history begun on the Responses wire, forked to an agent on another). A copy only when needed.
 */
export function chatMessages(messages: ChatCompletionMessageParam[]): ChatCompletionMessageParam[] {
  if (!messages.some((m) => REASONING_FIELD in m)) return messages;
  return messages.map((m) => {
    if (!(REASONING_FIELD in m)) return m;
    const { [REASONING_FIELD]: _dropped, ...rest } = m as ChatCompletionMessageParam & { reasoningItems?: unknown };
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
