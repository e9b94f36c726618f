/**
 * Anthropic Messages shapes: the tool loop's Chat Completions history as a Messages request
 * (system prompt apart, tool calls as `tool_use` blocks, their results as `tool_result` blocks in
 * the next user turn), and a Messages answer back as a {@link ModelReply}. Pure: no I/O.
 */
import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
import type { ModelReply } from '../model-types.js';
import type { Usage } from '../usage.js';
import { carriedThinking, messageText } from './history.js';

/** A block of extended thinking as the API sent it; it must go back byte for byte (its `signature` is checked). */
export type ThinkingBlock = { type: 'thinking'; thinking: string; signature: string } | { type: 'redacted_thinking'; data: string };

export type AnthropicBlock =
  | ThinkingBlock
  | { type: 'text'; text: string; cache_control?: CacheControl }
  | { type: 'tool_use'; id: string; name: string; input: unknown }
  | { type: 'tool_result'; tool_use_id: string; content: string };

export interface AnthropicMessage {
  role: 'user' | 'assistant';
  content: AnthropicBlock[];
}

interface CacheControl {
  type: 'ephemeral';
}

export interface AnthropicTool {
  name: string;
  description?: string;
  input_schema: unknown;
  cache_control?: CacheControl;
}

export interface AnthropicUsage {
  input_tokens?: number;
  output_tokens?: number;
  cache_read_input_tokens?: number | null;
  cache_creation_input_tokens?: number | null;
}

/** The cache breakpoint: everything up to it (tools, then system) is a stable prefix. */
const EPHEMERAL: CacheControl = { type: 'ephemeral' };

/** Tool arguments as the object `tool_use.input` must be; arguments that are not one go as `{}`. */
function inputOf(args: string): unknown {
  try {
    const parsed: unknown = JSON.parse(args);
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? parsed : {};
  } catch {
    // The loop already answered this call with a tool error; the call itself only has to be well formed.
    return {};
  }
}

/**
 * The request's `system`, `messages` and `tools`. System messages join into `system`; turns of
 * the same role merge (tool results and an injected note form one user turn, as the API wants
 * tool results right after their `tool_use`). The last system block and the last tool carry
 * `cache_control`: the prefix the provider may serve from its cache on the next call.
 */
export function anthropicRequest(
  messages: readonly ChatCompletionMessageParam[],
  tools: readonly ChatCompletionTool[] | undefined,
): { system?: AnthropicBlock[]; messages: AnthropicMessage[]; tools?: AnthropicTool[] } {
  const system: string[] = [];
  const turns: AnthropicMessage[] = [];
  const add = (role: AnthropicMessage['role'], blocks: AnthropicBlock[]) => {
    if (blocks.length === 0) return;
    const last = turns.at(-1);
    if (last && last.role === role) last.content.push(...blocks);
    else turns.push({ role, content: blocks });
  };
  for (const message of messages) {
    const text = messageText(message.content);
    if (message.role === 'system' || message.role === 'developer') {
      if (text) system.push(text);
    } else if (message.role === 'user') {
      add('user', text ? [{ type: 'text', text }] : []);
    } else if (message.role === 'tool') {
      add('user', [{ type: 'tool_result', tool_use_id: message.tool_call_id, content: text }]);
    } else if (message.role === 'assistant') {
      // Its thinking first, as the model produced it: the API refuses a tool-use turn whose thinking is gone.
      const blocks: AnthropicBlock[] = [...(carriedThinking(message) as ThinkingBlock[])];
      if (text) blocks.push({ type: 'text', text });
      for (const call of message.tool_calls ?? []) {
        if (call.type === 'function') blocks.push({ type: 'tool_use', id: call.id, name: call.function.name, input: inputOf(call.function.arguments) });
      }
      add('assistant', blocks);
    }
  }
  const apiTools: AnthropicTool[] = (tools ?? []).flatMap((tool) =>
    tool.type === 'function'
      ? [
          {
            name: tool.function.name,
            ...(tool.function.description ? { description: tool.function.description } : {}),
            input_schema: tool.function.parameters ?? { type: 'object', properties: {} },
          },
        ]
      : [],
  );
  const lastTool = apiTools.at(-1);
  if (lastTool) lastTool.cache_control = EPHEMERAL;
  return {
    ...(system.length > 0 ? { system: [{ type: 'text', text: system.join('\n\n'), cache_control: EPHEMERAL }] } : {}),
    messages: turns,
    ...(apiTools.length > 0 ? { tools: apiTools } : {}),
  };
}

/**
 * Usage in forkpool's terms: `promptTokens` is the whole prompt (Anthropic counts cache reads
 * and writes apart from `input_tokens`), of which `cachedTokens` were read from the cache.
 */
export function anthropicUsage(raw: AnthropicUsage | undefined): Usage {
  const read = raw?.cache_read_input_tokens ?? 0;
  const written = raw?.cache_creation_input_tokens ?? 0;
  const prompt = (raw?.input_tokens ?? 0) + read + written;
  const completion = raw?.output_tokens ?? 0;
  return {
    promptTokens: prompt,
    completionTokens: completion,
    totalTokens: prompt + completion,
    requests: 1,
    ...(read > 0 ? { cachedTokens: read } : {}),
    ...(written > 0 ? { cacheWriteTokens: written } : {}),
  };
}

/** `stop_reason` in Chat Completions' words (what the loop and its callers read). */
export function finishReasonOf(stopReason: string | null | undefined): string | null {
  switch (stopReason) {
    case undefined:
    case null:
      return null;
    case 'end_turn':
    case 'stop_sequence':
    case 'pause_turn':
      return 'stop';
    case 'tool_use':
      return 'tool_calls';
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'length';
    case 'refusal':
      return 'content_filter';
    default:
      return stopReason;
  }
}

/** A `thinking` or `redacted_thinking` block, as sent (undefined for any other block). */
export function thinkingBlockOf(block: Record<string, unknown>): ThinkingBlock | undefined {
  if (block.type === 'thinking' && typeof block.thinking === 'string' && typeof block.signature === 'string') {
    return { type: 'thinking', thinking: block.thinking, signature: block.signature };
  }
  if (block.type === 'redacted_thinking' && typeof block.data === 'string') return { type: 'redacted_thinking', data: block.data };
  return undefined;
}

/** A whole (non-streamed) Messages answer; its thinking is kept apart from the text (`thinkingBlocks`). */
export function replyFromMessage(
  body: { content?: unknown; stop_reason?: string | null; usage?: AnthropicUsage; model?: string },
  fallbackModel: string,
): ModelReply {
  let content = '';
  const toolCalls: ModelReply['toolCalls'] = [];
  const thinkingBlocks: ThinkingBlock[] = [];
  for (const block of Array.isArray(body.content) ? (body.content as Array<Record<string, unknown>>) : []) {
    const thinking = thinkingBlockOf(block);
    if (thinking) thinkingBlocks.push(thinking);
    else if (block.type === 'text' && typeof block.text === 'string') content += block.text;
    else if (block.type === 'tool_use' && typeof block.id === 'string' && typeof block.name === 'string') {
      toolCalls.push({ id: block.id, type: 'function', function: { name: block.name, arguments: JSON.stringify(block.input ?? {}) } });
    }
  }
  return {
    content,
    toolCalls,
    finishReason: finishReasonOf(body.stop_reason),
    usage: anthropicUsage(body.usage),
    model: body.model || fallbackModel,
    ...(thinkingBlocks.length > 0 ? { thinkingBlocks } : {}),
  };
}
