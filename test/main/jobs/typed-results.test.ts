/**
 * Typed results through the real pool and worker threads (docs/delivery.md "Typed results"): a
 * job with an output schema (zod or JSON Schema, per spawn or per agent) ends with `record.data`,
 * by either mechanic (response_format, the submit_result tool); a value that misses the schema
 * gets one repair turn, then RESULT_INVALID keeps the last text; a bad schema is refused at spawn
 * and at config load; `data` survives a durable ledger's reopen.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { parseConfig } from '../../../src/shared/config.js';
import { ConfigError } from '../../../src/shared/errors.js';
import { Deliveries } from '../../../src/main/delivery/deliveries.js';
import { BackgroundManager } from '../../../src/main/jobs/manager.js';
import { openSqliteLedger } from '../../../src/main/ledger/sqlite-store.js';
import { useCleanup, RESEARCH_TASK, ended, makeConfig, makeManager, makeWorkspace, startSim, ledgerFile, watchManager } from '../../helpers/index.js';
import type { SimServer } from '../../../src/sim/index.js';

const cleanups = useCleanup();

const FINDING = {
  type: 'object',
  properties: { file: { type: 'string' }, lines: { type: 'integer', minimum: 1 }, confident: { type: 'boolean' } },
  required: ['file', 'lines', 'confident'],
  additionalProperties: false,
} as const;

/** The requests of one job (its task is in the first user message). */
function bodiesOf(sim: SimServer, task: string): Array<Record<string, unknown>> {
  return sim.requests.map((r) => r.body as Record<string, unknown>).filter((body) => (body.messages as Array<{ content?: unknown }>)[1]?.content === task);
}

