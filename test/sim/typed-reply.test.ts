/**
 * The simulator's schema-bound answers (src/sim/typed-reply.ts), over its real HTTP server: a
 * final answer under `response_format: json_schema` is a JSON value of the schema, one offered
 * `submit_result` tool is called with such a value, the same request gets the same value, and
 * `[sim-invalid-result: once|always]` makes the value miss the schema (first try, every try).
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { useCleanup } from '../helpers/cleanup.js';
import { startSim } from '../helpers/sim.js';

const cleanup = useCleanup();
const SCHEMA = {
  type: 'object',
  $defs: { tag: { type: 'string', enum: ['retry', 'cache'] } },
  properties: {
    path: { type: 'string' },
    count: { type: 'integer', minimum: 2, maximum: 6 },
    tags: { type: 'array', items: { $ref: '#/$defs/tag' }, minItems: 2 },
    when: { type: 'string', format: 'date-time' },
    note: { anyOf: [{ type: 'null' }, { type: 'string', maxLength: 5 }] },
  },
  required: ['path', 'count', 'tags', 'when', 'note'],
  additionalProperties: false,
};
const valid = z.fromJSONSchema(SCHEMA as z.core.JSONSchema.JSONSchema);

async function ask(url: string, task: string, via: 'response_format' | 'tool', messages: unknown[] = []): Promise<unknown> {
  const body = {
    model: 'm',
    messages: [{ role: 'system', content: 'You are a background research agent.' }, { role: 'user', content: task }, ...messages],
    ...(via === 'response_format'
      ? { response_format: { type: 'json_schema', json_schema: { name: 'result', schema: SCHEMA, strict: true } } }
      : { tools: [{ type: 'function', function: { name: 'submit_result', description: 'd', parameters: SCHEMA } }] }),
  };
  const response = await fetch(`${url}/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const message = (
    (await response.json()) as {
      choices: Array<{ message: { content: string | null; tool_calls?: Array<{ function: { name: string; arguments: string } }> } }>;
    }
  ).choices[0]!.message;
  if (via === 'response_format') return JSON.parse(message.content ?? '');
  expect(message.tool_calls?.[0]?.function.name).toBe('submit_result');
  return JSON.parse(message.tool_calls?.[0]?.function.arguments ?? '');
}

describe('the simulator answers schema-bound requests', () => {
  it.each(['response_format', 'tool'] as const)(
    '%s: a value of the schema ($ref, enum, bounds, formats, anyOf), the same for the same request',
    async (via) => {
      const sim = await startSim(cleanup);
      // No tools to research with: the plausible agent answers at once, and that answer is bound.
      const value = await ask(sim.url, 'Where is it?', via);
      expect(valid.safeParse(value).success, JSON.stringify(value)).toBe(true);
      expect(value).toMatchObject({ count: 4, tags: ['retry', 'retry'], when: '2026-01-01T00:00:00Z' });
      expect(await ask(sim.url, 'Where is it?', via)).toEqual(value);
    },
  );

  it.each(['response_format', 'tool'] as const)('%s: [sim-invalid-result: once] misses the schema on the first try only; always on every try', async (via) => {
    const sim = await startSim(cleanup);
    const first = await ask(sim.url, 'Where is it? [sim-invalid-result: once]', via);
    expect(valid.safeParse(first).success).toBe(false);
    const repair =
      via === 'response_format'
        ? [
            { role: 'assistant', content: JSON.stringify(first) },
            { role: 'user', content: '[forkpool] Your result does not match the output schema: …' },
          ]
        : [
            {
              role: 'assistant',
              content: null,
              tool_calls: [{ id: 'c1', type: 'function', function: { name: 'submit_result', arguments: JSON.stringify(first) } }],
            },
            { role: 'tool', tool_call_id: 'c1', content: 'Error: the result does not match the output schema' },
          ];
    expect(valid.safeParse(await ask(sim.url, 'Where is it? [sim-invalid-result: once]', via, repair)).success).toBe(true);
    expect(valid.safeParse(await ask(sim.url, 'Where is it? [sim-invalid-result: always]', via, repair)).success).toBe(false);
  });
});
