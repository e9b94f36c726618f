/**
 * Schema-bound requests: a request with `response_format: {type: "json_schema"}` or one that
 * offers the `submit_result` tool gets, in place of the plausible agent's final text, a value
 * made from the schema (deterministic: strings from the property name and the task). The
 * `[sim-invalid-result: once|always]` directive makes the value miss the schema on the first
 * try (the repair turn then gets a good one) or on every try.
 *
 * Pure: no I/O, no clock.
 */
import { simDirectives } from './directives.js';
import { firstSentence } from './keywords.js';
import { messagesOf, textOf, toolCall, toolCallsOf, type SimReply, type WireMessage } from './reply.js';

const SUBMIT_TOOL = 'submit_result';
/** The start of the repair message a typed job is sent (src/worker/typed-output.ts). */
const REPAIR_MARK = '[forkpool] Your result does not match';
const MAX_DEPTH = 8;
/** A workspace path in the agent's answer ("Most relevant: src/retry.ts."). */
const PATH = /\b((?:[\w-]+\/)*[\w-]+\.[a-z]{1,5})\b/;
/** Property names that hold a path. */
const PATH_NAMES = /^(file|files|path|paths|location|source|where)$/i;

interface Seed {
  text: string;
  path: string;
}

type Json = Record<string, unknown>;

/** The reply to a schema-bound request; any other request's reply unchanged. */
export function typedReply(body: unknown, reply: SimReply, n: number): SimReply {
  const bound = boundSchema(body);
  if (!bound) return reply;
  const messages = messagesOf(body);
  const last = messages.at(-1);
  // A repair (a user message, or submit_result's tool error) is answered at once; otherwise only a final answer is replaced.
  const repairing = (last?.role === 'user' && textOf(last.content).startsWith(REPAIR_MARK)) || lastWasSubmit(messages);
  if (!repairing && reply.toolCalls.length > 0) return reply;
  const task = textOf(messages.find((m) => m.role === 'user')?.content);
  const { invalidResult, task: plain } = simDirectives(task);
  const tries = messages.filter((m) => toolCallsOf(m).some((c) => c.name === SUBMIT_TOOL)).length + messages.filter(isRepairMessage).length;
  // What the plausible agent would have answered (or last said) fills the strings: a path-like field gets its path.
  const said = reply.toolCalls.length === 0 && reply.content ? reply.content : lastProse(messages);
  const seed = { text: firstSentence(said ?? plain, 120), path: PATH.exec(said ?? '')?.[1] ?? 'README.md' };
  const valid = exampleOf(bound.schema, bound.schema, seed, 0);
  const value = invalidResult === 'always' || (invalidResult === 'once' && tries === 0) ? broken(bound.schema, valid) : valid;
  if (bound.via === 'response_format') return { content: JSON.stringify(value), toolCalls: [] };
  return { content: null, toolCalls: [toolCall(n, 0, SUBMIT_TOOL, JSON.stringify(value))] };
}

function boundSchema(body: unknown): { via: 'response_format' | 'tool'; schema: Json } | undefined {
  const request = (body ?? {}) as { response_format?: { type?: unknown; json_schema?: { schema?: unknown } }; tools?: unknown };
  const format = request.response_format;
  if (format?.type === 'json_schema' && isObject(format.json_schema?.schema)) return { via: 'response_format', schema: format.json_schema.schema };
  if (!Array.isArray(request.tools)) return undefined;
  for (const tool of request.tools as Array<{ function?: { name?: unknown; parameters?: unknown } } | null>) {
    if (tool?.function?.name === SUBMIT_TOOL && isObject(tool.function.parameters)) return { via: 'tool', schema: tool.function.parameters };
  }
  return undefined;
}

function lastWasSubmit(messages: readonly WireMessage[]): boolean {
  const last = messages.at(-1);
  if (last?.role !== 'tool') return false;
  const call = [...messages].reverse().find((m) => m.role === 'assistant' && toolCallsOf(m).length > 0);
  return toolCallsOf(call).some((c) => c.name === SUBMIT_TOOL && c.id === last.tool_call_id);
}

