/**
 * The simulator's answers on each wire: a whole body and the event sequence of a stream, for
 * Chat Completions (response.ts), the Responses API and Anthropic Messages. Pure and
 * deterministic, like response.ts: equal requests give equal bytes.
 */
import type { SimReply } from './reply.js';
import { completionBody, pieces, SIM_CREATED, streamChunks, type ResponseMeta, type StreamChunk, type WireUsage } from './response.js';
import type { SimWire } from './wire-requests.js';
import { simThinkingBlocks } from './wire-checks.js';

/** Prompt tokens an Anthropic answer reports as read from, or written to, the prompt cache. */
export interface CacheUsage {
  read: number;
  write: number;
}

export interface WireFormat {
  /** The response id's prefix (`chatcmpl-sim-`, `resp_sim_`, `msg_sim_`) before the request number. */
  idPrefix: string;
  body(reply: SimReply, meta: ResponseMeta, usage: WireUsage, cache: CacheUsage): Record<string, unknown>;
  chunks(reply: SimReply, meta: ResponseMeta, usage: WireUsage, cache: CacheUsage, opts: { maxTokensPerChunk: number; includeUsage: boolean }): StreamChunk[];
  /** An event that carries nothing (a `slow_drip` stream sends these forever). */
  filler(meta: ResponseMeta): StreamChunk;
  /** What ends a good stream after its last event. */
  end: string;
  /** An error body in this wire's shape, from the OpenAI-shaped one. */
  errorBody(openaiShaped: string): string;
}

/** One SSE event as written: an `event:` line when the wire names its events. */
export function sseText(chunk: StreamChunk): string {
  return `${chunk.event ? `event: ${chunk.event}\n` : ''}data: ${chunk.json}\n\n`;
}

const event = (type: string, data: Record<string, unknown>, tokens = 0, closing = false): StreamChunk => ({
  json: JSON.stringify({ type, ...data }),
  event: type,
  tokens,
  closing,
});

const CHAT: WireFormat = {
  idPrefix: 'chatcmpl-sim-',
  body: (reply, meta, usage) => completionBody(reply, meta, usage),
  chunks: (reply, meta, usage, _cache, opts) => streamChunks(reply, meta, usage, opts),
  filler: (meta) => ({
    json: JSON.stringify({
      id: meta.id,
      object: 'chat.completion.chunk',
      created: SIM_CREATED,
      model: meta.model,
      choices: [{ index: 0, delta: {}, finish_reason: null }],
    }),
    tokens: 0,
    closing: false,
  }),
  end: 'data: [DONE]\n\n',
  errorBody: (body) => body,
};

/** Every answer carries one reasoning item: a reasoning model's, which the client must send back. */
function reasoningItem(meta: ResponseMeta): Record<string, unknown> {
  return { type: 'reasoning', id: `rs_${meta.id}`, summary: [], encrypted_content: `sim-reasoning-of-${meta.id}` };
}

function responsesOutput(reply: SimReply, meta: ResponseMeta): Record<string, unknown>[] {
  const output: Record<string, unknown>[] = [reasoningItem(meta)];
  if (reply.content) output.push(messageItem(meta, reply.content));
  reply.toolCalls.forEach((call, i) =>
    output.push({ type: 'function_call', id: `fc_${meta.id}_${i}`, call_id: call.id, name: call.name, arguments: call.arguments, status: 'completed' }),
  );
  return output;
}

function messageItem(meta: ResponseMeta, text: string | null): Record<string, unknown> {
  const content = text === null ? [] : [{ type: 'output_text', text, annotations: [] }];
  return { type: 'message', id: `msg_${meta.id}`, status: text === null ? 'in_progress' : 'completed', role: 'assistant', content };
}

function responseObject(meta: ResponseMeta, status: string, output: unknown[], usage: WireUsage | null): Record<string, unknown> {
  return {
    id: meta.id,
    object: 'response',
    created_at: SIM_CREATED,
    status,
    model: meta.model,
    output,
    error: null,
    incomplete_details: null,
    usage: usage && {
      input_tokens: usage.prompt_tokens,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: usage.completion_tokens,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: usage.total_tokens,
    },
  };
}

const RESPONSES: WireFormat = {
  idPrefix: 'resp_sim_',
  body: (reply, meta, usage) => responseObject(meta, 'completed', responsesOutput(reply, meta), usage),
  chunks: (reply, meta, usage, _cache, opts) => {
    const maxChars = opts.maxTokensPerChunk * 4;
    const out: StreamChunk[] = [event('response.created', { response: responseObject(meta, 'in_progress', [], null) })];
    const output = responsesOutput(reply, meta);
    output.forEach((item, index) => {
      const base = { output_index: index };
      if (item.type === 'message') {
        out.push(event('response.output_item.added', { ...base, item: messageItem(meta, null) }));
        for (const piece of pieces(reply.content ?? '', maxChars)) {
          out.push(event('response.output_text.delta', { ...base, item_id: item.id, content_index: 0, delta: piece }, Math.ceil(piece.length / 4)));
        }
      } else if (item.type === 'function_call') {
        out.push(event('response.output_item.added', { ...base, item: { ...item, arguments: '' } }, Math.ceil(String(item.name).length / 4)));
        for (const piece of pieces(String(item.arguments), maxChars)) {
          out.push(event('response.function_call_arguments.delta', { ...base, item_id: item.id, delta: piece }, Math.ceil(piece.length / 4)));
        }
      } else {
        out.push(event('response.output_item.added', { ...base, item }));
      }
      out.push(event('response.output_item.done', { ...base, item }));
    });
    out.push(event('response.completed', { response: responseObject(meta, 'completed', output, usage) }, 0, true));
    return out;
  },
  filler: (meta) => event('response.in_progress', { response: responseObject(meta, 'in_progress', [], null) }),
  end: '',
  errorBody: (body) => body,
};

