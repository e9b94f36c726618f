/**
 * OpenAI wire shapes: a `chat.completion` body and the `chat.completion.chunk` sequence of a
 * stream. Pure and deterministic (a fixed `created` stamp), so equal requests give equal bytes.
 */
import type { SimReply } from './reply.js';

/** Fixed `created` stamp: responses must not depend on the clock. */
export const SIM_CREATED = 1_700_000_000;
export const SIM_FINGERPRINT = 'fp_forkpool_sim';

export interface ResponseMeta {
  id: string;
  model: string;
  /** An Anthropic request with `thinking`: the answer starts with thinking blocks (wire-checks.ts). */
  thinking?: boolean;
}

export interface WireUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

export function usageOf(prompt: number, completion: number): WireUsage {
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

function finishReason(reply: SimReply): 'tool_calls' | 'stop' | 'length' {
  if (reply.finishReason) return reply.finishReason;
  return reply.toolCalls.length > 0 ? 'tool_calls' : 'stop';
}

export function completionBody(reply: SimReply, meta: ResponseMeta, usage: WireUsage): Record<string, unknown> {
  const message: Record<string, unknown> = { role: 'assistant', content: reply.content, refusal: null };
  if (reply.toolCalls.length > 0) {
    message.tool_calls = reply.toolCalls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } }));
  }
  return {
    id: meta.id,
    object: 'chat.completion',
    created: SIM_CREATED,
    model: meta.model,
    system_fingerprint: SIM_FINGERPRINT,
    choices: [{ index: 0, message, logprobs: null, finish_reason: finishReason(reply) }],
    usage,
  };
}

/** One SSE event to send, with the output tokens it carries (for per-token pacing). */
export interface StreamChunk {
  json: string;
  /** The SSE `event:` name, on wires that name their events (Responses, Anthropic). */
  event?: string;
  tokens: number;
  /** The chunk carrying `finish_reason`, or the usage chunk after it. */
  closing: boolean;
}

/** Splits text into pieces of at most `maxChars` characters (at least one piece, maybe empty). */
export function pieces(text: string, maxChars: number): string[] {
  if (text.length === 0) return [];
  const out: string[] = [];
  for (let i = 0; i < text.length; i += maxChars) out.push(text.slice(i, i + maxChars));
  return out;
}

export function streamChunks(reply: SimReply, meta: ResponseMeta, usage: WireUsage, opts: { maxTokensPerChunk: number; includeUsage: boolean }): StreamChunk[] {
  const maxChars = opts.maxTokensPerChunk * 4;
  const chunk = (delta: Record<string, unknown>, finish: string | null, tokens: number, closing = false): StreamChunk => {
    const body: Record<string, unknown> = {
      id: meta.id,
      object: 'chat.completion.chunk',
      created: SIM_CREATED,
      model: meta.model,
      system_fingerprint: SIM_FINGERPRINT,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    };
    // With include_usage, OpenAI sends `usage: null` on every chunk but the last.
    if (opts.includeUsage) body.usage = null;
    return { json: JSON.stringify(body), tokens, closing };
  };
  const out: StreamChunk[] = [chunk({ role: 'assistant', content: reply.toolCalls.length > 0 && !reply.content ? null : '' }, null, 0)];
  for (const piece of pieces(reply.content ?? '', maxChars)) out.push(chunk({ content: piece }, null, Math.ceil(piece.length / 4)));
  reply.toolCalls.forEach((call, index) => {
    // The name is sent once (clients concatenate name deltas); the arguments follow in pieces.
    out.push(
      chunk({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }] }, null, Math.ceil(call.name.length / 4)),
    );
    for (const piece of pieces(call.arguments, maxChars)) {
      out.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }, null, Math.ceil(piece.length / 4)));
    }
  });
  out.push(chunk({}, finishReason(reply), 0, true));
  if (opts.includeUsage) {
    out.push({
      json: JSON.stringify({
        id: meta.id,
        object: 'chat.completion.chunk',
        created: SIM_CREATED,
        model: meta.model,
        system_fingerprint: SIM_FINGERPRINT,
        choices: [],
        usage,
      }),
      tokens: 0,
      closing: true,
    });
  }
  return out;
}
