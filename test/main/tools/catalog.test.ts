/**
 * The tool contract's checks (`tool()`), and the one catalog: a name in config `tools`,
 * `grantedTools`, an agent's `tools`, a spawn's `tools` and `extras` must be a catalog name (an
 * unknown one is TOOL_UNKNOWN and nothing starts); a clash is a config error naming both.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { BackgroundManager } from '../../../src/main/jobs/manager.js';
import { ConfigError, ForkpoolError, JobError } from '../../../src/shared/errors.js';
import { tool, type ToolDefinition } from '../../../src/shared/tool-contract.js';
import { skipWithoutRedis, testRedis } from '../../helpers/redis.js';
import { ended, makeConfig, makeWorkspace, startSim, toolNames, useCleanup, watchManager } from '../../helpers/index.js';

const cleanups = useCleanup();

const lookup = tool({
  name: 'lookup_order',
  description: 'Looks an order up.',
  parameters: z.object({ id: z.number() }),
  run: ({ id }) => `order ${id}`,
});

describe('tool(): the contract', () => {
  const run = () => 'ok';
  const bad = (def: unknown) => () => tool(def as Parameters<typeof tool>[0]);
  it('names the tool, the field, what it expected and what it received', () => {
    expect(bad({ name: 'has space', description: 'd', parameters: z.object({}), run })).toThrow(
      /tool "has space": name: expected a name matching \^\[a-zA-Z0-9_-\]\{1,64\}\$, received "has space"/,
    );
    expect(bad({ name: 'x'.repeat(65), description: 'd', parameters: z.object({}), run })).toThrow(/name: expected a name matching/);
    expect(bad({ name: 'ok', description: '', parameters: z.object({}), run })).toThrow(/tool "ok": description: expected a non-empty string/);
    expect(bad({ name: 'ok', description: 'd', parameters: z.string(), run })).toThrow(
      /tool "ok": parameters: expected a schema of an object \(type: "object"\), received type "string"/,
    );
    expect(bad({ name: 'ok', description: 'd', parameters: { type: 'array' }, run })).toThrow(/parameters: expected a schema of an object/);
    expect(bad({ name: 'ok', description: 'd', parameters: 'object', run })).toThrow(
      /parameters: expected a zod schema or a JSON Schema object, received "object"/,
    );
    expect(bad({ name: 'ok', description: 'd', parameters: z.object({}), run, timeoutMs: -1 })).toThrow(/timeoutMs: expected an integer from 1/);
    expect(bad({ name: 'ok', description: 'd', parameters: z.object({}), run, gated: 'yes' })).toThrow(/gated: expected true or false, received "yes"/);
    expect(bad({ name: 'ok', description: 'd', parameters: z.object({}) })).toThrow(/run: expected a function/);
    expect(bad({ name: 'ok', description: 'd', parameters: z.object({}), run })).not.toThrow();
    try {
      tool({ name: 'bad name', description: 'd', parameters: z.object({}), run });
    } catch (error) {
      expect(error).toBeInstanceOf(ForkpoolError);
      expect((error as ForkpoolError).code).toBe('CONFIG_INVALID');
    }
  });
});

describe('the catalog', () => {
  it('a config naming a tool no catalog has is a config error at the manager, naming the field', async () => {
    const root = await makeWorkspace(cleanups);
    const make =
      (extra: object, tools: ToolDefinition[] = [lookup]) =>
      () =>
        new BackgroundManager({ config: makeConfig(undefined, root, {}, { apiKey: 'k', ...extra }), tools });
    expect(make({ tools: ['read_file', 'lookup_orders'] })).toThrow(ConfigError);
    expect(make({ tools: ['read_file', 'lookup_orders'] })).toThrow(/config field "tools\[1\]".*"lookup_orders" \(TOOL_UNKNOWN\)/);
    expect(make({ grantedTools: ['drop_tables'] })).toThrow(/grantedTools\[0\].*"drop_tables"/);
    // A host tool clashing with a built-in, and two host tools of one name.
    const clash = tool({ name: 'grep', description: 'mine', parameters: z.object({}), run: () => '' });
    expect(make({}, [clash])).toThrow(/tool "grep" \(host\) clashes with the builtin tool of the same name/);
    expect(make({}, [lookup, lookup])).toThrow(/tool "lookup_order" \(host\) clashes with the host tool/);
  });

  it('spawn tools and extras take catalog names; an unknown one is TOOL_UNKNOWN and nothing starts', async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups, { script: [{ content: 'done' }] });
    const config = makeConfig(sim, root, {}, { tools: ['read_file', 'grep'] });
    const manager = watchManager(new BackgroundManager({ config, tools: [lookup] }));
    cleanups.add(() => manager.close({ timeoutMs: 2_000 }));
    const refused = (request: object) => {
      try {
        manager.spawn({ task: 't', label: 'l', ...request });
      } catch (error) {
        return error as JobError;
      }
      throw new Error('the spawn was accepted');
    };
    expect(refused({ extras: ['lookup_orders'] })).toMatchObject({ code: 'TOOL_UNKNOWN', message: expect.stringContaining('extras: "lookup_orders"') });
    expect(refused({ tools: ['no_such'] })).toMatchObject({ code: 'TOOL_UNKNOWN' });
    // A host tool the caller was not given may not come in through `tools` (a narrowing), only through `extras`.
    expect(refused({ tools: ['lookup_order'] })).toMatchObject({ code: 'TOOL_NOT_ALLOWED' });
    expect(manager.jobs()).toHaveLength(0);

    const job = manager.spawn({ task: 'with extras', label: 'extras', tools: ['grep'], extras: ['lookup_order'] });
    const record = await ended(manager, job.id);
    sim.assertScriptDone();
    expect(record.tools).toEqual(['grep', 'lookup_order']);
    expect(toolNames(sim.requests[0]!).filter((name) => name !== 'report_alert')).toEqual(['grep', 'lookup_order']);
  });
});

describe.skipIf(skipWithoutRedis())('host tools and remote workers', { timeout: 60_000 }, () => {
  it('a BullMQ manager refuses a spawn offering a host tool, with the reason, and starts nothing', async () => {
    const redis = await testRedis(cleanups);
    const root = await makeWorkspace(cleanups);
    const config = makeConfig(
      undefined,
      root,
      {},
      { baseUrl: 'http://127.0.0.1:9/v1', executor: 'bullmq', redisUrl: redis.url, bullmq: { queue: redis.queue } },
    );
    const manager = watchManager(new BackgroundManager({ config, tools: [lookup] }));
    cleanups.add(() => manager.close({ timeoutMs: 2_000 }));
    let refusal: JobError | undefined;
    try {
      manager.spawn({ task: 'look order 7 up', label: 'remote', extras: ['lookup_order'] });
    } catch (error) {
      refusal = error as JobError;
    }
    expect(refusal).toMatchObject({ code: 'TOOL_NOT_ALLOWED' });
    expect(refusal?.message).toMatch(/lookup_order run on this host's main thread, and this job would run on a remote worker/);
    expect(manager.jobs()).toHaveLength(0);
  });
});