/** The last thing the agent said in prose (not a JSON value it offered). */
function lastProse(messages: readonly WireMessage[]): string | undefined {
  for (let i = messages.length - 1; i >= 0; i--) {
    const text = messages[i]?.role === 'assistant' ? textOf(messages[i]?.content).trim() : '';
    if (text && !/^[[{"]/.test(text)) return text;
  }
  return undefined;
}

function isRepairMessage(message: WireMessage): boolean {
  return message.role === 'user' && textOf(message.content).startsWith(REPAIR_MARK);
}

/** A value that matches `schema` (as far as the keywords below go: what structured output uses). */
function exampleOf(schema: unknown, root: Json, seed: Seed, depth: number, name = 'value'): unknown {
  if (!isObject(schema) || depth > MAX_DEPTH) return null;
  if (typeof schema.$ref === 'string') return exampleOf(resolveRef(schema.$ref, root), root, seed, depth + 1, name);
  if ('const' in schema) return schema.const;
  if (Array.isArray(schema.enum)) return schema.enum[0];
  const options = (schema.anyOf ?? schema.oneOf ?? schema.allOf) as unknown[] | undefined;
  if (Array.isArray(options)) {
    const option = options.find((o) => !(isObject(o) && o.type === 'null')) ?? options[0];
    return exampleOf(option, root, seed, depth + 1, name);
  }
  const type: unknown = Array.isArray(schema.type) ? ((schema.type as unknown[]).find((t) => t !== 'null') ?? 'null') : schema.type;
  switch (type) {
    case 'object':
      return Object.fromEntries(
        Object.entries((schema.properties as Json | undefined) ?? {}).map(([key, sub]) => [key, exampleOf(sub, root, seed, depth + 1, key)]),
      );
    case 'array': {
      const count = Math.min(Math.max(typeof schema.minItems === 'number' ? schema.minItems : 1, 1), typeof schema.maxItems === 'number' ? schema.maxItems : 3);
      return Array.from({ length: count }, () => exampleOf(schema.items, root, seed, depth + 1, name));
    }
    case 'string':
      return stringFor(schema, PATH_NAMES.test(name) ? seed.path : seed.text);
    case 'integer':
    case 'number':
      return numberFor(schema, type === 'integer');
    case 'boolean':
      return true;
    case 'null':
      return null;
    default:
      return seed.text;
  }
}

const FORMATS: Record<string, string> = {
  'date-time': '2026-01-01T00:00:00Z',
  date: '2026-01-01',
  time: '00:00:00',
  email: 'sim@example.com',
  uri: 'https://example.com/sim',
  url: 'https://example.com/sim',
  uuid: '00000000-0000-4000-8000-000000000000',
};

function stringFor(schema: Json, text: string): string {
  if (typeof schema.format === 'string' && FORMATS[schema.format] !== undefined) return FORMATS[schema.format] as string;
  const min = typeof schema.minLength === 'number' ? schema.minLength : 0;
  const max = typeof schema.maxLength === 'number' ? schema.maxLength : 200;
  return text.padEnd(min, '.').slice(0, max);
}

function numberFor(schema: Json, integer: boolean): number {
  // zod's int() writes ±MAX_SAFE_INTEGER as bounds: no real bound.
  const num = (key: string) => (typeof schema[key] === 'number' && Math.abs(schema[key]) < Number.MAX_SAFE_INTEGER ? schema[key] : undefined);
  const low = num('minimum') ?? (num('exclusiveMinimum') !== undefined ? (num('exclusiveMinimum') as number) + 1 : undefined);
  const high = num('maximum') ?? (num('exclusiveMaximum') !== undefined ? (num('exclusiveMaximum') as number) - 1 : undefined);
  // Between two bounds: the middle (a confidence of 0..1 reads 0.5); else the lower bound, else 1 (capped by the upper one).
  const value = low !== undefined && high !== undefined ? (low + high) / 2 : (low ?? Math.min(1, high ?? 1));
  return integer ? Math.ceil(value) : value;
}

/** `valid` with its first property (or itself) of the wrong type: a value the schema refuses. */
function broken(schema: Json, valid: unknown): unknown {
  const properties = isObject(schema.properties) ? Object.entries(schema.properties) : [];
  const first = properties[0];
  if (isObject(valid) && first) return { ...valid, [first[0]]: wrongFor(first[1]) };
  return wrongFor(schema);
}

function wrongFor(schema: unknown): unknown {
  const type = isObject(schema) ? schema.type : undefined;
  if (type === 'string') return 12345;
  if (type === 'object') return 'not an object';
  if (type === 'array') return 'not an array';
  return { notA: typeof type === 'string' ? type : 'value' };
}

function resolveRef(ref: string, root: Json): unknown {
  if (!ref.startsWith('#/')) return undefined;
  let node: unknown = root;
  for (const part of ref.slice(2).split('/')) node = isObject(node) ? node[part.replace(/~1/g, '/').replace(/~0/g, '~')] : undefined;
  return node;
}

function isObject(value: unknown): value is Json {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
