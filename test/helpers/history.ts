/** Checks on chat-completions histories produced by the tool loop and the parent agent. */
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';

/**
 * Throws unless `messages` is a valid chat-completions history: every assistant `tool_call` is
 * answered by exactly one `tool` message with its id, placed after that assistant message and
 * before the next assistant message, and no `tool` message answers an unknown or old id.
 */
export function assertValidHistory(messages: readonly ChatCompletionMessageParam[]): void {
  let open = new Set<string>();
  messages.forEach((m, i) => {
    if (m.role === 'assistant') {
      if (open.size > 0) throw new Error(`message ${i}: assistant message while tool calls ${[...open].join(', ')} are unanswered`);
      open = new Set((m.tool_calls ?? []).map((c) => c.id));
      if (open.size !== (m.tool_calls ?? []).length) throw new Error(`message ${i}: duplicate tool_call ids`);
    } else if (m.role === 'tool') {
      if (!open.delete(m.tool_call_id)) throw new Error(`message ${i}: tool message for unknown or already answered id ${m.tool_call_id}`);
    } else if (open.size > 0) {
      throw new Error(`message ${i}: ${m.role} message while tool calls ${[...open].join(', ')} are unanswered`);
    }
  });
  if (open.size > 0) throw new Error(`history ends with unanswered tool calls ${[...open].join(', ')}`);
}

/** The `tool` messages of a history, keyed by `tool_call_id`, content as a string. */
export function toolResults(messages: readonly ChatCompletionMessageParam[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const m of messages) {
    if (m.role === 'tool') out.set(m.tool_call_id, typeof m.content === 'string' ? m.content : JSON.stringify(m.content));
  }
  return out;
}
