/**
 * Issue 34: a BullMQ worker runs only the tools its own config declares. `forkpool worker` (a real
 * process) loads its config's `toolModules`; a producer on the bullmq executor spawns a job naming
 * that module's tool, and the job's model reads the tool's answer; a job whose spawn names a tool
 * the worker's config lacks fails with TOOL_NOT_ALLOWED naming it, and no model request is made.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ended, skipWithoutRedis, startBullmqPair, toolMessagesOf, useCleanup } from '../../helpers/index.js';

const cleanup = useCleanup();
const ORDERS = fileURLToPath(new URL('../../fixtures/tool-modules/orders-tools.mjs', import.meta.url));
const ADMIN = fileURLToPath(new URL('../../fixtures/tool-modules/admin-tools.mjs', import.meta.url));

describe.skipIf(skipWithoutRedis())('bullmq: a worker runs only the tools its own config declares', { timeout: 180_000 }, () => {
  it("a module tool of the worker's config runs in the job; a tool it lacks fails the job with the reason", async () => {
    // The producer knows both modules' tools; the worker only the orders one.
    const { sim, manager } = await startBullmqPair(cleanup, {
      sim: { script: [{ toolCalls: [{ name: 'lookup_order', arguments: JSON.stringify({ id: 7 }), id: 'c1' }] }, { content: 'order 7 has shipped' }] },
      worker: { concurrency: 1, config: { toolModules: [ORDERS], tools: ['read_file', 'lookup_order'] } },
      producer: { config: { toolModules: [ORDERS, ADMIN], tools: ['read_file', 'lookup_order', 'delete_order'] } },
    });

    const looked = manager.spawn({ task: 'has order 7 shipped?', label: 'lookup', tools: ['lookup_order'] });
    expect(await ended(manager, looked.id)).toMatchObject({ status: 'ok', resultText: 'order 7 has shipped' });
    expect(toolMessagesOf(sim.requests[1]?.body)).toEqual(['order 7 shipped']);

    const requestsBefore = sim.requests.length;
    for (const spec of [{ tools: ['delete_order'] }, { extras: ['delete_order'] }]) {
      const refused = manager.spawn({ task: 'delete order 8', label: 'delete', ...spec });
      const record = await ended(manager, refused.id);
      expect(record).toMatchObject({ status: 'failed', error: { code: 'TOOL_NOT_ALLOWED' } });
      expect(record.error?.message).toContain(
        `the job names tool "delete_order", which this worker's configuration does not offer (its tools: read_file, lookup_order)`,
      );
    }
    expect(sim.requests.length).toBe(requestsBefore);
  });
});
