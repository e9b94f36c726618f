/**
 * A `tools/call` answer as the text a model reads: capped to `maxChars` (head and tail) first,
 * so a 10 MB answer costs one cut, then redacted of the server's secrets. Pure functions.
 */
import { capHeadTail } from '../../../shared/text-budget.js';
import { redactToolOutput } from '../../../shared/tools/secrets.js';

/** The parts of a CallToolResult the hub reads. */
export interface CallAnswer {
  content?: readonly unknown[] | undefined;
  structuredContent?: unknown;
  isError?: boolean | undefined;
}

/** The answer's text: each content block on its own, non-text blocks as a one-line stand-in. */
export function answerText(answer: CallAnswer, maxChars: number, secrets: readonly string[]): string {
  const parts: string[] = [];
  let length = 0;
  for (const block of answer.content ?? []) {
    // Stop reading once past the cap: the rest would be cut anyway.
    if (length > maxChars * 2) {
      parts.push('[more content blocks omitted]');
      break;
    }
    const part = blockText(block);
    parts.push(part);
    length += part.length;
  }
  if (parts.length === 0 && answer.structuredContent !== undefined) parts.push(JSON.stringify(answer.structuredContent) ?? '');
  return redactToolOutput(capHeadTail(parts.join('\n'), maxChars), secrets);
}

/** A field the server sent as text, or `fallback` (an object is not shown as "[object Object]"). */
const str = (value: unknown, fallback = ''): string => (typeof value === 'string' || typeof value === 'number' ? String(value) : fallback);

function blockText(block: unknown): string {
  if (typeof block !== 'object' || block === null) return String(block);
  const b = block as { type?: unknown; text?: unknown; mimeType?: unknown; data?: unknown; uri?: unknown; resource?: unknown };
  switch (b.type) {
    case 'text':
      return str(b.text);
    case 'image':
    case 'audio':
      return `[${b.type}: ${str(b.mimeType, 'unknown type')}, ${typeof b.data === 'string' ? Math.floor((b.data.length * 3) / 4) : 0} bytes, not shown]`;
    case 'resource_link':
      return `[resource link: ${str(b.uri)}]`;
    case 'resource': {
      const resource = (b.resource ?? {}) as { uri?: unknown; text?: unknown; mimeType?: unknown };
      if (typeof resource.text === 'string') return `[resource ${str(resource.uri)}]\n${resource.text}`;
      return `[resource ${str(resource.uri)}: ${str(resource.mimeType, 'binary')}, not shown]`;
    }
    default:
      return `[${str(b.type, 'unknown')} block, not shown]`;
  }
}