describe('a typed job', () => {
  it('with a zod schema ends with record.data (submit_result tool: the default on a non-OpenAI endpoint)', async () => {
    const sim = await startSim(cleanups);
    const manager = makeManager(makeConfig(sim, await makeWorkspace(cleanups)), cleanups);
    const schema = z.object({ file: z.string(), lines: z.number().int().min(1), tags: z.array(z.enum(['retry', 'cache'])) });
    const { id } = manager.spawn({ task: RESEARCH_TASK, label: 'typed', outputSchema: schema });
    const record = await ended(manager, id);
    expect(record.status, JSON.stringify(record.error)).toBe('ok');
    expect(schema.parse(record.data)).toEqual(record.data);
    expect(record.data).toMatchObject({ lines: 1, tags: ['retry'] });
    expect(JSON.parse(record.resultText ?? '')).toEqual(record.data);
    const bodies = bodiesOf(sim, RESEARCH_TASK);
    // The tool is offered with the schema as its parameters; no response_format on this endpoint.
    const submit = (bodies[0]?.tools as Array<{ function: { name: string; parameters: unknown } }>).find((t) => t.function.name === 'submit_result');
    expect(submit?.function.parameters).toMatchObject({ type: 'object', required: ['file', 'lines', 'tags'] });
    expect(bodies.every((body) => body.response_format === undefined)).toBe(true);
    // Research still used the tools before the answer.
    expect(bodies.length).toBeGreaterThan(2);
  });

  it('with a JSON Schema and structuredOutput "response_format" binds every request; data is the parsed answer', async () => {
    const sim = await startSim(cleanups);
    const manager = makeManager(makeConfig(sim, await makeWorkspace(cleanups), {}, { structuredOutput: 'response_format' }), cleanups);
    const { id } = manager.spawn({ task: RESEARCH_TASK, label: 'typed', outputSchema: { ...FINDING } });
    const record = await ended(manager, id);
    expect(record.status, JSON.stringify(record.error)).toBe('ok');
    expect(record.data).toEqual({ file: expect.any(String), lines: 1, confident: true });
    const bodies = bodiesOf(sim, RESEARCH_TASK);
    expect(bodies.length).toBeGreaterThan(2);
    for (const body of bodies) {
      // Strict: the schema meets strict's rules (all required, additionalProperties false).
      expect(body.response_format).toEqual({ type: 'json_schema', json_schema: { name: 'result', schema: FINDING, strict: true } });
      expect(JSON.stringify(body.tools)).not.toContain('submit_result');
    }
    // A schema strict mode cannot take goes with strict: false.
    const loose = manager.spawn({
      task: `${RESEARCH_TASK} (loose)`,
      label: 'loose',
      outputSchema: { type: 'object', properties: { file: { type: 'string' } } },
    });
    expect((await ended(manager, loose.id)).data).toEqual({ file: expect.any(String) });
    const format = bodiesOf(sim, `${RESEARCH_TASK} (loose)`)[0]?.response_format as { json_schema: { strict: boolean } };
    expect(format.json_schema.strict).toBe(false);
  });

  it("per agent: the agent's outputSchema types its jobs; a spawn's own wins", async () => {
    const sim = await startSim(cleanups);
    const config = makeConfig(
      sim,
      await makeWorkspace(cleanups),
      {},
      {
        agents: { extractor: { description: 'extracts', outputSchema: { type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'] } } },
      },
    );
    const manager = makeManager(config, cleanups);
    const byAgent = manager.spawn({ task: RESEARCH_TASK, label: 'agent', agent: 'extractor' });
    expect((await ended(manager, byAgent.id)).data).toEqual({ answer: expect.stringMatching(/^Found .* for backoff, retry\.$/) });
    const own = manager.spawn({
      task: `${RESEARCH_TASK} again`,
      label: 'own',
      agent: 'extractor',
      outputSchema: { type: 'array', items: { type: 'integer' } },
    });
    // A root that is not an object: the tool's parameters wrap it as { result }, the value is unwrapped.
    expect((await ended(manager, own.id)).data).toEqual([1]);
  });

  it.each(['tool', 'response_format'] as const)('%s: a value that misses the schema gets one repair turn with the errors, then it is ok', async (mode) => {
    const sim = await startSim(cleanups);
    const manager = makeManager(makeConfig(sim, await makeWorkspace(cleanups), {}, { structuredOutput: mode }), cleanups);
    const task = `${RESEARCH_TASK} [sim-invalid-result: once]`;
    const { id } = manager.spawn({ task, label: 'repair', outputSchema: { ...FINDING } });
    const record = await ended(manager, id);
    expect(record.status, JSON.stringify(record.error)).toBe('ok');
    expect(record.data).toMatchObject({ file: expect.any(String), lines: 1 });
    // The model was told what was wrong: the request after the bad value carries the validation errors.
    const last = JSON.stringify(bodiesOf(sim, task).at(-1)?.messages);
    expect(last).toContain('does not match the output schema');
    expect(last).toContain('expected string');
  });

  it.each(['tool', 'response_format'] as const)(
    '%s: a value that misses the schema twice fails the job RESULT_INVALID, keeping the last text',
    async (mode) => {
      const sim = await startSim(cleanups);
      const manager = makeManager(makeConfig(sim, await makeWorkspace(cleanups), {}, { structuredOutput: mode }), cleanups);
      const task = `${RESEARCH_TASK} [sim-invalid-result: always]`;
      const { id } = manager.spawn({ task, label: 'invalid', outputSchema: { ...FINDING } });
      const record = await ended(manager, id);
      expect(record.status).toBe('failed');
      expect(record.error?.code).toBe('RESULT_INVALID');
      expect(record.error?.message).toMatch(/after one repair turn[\s\S]*file/);
      expect(record.data).toBeUndefined();
      // The last (bad) value is kept as the text: its first field has the wrong type.
      expect(JSON.parse(record.resultText ?? '')).toMatchObject({ file: 12345 });
      // Exactly one repair: two values were offered, no third.
      const offers = bodiesOf(sim, task).filter((body) => JSON.stringify(body.messages).includes('does not match the output schema'));
      expect(offers).toHaveLength(1);
    },
  );

  it('a bad schema is refused at spawn and at config load, naming the field', () => {
    const config = parseConfig({ workspaceRoot: '/tmp', baseUrl: 'http://127.0.0.1:1/v1' });
    const manager = new BackgroundManager({ config });
    cleanups.add(() => manager.close({ timeoutMs: 1_000 }));
    expect(() => manager.spawn({ task: 't', label: 'l', outputSchema: { type: 'objekt' } })).toThrow(
      /outputSchema: not a usable JSON Schema: Unsupported type: objekt/,
    );
    expect(() => manager.spawn({ task: 't', label: 'l', outputSchema: 'a string' as never })).toThrow(/outputSchema/);
    expect(() => manager.spawn({ task: 't', label: 'l', outputSchema: { properties: {} } })).toThrow(/outputSchema: a JSON Schema with a "type"/);
    expect(() => parseConfig({ workspaceRoot: '/tmp', agents: { x: { description: 'd', outputSchema: { type: 'nope' } } } })).toThrow(ConfigError);
    expect(() => parseConfig({ workspaceRoot: '/tmp', agents: { x: { description: 'd', outputSchema: { type: 'nope' } } } })).toThrow(
      /agents\.x\.outputSchema.*Unsupported type: nope/,
    );
  });

  it('data survives a durable ledger reopen, and is in the delivered record', async () => {
    const sim = await startSim(cleanups);
    const file = ledgerFile(cleanups);
    const config = makeConfig(sim, await makeWorkspace(cleanups), {}, { ledger: { path: file } });
    const firstStore = openSqliteLedger(file);
    const first = watchManager(new BackgroundManager({ config, store: firstStore.jobs('s') }));
    const { id } = first.spawn({ task: RESEARCH_TASK, label: 'durable', outputSchema: { ...FINDING } });
    const data = (await ended(first, id)).data;
    expect(data).toMatchObject({ lines: 1 });
    await first.close({ timeoutMs: 2_000 });
    firstStore.close();
    const store = openSqliteLedger(file);
    cleanups.add(() => store.close());
    const second = watchManager(new BackgroundManager({ config, store: store.jobs('s') }));
    cleanups.add(() => second.close({ timeoutMs: 2_000 }));
    expect(second.get(id)?.data).toEqual(data);
    const [delivered] = new Deliveries(second).drain(1);
    expect(delivered?.data).toEqual(data);
  });
});
