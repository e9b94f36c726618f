/**
 * The simulator's other wires, on the way in: a Responses or Anthropic Messages request body
 * read as the Chat Completions body the behaviours (agent-behaviour.ts, script.ts) decide from.
 * Loosely typed on purpose: any client may send anything; what is not understood is skipped.
 */

/** Which API a request came in on (its path says). */
export type SimWire = 'chat' | 'responses' | 'anthropic';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => !!v && typeof v === 'object' && !Array.isArray(v);
const str = (v: unknown): string => (typeof v === 'string' ? v : '');

/** Text of a string or of an array of `{ text }` blocks. */
function blockText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((b) => (isObj(b) ? str(b.text) : '')).join('');
}

/** The list every chat request must have; undefined when the body has no such list (a 400). */
export function wireMessages(wire: SimWire, body: Obj): unknown[] | undefined {
  const list = wire === 'responses' ? body.input : body.messages;
  if (wire === 'responses' && typeof list === 'string') return [list];
  return Array.isArray(list) ? list : undefined;
}

/** The request as a chat body: model, messages, tools (function form), stream with usage. */
export function asChatBody(wire: SimWire, body: Obj): Obj {
  if (wire === 'chat') return body;
  const messages = wire === 'responses' ? responsesMessages(body) : anthropicMessages(body);
  const tools = (Array.isArray(body.tools) ? body.tools : []).filter(isObj).map((t) => ({
    type: 'function',
    function: { name: str(t.name), description: str(t.description), parameters: wire === 'responses' ? t.parameters : t.input_schema },
  }));
  return { model: body.model, messages, tools, stream: body.stream === true, stream_options: { include_usage: true } };
}

function responsesMessages(body: Obj): Obj[] {
  const out: Obj[] = [];
  if (typeof body.instructions === 'string') out.push({ role: 'system', content: body.instructions });
  const input = typeof body.input === 'string' ? [{ role: 'user', content: body.input }] : Array.isArray(body.input) ? body.input : [];
  for (const item of input.filter(isObj)) {
    if (item.type === 'function_call') {
      const call = { id: str(item.call_id), type: 'function', function: { name: str(item.name), arguments: str(item.arguments) } };
      const last = out.at(-1);
      // Calls after the assistant's text (or after other calls) belong to that assistant message.
      if (last?.role === 'assistant') last.tool_calls = [...((last.tool_calls as unknown[] | undefined) ?? []), call];
      else out.push({ role: 'assistant', content: null, tool_calls: [call] });
    } else if (item.type === 'function_call_output') {
      out.push({ role: 'tool', tool_call_id: str(item.call_id), content: typeof item.output === 'string' ? item.output : blockText(item.output) });
    } else if (typeof item.role === 'string' && (item.type === undefined || item.type === 'message')) {
      out.push({ role: item.role === 'developer' ? 'system' : item.role, content: blockText(item.content) });
    }
    // reasoning items: the model's own, nothing to read.
  }
  return out;
}

function anthropicMessages(body: Obj): Obj[] {
  const out: Obj[] = [];
  const system = blockText(body.system);
  if (system) out.push({ role: 'system', content: system });
  for (const message of (Array.isArray(body.messages) ? body.messages : []).filter(isObj)) {
    const blocks = typeof message.content === 'string' ? [{ type: 'text', text: message.content }] : Array.isArray(message.content) ? message.content : [];
    if (message.role === 'assistant') {
      const calls = blocks
        .filter(isObj)
        .filter((b) => b.type === 'tool_use')
        .map((b) => ({ id: str(b.id), type: 'function', function: { name: str(b.name), arguments: JSON.stringify(b.input ?? {}) } }));
      const text = blocks
        .filter((b) => isObj(b) && b.type === 'text')
        .map((b) => str((b as Obj).text))
        .join('');
      out.push({ role: 'assistant', content: text || null, ...(calls.length > 0 ? { tool_calls: calls } : {}) });
      continue;
    }
    // A user turn: its tool results first (as the tool messages they answer), then its text.
    for (const block of blocks.filter(isObj)) {
      if (block.type === 'tool_result') out.push({ role: 'tool', tool_call_id: str(block.tool_use_id), content: blockText(block.content) });
    }
    const text = blocks
      .filter((b) => isObj(b) && b.type === 'text')
      .map((b) => str((b as Obj).text))
      .join('\n');
    if (text) out.push({ role: 'user', content: text });
  }
  return out;
}

/**
 * The part of an Anthropic request marked for caching: everything up to the last block with
 * `cache_control` in the order tools, system (what the simulator's prompt cache keys on).
 * Empty when nothing is marked.
 */
export function cachedPrefix(body: Obj): string {
  const tools = Array.isArray(body.tools) ? body.tools.filter(isObj) : [];
  const system = Array.isArray(body.system) ? body.system.filter(isObj) : [];
  const lastSystem = system.findLastIndex((b) => isObj(b.cache_control));
  if (lastSystem >= 0) return JSON.stringify([tools, system.slice(0, lastSystem + 1)]);
  const lastTool = tools.findLastIndex((t) => isObj(t.cache_control));
  return lastTool >= 0 ? JSON.stringify([tools.slice(0, lastTool + 1)]) : '';
}
