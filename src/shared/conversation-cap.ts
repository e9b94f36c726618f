import { redactSecrets } from './tools/secrets.js';

/**
 * An ended job's conversation, kept for `resume_background_agent`, bounded by
 * `background.keepConversationChars` (measured as JSON). A conversation over the cap is cut
 * like this: its head (the system prompt and the first user message: who it is and what it was
 * asked) stays, then one user note saying how many messages were cut, then the newest messages
 * that fit. The kept tail never starts with a `tool` message (a tool result whose call was cut
 * off is refused by the model API). When even the head and the note do not fit, nothing is
 * kept (undefined), and a resume of that job is refused.
 */
export function capConversation(messages: readonly unknown[], maxChars: number): unknown[] | undefined {
  if (maxChars <= 0 || messages.length === 0) return undefined;
  const sizes = messages.map((message) => JSON.stringify(message)?.length ?? 0);
  // +2 for the brackets, +1 per comma: the length of JSON.stringify(messages).
  const total = sizes.reduce((sum, size) => sum + size + 1, 1);
  if (total <= maxChars) return [...messages];
  const headLength = headOf(messages);
  let used = 1 + sizes.slice(0, headLength).reduce((sum, size) => sum + size + 1, 0) + JSON.stringify(cutNote(messages.length)).length + 1;
  if (used > maxChars) return undefined;
  let start = messages.length;
  while (start > headLength && used + (sizes[start - 1] as number) + 1 <= maxChars) {
    start--;
    used += (sizes[start] as number) + 1;
  }
  while (start < messages.length && roleOf(messages[start]) === 'tool') start++;
  return [...messages.slice(0, headLength), cutNote(start - headLength), ...messages.slice(start)];
}

/** The system prompt (if first) and the first user message after it. */
function headOf(messages: readonly unknown[]): number {
  let at = roleOf(messages[0]) === 'system' ? 1 : 0;
  if (roleOf(messages[at]) === 'user') at++;
  return at;
}

function cutNote(cut: number): { role: 'user'; content: string } {
  return { role: 'user', content: `[forkpool: ${cut} earlier messages of this conversation were cut to fit background.keepConversationChars]` };
}

function roleOf(message: unknown): unknown {
  return (message as { role?: unknown } | null | undefined)?.role;
}

/** Every string in a conversation with the configured secrets redacted, as the ledger's other text is. */
export function redactConversation(messages: readonly unknown[], secrets: readonly string[]): unknown[] {
  if (secrets.length === 0) return [...messages];
  const walk = (value: unknown): unknown => {
    if (typeof value === 'string') return redactSecrets(value, secrets);
    if (Array.isArray(value)) return value.map(walk);
    if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, walk(inner)]));
    return value;
  };
  return messages.map(walk);
}
