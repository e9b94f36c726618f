/**
 * Issue 34 §4 from the command line: `forkpool fanout` reads `mcpServers` from the config file,
 * connects before its first spawn, and a job calls the server's tool (a scripted sim, the
 * reference server-everything over stdio).
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { useCleanup } from '../helpers/cleanup.js';
import { describeResult, parseJsonLines, runCli } from '../helpers/cli.js';
import { makeWorkspace } from '../helpers/config.js';
import { toolMessagesOf } from '../helpers/requests.js';
import { startSim } from '../helpers/sim.js';
import { EVERYTHING_BIN } from '../helpers/mcp.js';

const cleanup = useCleanup();

describe('forkpool fanout with mcpServers', () => {
  it('the first job spawned is offered the MCP tool and its model reads the answer', async () => {
    const cwd = await makeWorkspace(cleanup);
    const sim = await startSim(cleanup, {
      script: [{ toolCalls: [{ name: 'mcp__everything__echo', arguments: JSON.stringify({ message: 'from the cli' }), id: 'c1' }] }, { content: 'echoed' }],
    });
    writeFileSync(
      path.join(cwd, 'forkpool.config.json'),
      JSON.stringify({
        baseUrl: sim.url,
        mcpServers: { everything: { command: process.execPath, args: [EVERYTHING_BIN, 'stdio'], trusted: true } },
        tools: ['read_file', 'mcp__everything__echo'],
      }),
    );
    writeFileSync(path.join(cwd, 'tasks.jsonl'), `${JSON.stringify({ task: 'echo from the cli', label: 'echo' })}\n`);
    const r = await runCli(['fanout', 'tasks.jsonl'], { cwd, cleanup });
    expect(r.code, describeResult(r)).toBe(0);
    expect(parseJsonLines(r.stdout)).toEqual([expect.objectContaining({ status: 'ok', label: 'echo' })]);
    expect(toolMessagesOf(sim.requests[1]?.body)).toEqual(['Echo: from the cli']);
  });
});

describe('forkpool tools with mcpServers', () => {
  it('lists each server tool with source mcp:<server>, gate and schema; a server that is down is said on stderr', async () => {
    const cwd = await makeWorkspace(cleanup);
    writeFileSync(
      path.join(cwd, 'forkpool.config.json'),
      JSON.stringify({
        mcpServers: { everything: { command: process.execPath, args: [EVERYTHING_BIN, 'stdio'] }, gone: { command: '/nonexistent/fp-mcp-server' } },
        tools: ['read_file', 'mcp__everything__echo'],
      }),
    );
    const r = await runCli(['tools', '--json'], { cwd, cleanup });
    expect(r.code, describeResult(r)).toBe(0);
    const [listing] = parseJsonLines(r.stdout) as Array<{ tools: Array<Record<string, unknown>> }>;
    const echo = listing?.tools.find((t) => t.name === 'mcp__everything__echo');
    expect(echo).toMatchObject({ source: 'mcp:everything', gated: true, offered: true, parameters: { type: 'object', required: ['message'] } });
    expect(listing?.tools.some((t) => String(t.source) === 'mcp:gone')).toBe(false);
    expect(r.stderr).toMatch(/MCP server "gone" is restarting: could not connect: .*ENOENT/);
  });
});
