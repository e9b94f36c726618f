/**
 * The simulator's internal answer shape and the helpers that read a request's messages.
 * Pure: no I/O, no clock.
 */

export interface SimToolCall {
  id: string;
  name: string;
  /** Sent verbatim; may be invalid JSON on purpose. */
  arguments: string;
}

export interface SimReply {
  content: string | null;
  toolCalls: SimToolCall[];
  usage?: { prompt_tokens: number; completion_tokens: number };
  /** `length`: cut at the token limit (a script step's `finishReason`, the 'length' fault). */
  finishReason?: 'length';
}

/** A chat message as received: loosely typed, because any client may send it. */
export interface WireMessage {
  role?: unknown;
  content?: unknown;
  tool_calls?: unknown;
  tool_call_id?: unknown;
  name?: unknown;
}

export interface WireToolCall {
  id: string;
  name: string;
  arguments: string;
}

/** Deterministic token estimate: ceil(chars / 4). */
export function estimateTokens(chars: number): number {
  return Math.ceil(chars / 4);
}

/** The text of a message's content: a string, or the text parts of an array. */
export function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((part: unknown) => {
        if (typeof part === 'string') return part;
        if (part && typeof part === 'object' && typeof (part as { text?: unknown }).text === 'string') return (part as { text: string }).text;
        return '';
      })
      .join('\n');
  }
  return '';
}

export function toolCallsOf(message: WireMessage | undefined): WireToolCall[] {
  if (!message || !Array.isArray(message.tool_calls)) return [];
  const out: WireToolCall[] = [];
  for (const raw of message.tool_calls as unknown[]) {
    if (!raw || typeof raw !== 'object') continue;
    const call = raw as { id?: unknown; function?: { name?: unknown; arguments?: unknown } };
    out.push({
      id: typeof call.id === 'string' ? call.id : '',
      name: typeof call.function?.name === 'string' ? call.function.name : '',
      arguments: typeof call.function?.arguments === 'string' ? call.function.arguments : '',
    });
  }
  return out;
}

export function messagesOf(body: unknown): WireMessage[] {
  const messages = (body as { messages?: unknown } | null)?.messages;
  return Array.isArray(messages) ? messages.filter((m): m is WireMessage => !!m && typeof m === 'object') : [];
}

/** Names of the function tools offered in the request. */
export function toolNamesOf(body: unknown): Set<string> {
  const tools = (body as { tools?: unknown } | null)?.tools;
  const names = new Set<string>();
  if (!Array.isArray(tools)) return names;
  for (const t of tools as unknown[]) {
    const fn = (t as { function?: { name?: unknown }; name?: unknown } | null) ?? {};
    const name = fn.function?.name ?? fn.name;
    if (typeof name === 'string') names.add(name);
  }
  return names;
}

/** Prompt-size estimate over every message's text and tool calls. */
export function promptTokens(body: unknown): number {
  let chars = 0;
  for (const m of messagesOf(body)) {
    chars += textOf(m.content).length;
    for (const c of toolCallsOf(m)) chars += c.name.length + c.arguments.length;
  }
  return estimateTokens(chars);
}

export function completionTokens(reply: SimReply): number {
  let chars = reply.content?.length ?? 0;
  for (const c of reply.toolCalls) chars += c.name.length + c.arguments.length;
  return estimateTokens(chars);
}

export function toolCall(n: number, index: number, name: string, args: string | Record<string, unknown>, id?: string): SimToolCall {
  return { id: id ?? `call_${n}_${index}`, name, arguments: typeof args === 'string' ? args : JSON.stringify(args) };
}
