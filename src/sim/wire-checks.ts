/**
 * What the real APIs refuse, refused here too, so a client that sends it fails in a test as it
 * would in production: OpenAI's reasoning models refuse `temperature` (and, on Chat Completions,
 * `max_tokens`); Anthropic with `thinking` refuses a temperature other than 1, a budget not below
 * `max_tokens`, a tool-use turn of the current tool loop that lost its thinking block, and a
 * thinking block whose `signature` does not match its text (a block not sent back unchanged).
 * Also the thinking blocks the simulator answers with, signed so that check can be made.
 */
import { createHash } from 'node:crypto';
import { isReasoningModel } from '../shared/wires/sampling.js';
import type { SimWire } from './wire-requests.js';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => !!v && typeof v === 'object' && !Array.isArray(v);

/** The signature the simulator gives a thinking text (what the real API's opaque one stands for). */
export function simSignature(thinking: string): string {
  return `sim-sig-${createHash('sha256').update(thinking).digest('hex').slice(0, 32)}`;
}

/** The thinking blocks of answer `id`: one signed `thinking`, one `redacted_thinking`, as Claude may send. */
export function simThinkingBlocks(id: string): Obj[] {
  const thinking = `(sim thinking for ${id}: which tool next, and why)`;
  return [
    { type: 'thinking', thinking, signature: simSignature(thinking) },
    { type: 'redacted_thinking', data: `sim-redacted-${id}` },
  ];
}

/** Whether an Anthropic request asks for extended thinking. */
export function wantsThinking(body: Obj): boolean {
  return isObj(body.thinking) && body.thinking.type === 'enabled';
}

/** The message of the 400 a real API would answer `body` with; undefined when it would take it. */
export function refusal(wire: SimWire, body: Obj): string | undefined {
  const model = typeof body.model === 'string' ? body.model : '';
  if (wire !== 'anthropic') {
    if (!isReasoningModel(model)) return undefined;
    if (body.temperature !== undefined && body.temperature !== 1)
      return "Unsupported value: 'temperature' does not support this value with this model. Only the default (1) value is supported.";
    if (wire === 'chat' && body.max_tokens !== undefined)
      return "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.";
    return undefined;
  }
  if (!wantsThinking(body)) return undefined;
  const budget = (body.thinking as Obj).budget_tokens;
  if (typeof budget !== 'number' || budget < 1024) return 'thinking.enabled.budget_tokens: Input should be greater than or equal to 1024';
  if (typeof body.max_tokens === 'number' && body.max_tokens <= budget) return '`max_tokens` must be greater than `thinking.budget_tokens`.';
  if (body.temperature !== undefined && body.temperature !== 1) return '`temperature` may only be set to 1 when thinking is enabled.';
  return thinkingRefusal(Array.isArray(body.messages) ? body.messages.filter(isObj) : []);
}

function thinkingRefusal(messages: Obj[]): string | undefined {
  // The current tool loop: the assistant turns after the last user turn that is not only tool results.
  let start = 0;
  messages.forEach((message, i) => {
    const blocks = Array.isArray(message.content) ? message.content.filter(isObj) : [];
    const onlyResults = blocks.length > 0 && blocks.every((b) => b.type === 'tool_result');
    if (message.role === 'user' && !onlyResults) start = i + 1;
  });
  for (const [i, message] of messages.entries()) {
    if (message.role !== 'assistant' || !Array.isArray(message.content)) continue;
    const blocks = message.content.filter(isObj);
    for (const [j, block] of blocks.entries()) {
      if (block.type === 'thinking' && block.signature !== simSignature(String(block.thinking)))
        return `messages.${i}.content.${j}: Invalid \`signature\` in \`thinking\` block`;
    }
    const first = blocks[0]?.type;
    if (i >= start && blocks.some((b) => b.type === 'tool_use') && first !== 'thinking' && first !== 'redacted_thinking') {
      return `messages.${i}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, but found \`${String(first)}\`. When \`thinking\` is enabled, a final \`assistant\` message must start with a thinking block (preceeding the lastmost set of \`tool_use\` and \`tool_result\` blocks).`;
    }
  }
  return undefined;
}
