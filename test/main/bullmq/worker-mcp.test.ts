/**
 * Issue 34: `forkpool worker` (a real process) starts the MCP servers of its OWN config before it
 * takes jobs. A producer on the bullmq executor, with no MCP server of its own, spawns a job naming
 * `mcp__everything__echo`: the job's thread on the worker calls it, the worker's main thread runs
 * it on its server, and the job's model reads the echo. A job naming a server the worker lacks
 * fails with TOOL_NOT_ALLOWED naming the tool, and no model request is made.
 */
import { describe, expect, it } from 'vitest';
import { ended, skipWithoutRedis, startBullmqPair, toolMessagesOf, useCleanup } from '../../helpers/index.js';
import { EVERYTHING_BIN } from '../../helpers/mcp.js';

const cleanup = useCleanup();
const everything = { command: process.execPath, args: [EVERYTHING_BIN, 'stdio'], trusted: true };

describe.skipIf(skipWithoutRedis())("bullmq: a worker's own MCP servers", { timeout: 180_000 }, () => {
  it("a job naming an MCP tool of the worker's config gets its answer; one naming a server the worker lacks fails with the reason", async () => {
    // The producer has no MCP server: it cannot know the worker's, so the worker decides.
    const { sim, worker, manager } = await startBullmqPair(cleanup, {
      sim: {
        script: [
          { toolCalls: [{ name: 'mcp__everything__echo', arguments: JSON.stringify({ message: 'from the worker' }), id: 'c1' }] },
          { content: 'echoed' },
        ],
      },
      worker: { concurrency: 1, config: { mcpServers: { everything }, tools: ['read_file', 'mcp__everything__echo'] } },
    });

    const echoed = manager.spawn({ task: 'echo "from the worker"', label: 'echo', extras: ['mcp__everything__echo'] });
    expect(await ended(manager, echoed.id), worker.cli.stderr()).toMatchObject({ status: 'ok', resultText: 'echoed' });
    expect(toolMessagesOf(sim.requests[1]?.body)).toEqual(['Echo: from the worker']);

    const requestsBefore = sim.requests.length;
    const refused = manager.spawn({ task: 'search', label: 'search', extras: ['mcp__github__search'] });
    const record = await ended(manager, refused.id);
    expect(record).toMatchObject({ status: 'failed', error: { code: 'TOOL_NOT_ALLOWED' } });
    expect(record.error?.message).toContain(
      `the job names tool "mcp__github__search", which this worker's configuration does not offer (its tools: read_file, mcp__everything__echo)`,
    );
    expect(sim.requests.length).toBe(requestsBefore);
  });
});
