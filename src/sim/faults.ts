/**
 * Fault selection and the reply-level faults. Transport-level faults (HTTP errors, broken
 * bodies, hangs, stalls) are carried out by the server; here they are only chosen.
 */
import type { Rng } from './rng.js';
import { toolCall, type SimReply } from './reply.js';
import type { FaultKind, FaultSpec } from './types.js';

/** Faults that change what the model says, not how it is delivered. */
export const REPLY_FAULTS: ReadonlySet<FaultKind> = new Set(['malformed_tool_args', 'unknown_tool', 'endless_tool_calls', 'length']);

export const HTTP_ERROR_STATUS: Partial<Record<FaultKind, number>> = { '401': 401, '404': 404, '429': 429, '500': 500, '502': 502, '503': 503 };

/** A random fault with probability `rate`, drawn from `kinds` with the request's generator. */
export function randomFault(rng: Rng, rate: number, kinds: readonly FaultKind[]): FaultSpec | undefined {
  if (rate <= 0 || kinds.length === 0) return undefined;
  // Always draw twice, so whether the fault hits does not shift the rest of the sequence.
  const hit = rng() < rate;
  const pick = kinds[Math.floor(rng() * kinds.length)];
  return hit && pick ? { kind: pick } : undefined;
}

/**
 * Applies a reply-level fault. `malformed_tool_args` corrupts the first tool call of the reply
 * (or makes a read_file call with a cut-off argument string); `unknown_tool` calls
 * `no_such_tool`; `endless_tool_calls` is built by the caller (it needs the conversation).
 */
export function applyReplyFault(kind: FaultKind, reply: SimReply, n: number): SimReply {
  if (kind === 'malformed_tool_args') {
    const [first, ...rest] = reply.toolCalls;
    if (!first) return { content: null, toolCalls: [toolCall(n, 0, 'read_file', '{"path": "src/')] };
    return { ...reply, toolCalls: [{ ...first, arguments: corrupt(first.arguments) }, ...rest] };
  }
  if (kind === 'unknown_tool') {
    return { content: null, toolCalls: [toolCall(n, 0, 'no_such_tool', { query: 'anything' })] };
  }
  if (kind === 'length') {
    // What a server sends when max_tokens ran out mid-answer: the head of it, and no tool calls.
    const text = reply.content ?? '';
    return { content: text.slice(0, Math.max(1, Math.ceil(text.length / 2))), toolCalls: [], finishReason: 'length' };
  }
  return reply;
}

/** A prefix of the JSON that no JSON parser accepts. */
function corrupt(args: string): string {
  const cut = args.slice(0, Math.max(1, Math.ceil(args.length / 2)));
  try {
    JSON.parse(cut);
  } catch {
    return cut;
  }
  return '{"path": "src/';
}

/** OpenAI-style error body. */
export function errorBody(status: number, message: string, type: string, code: string | null): string {
  return JSON.stringify({ error: { message, type, param: null, code } });
}

export function faultErrorBody(kind: FaultKind, n: number, model: string): string {
  switch (kind) {
    case '401':
      return errorBody(401, `Incorrect API key provided (simulated fault at request ${n}).`, 'invalid_request_error', 'invalid_api_key');
    case '404':
      return errorBody(404, `The model \`${model}\` does not exist or you do not have access to it.`, 'invalid_request_error', 'model_not_found');
    case '429':
      return errorBody(429, `Rate limit reached (simulated fault at request ${n}).`, 'rate_limit_error', 'rate_limit_exceeded');
    case '502':
      return errorBody(502, `Bad gateway (simulated fault at request ${n}).`, 'server_error', 'bad_gateway');
    case '503':
      return errorBody(503, `The server is overloaded (simulated fault at request ${n}).`, 'server_error', 'service_unavailable');
    default:
      return errorBody(500, `Internal server error (simulated fault at request ${n}).`, 'server_error', 'internal_error');
  }
}
