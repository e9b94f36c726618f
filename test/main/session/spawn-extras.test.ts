/**
 * Issue 34: the parent model's spawn_background_agent takes `extras`, catalog tools added to the
 * job's set. In a real session and pool on a scripted sim: a host tool the parent's config does not
 * list reaches the job (its model is offered it, its record lists it); an unknown name is a tool
 * error naming TOOL_UNKNOWN and nothing starts.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { AgentSession } from '../../../src/main/session/agent-session.js';
import { tool } from '../../../src/shared/tool-contract.js';
import { ended, makeConfig, makeWorkspace, messagesOf, startSim, toolMessagesOf, toolNames, toolSchema, useCleanup } from '../../helpers/index.js';

const cleanups = useCleanup();

const lookup = tool({ name: 'lookup_order', description: 'Looks an order up.', parameters: z.object({ id: z.number() }), run: ({ id }) => `order ${id}` });
const spawnCall = (args: Record<string, unknown>, id: string) => ({ name: 'spawn_background_agent', arguments: JSON.stringify(args), id });

describe("the parent's spawn_background_agent extras", () => {
  it('adds a catalog tool to the job; an unknown name is a TOOL_UNKNOWN tool error and starts nothing', async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups, {
      script: [
        {
          toolCalls: [
            spawnCall({ task: 'look order 7 up', label: 'with extras', extras: ['lookup_order'] }, 'ok1'),
            spawnCall({ task: 'look order 8 up', label: 'unknown extras', extras: ['lookup_orders'] }, 'bad1'),
          ],
        },
        // The parent's answer and the job's only turn, in either order; then the parent's follow-up.
        { content: 'done' },
        { content: 'done' },
        { content: 'done' },
      ],
    });
    const config = makeConfig(sim, root, {}, { tools: ['read_file', 'grep'] });
    const session = new AgentSession({ config, closeExecutor: true, tools: [lookup] });
    cleanups.add(() => session.close({ timeoutMs: 2_000 }));
    await session.submit('delegate the lookups');

    const first = sim.requests[0];
    if (!first) throw new Error('no request');
    expect(toolSchema(first, 'spawn_background_agent').properties.extras).toMatchObject({ type: 'array' });
    expect(toolNames(first)).not.toContain('lookup_order');
    const answers = toolMessagesOf(sim.requests.find((r) => messagesOf(r).some((m) => m.role === 'tool'))?.body);
    expect(answers[1]).toMatch(/TOOL_UNKNOWN/);
    expect(answers[1]).toContain('extras: "lookup_orders"');

    const jobs = session.manager.jobs();
    expect(jobs.map((j) => j.label)).toEqual(['with extras']);
    const job = await ended(session.manager, jobs[0]!.id);
    expect(job.tools).toContain('lookup_order');
    const jobRequest = sim.requests.find((r) => messagesOf(r).find((m) => m.role === 'user')?.content === 'look order 7 up');
    expect(jobRequest && toolNames(jobRequest)).toEqual(expect.arrayContaining(['read_file', 'grep', 'lookup_order']));
  }, 60_000);
});
