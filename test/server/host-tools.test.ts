/**
 * Issue 34: `startForkpoolServer({ tools })` puts host tools in the catalog of the server's
 * manager and of every session: a job posted to /v1/jobs calls one (it runs on the server's main
 * thread), and a session's parent loop calls it too. Real server, pool and threads, scripted sim.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { tool } from '../../src/shared/tool-contract.js';
import { useCleanup } from '../helpers/cleanup.js';
import { toolMessagesOf } from '../helpers/requests.js';
import { startTestServer } from '../helpers/server.js';

const cleanup = useCleanup();
const lookup = tool({
  name: 'lookup_order',
  description: 'Looks an order up.',
  parameters: z.object({ id: z.number() }),
  run: ({ id }) => `order ${id} shipped`,
});
const lookupCall = (id: number) => ({ toolCalls: [{ name: 'lookup_order', arguments: JSON.stringify({ id }), id: `c${id}` }] });

describe('startForkpoolServer({ tools })', () => {
  it("a job posted to /v1/jobs calls the host tool; so does a session's parent", async () => {
    const { api, sim } = await startTestServer(
      cleanup,
      { tools: ['read_file', 'lookup_order'], background: { maxDepth: 0 } },
      { script: [lookupCall(7), { content: 'job done' }, lookupCall(8), { content: 'session done' }], latencyMs: 0 },
      { tools: [lookup] },
    );
    const posted = await api('/v1/jobs', { json: { task: 'look order 7 up' } });
    expect(posted.status).toBe(202);
    const { jobs } = (await posted.json()) as { jobs: Array<{ id: string }> };
    const result = await api(`/v1/jobs/${jobs[0]?.id}/result?wait=60`);
    expect(await result.json()).toMatchObject({ status: 'ok', resultText: 'job done' });
    expect(toolMessagesOf(sim.requests[1]?.body)).toEqual(['order 7 shipped']);

    const { id } = (await (await api('/v1/sessions', { method: 'POST' })).json()) as { id: string };
    const turn = await api(`/v1/sessions/${id}/messages`, { json: { input: 'look order 8 up' } });
    expect(turn.status).toBe(200);
    expect(await turn.text()).toContain('session done');
    expect(toolMessagesOf(sim.requests[3]?.body)).toEqual(['order 8 shipped']);
  }, 90_000);
});