function anthropicUsage(usage: WireUsage, cache: CacheUsage, output: number): Record<string, number> {
  // Anthropic counts cache reads and writes apart from `input_tokens`.
  return {
    input_tokens: Math.max(0, usage.prompt_tokens - cache.read - cache.write),
    cache_creation_input_tokens: cache.write,
    cache_read_input_tokens: cache.read,
    output_tokens: output,
  };
}

const stopReason = (reply: SimReply) => (reply.toolCalls.length > 0 ? 'tool_use' : 'end_turn');

const ANTHROPIC: WireFormat = {
  idPrefix: 'msg_sim_',
  body: (reply, meta, usage, cache) => {
    const content: Record<string, unknown>[] = meta.thinking ? simThinkingBlocks(meta.id) : [];
    if (reply.content) content.push({ type: 'text', text: reply.content });
    for (const call of reply.toolCalls) content.push({ type: 'tool_use', id: call.id, name: call.name, input: toolInput(call.arguments) });
    return {
      id: meta.id,
      type: 'message',
      role: 'assistant',
      model: meta.model,
      content,
      stop_reason: stopReason(reply),
      stop_sequence: null,
      usage: anthropicUsage(usage, cache, usage.completion_tokens),
    };
  },
  chunks: (reply, meta, usage, cache, opts) => {
    const maxChars = opts.maxTokensPerChunk * 4;
    const start = { id: meta.id, type: 'message', role: 'assistant', model: meta.model, content: [], stop_reason: null, stop_sequence: null };
    const out: StreamChunk[] = [event('message_start', { message: { ...start, usage: anthropicUsage(usage, cache, 1) } }), event('ping', {})];
    let index = 0;
    for (const block of meta.thinking ? simThinkingBlocks(meta.id) : []) {
      // As Claude streams it: thinking text in deltas, the signature in one delta at its end; redacted whole.
      if (block.type === 'redacted_thinking') out.push(event('content_block_start', { index, content_block: block }));
      else {
        out.push(event('content_block_start', { index, content_block: { type: 'thinking', thinking: '', signature: '' } }));
        for (const piece of pieces(String(block.thinking), maxChars))
          out.push(event('content_block_delta', { index, delta: { type: 'thinking_delta', thinking: piece } }));
        out.push(event('content_block_delta', { index, delta: { type: 'signature_delta', signature: block.signature } }));
      }
      out.push(event('content_block_stop', { index }));
      index++;
    }
    if (reply.content) {
      out.push(event('content_block_start', { index, content_block: { type: 'text', text: '' } }));
      for (const piece of pieces(reply.content, maxChars)) {
        out.push(event('content_block_delta', { index, delta: { type: 'text_delta', text: piece } }, Math.ceil(piece.length / 4)));
      }
      out.push(event('content_block_stop', { index }));
      index++;
    }
    for (const call of reply.toolCalls) {
      out.push(
        event('content_block_start', { index, content_block: { type: 'tool_use', id: call.id, name: call.name, input: {} } }, Math.ceil(call.name.length / 4)),
      );
      // The wire sends JSON: arguments that are not (a malformed_tool_args fault) go as their text.
      for (const piece of pieces(JSON.stringify(toolInput(call.arguments)), maxChars)) {
        out.push(event('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: piece } }, Math.ceil(piece.length / 4)));
      }
      out.push(event('content_block_stop', { index }));
      index++;
    }
    out.push(
      event('message_delta', { delta: { stop_reason: stopReason(reply), stop_sequence: null }, usage: { output_tokens: usage.completion_tokens } }, 0, true),
    );
    out.push(event('message_stop', {}, 0, true));
    return out;
  },
  filler: () => event('ping', {}),
  end: '',
  errorBody: (body) => {
    const error = (JSON.parse(body) as { error?: { type?: string; message?: string } }).error;
    return JSON.stringify({ type: 'error', error: { type: error?.type ?? 'api_error', message: error?.message ?? '' } });
  },
};

/** `tool_use.input` is an object: arguments that are not one (a fault's) go as `{ _raw }`. */
function toolInput(args: string): unknown {
  try {
    const parsed: unknown = JSON.parse(args);
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) return parsed;
  } catch {
    // fall through
  }
  return { _raw: args };
}

export const WIRE_FORMATS: Readonly<Record<SimWire, WireFormat>> = { chat: CHAT, responses: RESPONSES, anthropic: ANTHROPIC };
