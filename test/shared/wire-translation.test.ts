/**
 * The wires' translations of the tool loop's Chat Completions history (issue 36 §3), pure: what
 * a Responses or Anthropic request holds for a given history, and how their answers' endings read.
 */
import { describe, expect, it } from 'vitest';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import type { Response } from 'openai/resources/responses/responses';
import { anthropicRequest, anthropicUsage, finishReasonOf } from '../../src/shared/wires/anthropic-messages.js';
import { chatMessages } from '../../src/shared/wires/history.js';
import { replyFromResponse, responsesInput } from '../../src/shared/wires/responses.js';

const call = (id: string, args: string) => ({ id, type: 'function' as const, function: { name: 'read_file', arguments: args } });
const REASONING = { type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: 'opaque' };
const HISTORY = [
  { role: 'system', content: 'You are a background agent.' },
  { role: 'user', content: 'Where is the retry?' },
  { role: 'assistant', content: 'Looking.', tool_calls: [call('c1', '{"path":"a.ts"}'), call('c2', '{"path": "src/')], reasoningItems: [REASONING] },
  { role: 'tool', tool_call_id: 'c1', content: 'export const a = 1;' },
  { role: 'tool', tool_call_id: 'c2', content: 'Error: invalid JSON arguments' },
  { role: 'user', content: '<background_results>none</background_results>' },
] as ChatCompletionMessageParam[];
const TOOLS = [
  { type: 'function' as const, function: { name: 'read_file', description: 'reads', parameters: { type: 'object', properties: {} } } },
  { type: 'function' as const, function: { name: 'grep', description: 'greps', parameters: { type: 'object', properties: {} } } },
];

describe('Anthropic Messages request', () => {
  it('puts the system prompt apart, tool calls as tool_use, their results and the next note in one user turn, cache_control on the prefix', () => {
    const request = anthropicRequest(HISTORY, TOOLS);
    expect(request.system).toEqual([{ type: 'text', text: 'You are a background agent.', cache_control: { type: 'ephemeral' } }]);
    expect(request.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
    expect(request.messages[1]?.content).toEqual([
      { type: 'text', text: 'Looking.' },
      { type: 'tool_use', id: 'c1', name: 'read_file', input: { path: 'a.ts' } },
      // Arguments that are not JSON: the call stays well formed (the loop already answered it with an error).
      { type: 'tool_use', id: 'c2', name: 'read_file', input: {} },
    ]);
    expect(request.messages[2]?.content.map((b) => b.type)).toEqual(['tool_result', 'tool_result', 'text']);
    expect(request.tools?.map((t) => t.cache_control)).toEqual([undefined, { type: 'ephemeral' }]);
    // The Responses wire's reasoning never reaches this wire.
    expect(JSON.stringify(request)).not.toContain('rs_1');
  });

  it('reads stop_reason and usage in forkpool terms', () => {
    expect(['end_turn', 'tool_use', 'max_tokens', 'stop_sequence', 'refusal'].map(finishReasonOf)).toEqual([
      'stop',
      'tool_calls',
      'length',
      'stop',
      'content_filter',
    ]);
    expect(anthropicUsage({ input_tokens: 10, cache_read_input_tokens: 100, cache_creation_input_tokens: 5, output_tokens: 7 })).toEqual({
      promptTokens: 115,
      completionTokens: 7,
      totalTokens: 122,
      requests: 1,
      cachedTokens: 100,
      cacheWriteTokens: 5,
    });
  });
});

describe('Responses request', () => {
  it('sends reasoning items first, then the text and the calls they led to, then each call output', () => {
    const input = responsesInput(HISTORY);
    expect(input.map((i) => ('type' in i && i.type ? i.type : (i as { role: string }).role))).toEqual([
      'system',
      'user',
      'reasoning',
      'assistant',
      'function_call',
      'function_call',
      'function_call_output',
      'function_call_output',
      'user',
    ]);
    expect(input[2]).toEqual(REASONING);
  });

  it('a response cut at max_output_tokens reads as finish_reason length', () => {
    const response = { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' }, output: [], model: 'm', error: null } as unknown as Response;
    expect(replyFromResponse(response, 'm', 1_000).finishReason).toBe('length');
  });
});

describe('Chat Completions request', () => {
  it("drops the other wires' fields from a copy, and leaves a history without them as it is", () => {
    const stripped = chatMessages(HISTORY);
    expect(JSON.stringify(stripped)).not.toContain('reasoningItems');
    expect(JSON.stringify(HISTORY)).toContain('reasoningItems');
    const plain = HISTORY.filter((m) => m.role !== 'assistant');
    expect(chatMessages(plain)).toBe(plain);
  });
});
