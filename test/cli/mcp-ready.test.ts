/**
 * Issue 34: `forkpool chat` and `forkpool serve` connect the config's MCP servers before their
 * first job, as `run` and `fanout` do: a job started at once is offered the server's tools, and
 * a server that is down is one line on stderr while the rest works.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { useCleanup } from '../helpers/cleanup.js';
import { describeResult, runCli } from '../helpers/cli.js';
import { makeWorkspace } from '../helpers/config.js';
import { toolMessagesOf } from '../helpers/requests.js';
import { startSim } from '../helpers/sim.js';
import { EVERYTHING_BIN } from '../helpers/mcp.js';
import { startTestServer } from '../helpers/server.js';

const cleanup = useCleanup();
const echoCall = { toolCalls: [{ name: 'mcp__everything__echo', arguments: JSON.stringify({ message: 'at once' }), id: 'c1' }] };
const everything = { command: process.execPath, args: [EVERYTHING_BIN, 'stdio'], trusted: true };

describe('forkpool chat with mcpServers', () => {
  it('a job started on the first line is offered the MCP tool; a server that is down is said on stderr', async () => {
    const cwd = await makeWorkspace(cleanup);
    // The job's two model calls, then the parent's turn on its result.
    const sim = await startSim(cleanup, { script: [echoCall, { content: 'echoed' }, { content: 'noted' }] });
    writeFileSync(
      path.join(cwd, 'forkpool.config.json'),
      JSON.stringify({
        baseUrl: sim.url,
        mcpServers: { everything, gone: { command: '/nonexistent/fp-mcp-server' } },
        tools: ['read_file', 'mcp__everything__echo'],
      }),
    );
    const r = await runCli(['chat'], { cwd, cleanup, input: '/bg start echo at once\n', timeoutMs: 120_000 });
    expect(r.code, describeResult(r)).toBe(0);
    expect(toolMessagesOf(sim.requests[1]?.body), describeResult(r)).toEqual(['Echo: at once']);
    // The manager's logger names the server and the reason; the chat went on without it.
    // A human log line on a piped stderr: its fields after the message, the error on a line of its own.
    expect(r.stderr).toMatch(/"server":"gone"/);
    expect(r.stderr).toMatch(/error: "could not connect: spawn \/nonexistent\/fp-mcp-server ENOENT"/);
  }, 150_000);
});

describe('startForkpoolServer with mcpServers', () => {
  it('a job posted as soon as the server listens is offered the MCP tool', async () => {
    const { api, sim } = await startTestServer(
      cleanup,
      { mcpServers: { everything }, tools: ['read_file', 'mcp__everything__echo'] },
      { script: [echoCall, { content: 'echoed' }], latencyMs: 0 },
    );
    const posted = await api('/v1/jobs', { json: { task: 'echo at once' } });
    expect(posted.status).toBe(202);
    const { jobs } = (await posted.json()) as { jobs: Array<{ id: string }> };
    const result = await api(`/v1/jobs/${jobs[0]?.id}/result?wait=60`);
    expect(await result.json()).toMatchObject({ status: 'ok' });
    expect(toolMessagesOf(sim.requests[1]?.body)).toEqual(['Echo: at once']);
  }, 90_000);
});
