/**
 * Issue 34 §4: the MCP hub against servers nobody here wrote, installed from the npm registry:
 * `@modelcontextprotocol/server-everything` over stdio and over streamable HTTP, and
 * `@modelcontextprotocol/server-filesystem` over stdio. One connection per server, tools named
 * `mcp__<server>__<tool>` with the server's JSON Schema, gated unless trusted, secrets redacted,
 * processes ended on close. Invariants only, no wall-clock windows.
 */
import { mkdtempSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { McpHub } from '../../../src/main/tools/mcp/index.js';
import { ForkpoolError } from '../../../src/shared/errors.js';
import { configSchema } from '../../../src/shared/config-schema.js';
import { mcpServersSchema, type McpServersConfig } from '../../../src/shared/mcp-config.js';
import { useCleanup, waitFor } from '../../helpers/index.js';
import { callContext, EVERYTHING_BIN, FILESYSTEM_BIN, processesWith, startEverythingHttp } from '../../helpers/mcp.js';

const cleanup = useCleanup();

const servers = (input: unknown): McpServersConfig => mcpServersSchema.parse(input);

async function startHub(input: unknown, options: Parameters<typeof McpHub.start>[1] = {}) {
  const hub = await McpHub.start(servers(input), options);
  cleanup.add(() => hub.close());
  return hub;
}

function tool(hub: McpHub, name: string) {
  const found = hub.tools().find((t) => t.name === name);
  if (found === undefined) throw new Error(`no tool ${name}; status: ${JSON.stringify(hub.status())}`);
  return found;
}

describe('McpHub with the reference servers', () => {
  it('server-everything over stdio: its tools as mcp__everything__*, the JSON Schema passed through, gated, and a call answered', async () => {
    const hub = await startHub({ everything: { command: process.execPath, args: [EVERYTHING_BIN, 'stdio'] } });
    const echo = tool(hub, 'mcp__everything__echo');
    expect(echo.gated).toBe(true);
    expect(echo.parameters).toMatchObject({ type: 'object', properties: { message: { type: 'string' } }, required: ['message'] });
    expect(await echo.run({ message: 'hello from a job' }, callContext())).toBe('Echo: hello from a job');
    expect(await tool(hub, 'mcp__everything__get-sum').run({ a: 2, b: 3 }, callContext())).toContain('5');
    expect(hub.status()).toEqual([expect.objectContaining({ name: 'everything', transport: 'stdio', state: 'up', refused: [], restarts: 0 })]);
    for (const t of hub.tools()) expect(t.name).toMatch(/^mcp__everything__[a-zA-Z0-9_-]+$/);
  });

  it('server-everything over streamable HTTP: the same tools, a call answered; trusted: not gated', async () => {
    const { url } = await startEverythingHttp(cleanup);
    const hub = await startHub({ remote: { url, trusted: true, headers: { Authorization: 'Bearer not-a-real-token-1234' } } });
    const echo = tool(hub, 'mcp__remote__echo');
    expect(echo.gated).toBe(false);
    expect(await echo.run({ message: 'over http' }, callContext())).toBe('Echo: over http');
    expect(hub.status()).toEqual([expect.objectContaining({ name: 'remote', transport: 'http', state: 'up' })]);
  });

  it('an HTTP server that goes away: a call fails with the reason; when it is back the hub reconnects and calls work', async () => {
    const first = await startEverythingHttp(cleanup);
    const hub = await startHub({ remote: { url: first.url } });
    expect(hub.status()[0]).toMatchObject({ state: 'up' });
    await first.kill();
    const error = await Promise.resolve()
      .then(() => tool(hub, 'mcp__remote__echo').run({ message: 'anyone?' }, callContext()))
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'TOOL_FAILED' });
    expect((error as Error).message).toMatch(/^MCP server "remote" failed "echo": /);
    expect(hub.status()[0]).toMatchObject({ state: 'restarting', lastError: expect.stringMatching(/^a call failed without an answer/) });
    await startEverythingHttp(cleanup, first.port);
    await waitFor(() => hub.status()[0]?.state === 'up', 'the hub to reconnect', { timeoutMs: 30_000 });
    expect(await tool(hub, 'mcp__remote__echo').run({ message: 'back' }, callContext())).toBe('Echo: back');
  });

  it('server-filesystem over stdio: reads a file in the folder it was given', async () => {
    const folder = realpathSync(mkdtempSync(join(tmpdir(), 'fp-mcp-fs-')));
    writeFileSync(join(folder, 'notes.txt'), 'forty-two lines of notes\n');
    const hub = await startHub({ files: { command: process.execPath, args: [FILESYSTEM_BIN, folder] } });
    expect(await tool(hub, 'mcp__files__list_directory').run({ path: folder }, callContext())).toContain('[FILE] notes.txt');
    expect(await tool(hub, 'mcp__files__read_text_file').run({ path: join(folder, 'notes.txt') }, callContext())).toContain('forty-two lines of notes');
    // The server's own refusal (a path outside its folder) is that call's tool error, and the server carries on.
    await expect(tool(hub, 'mcp__files__read_text_file').run({ path: '/etc/passwd' }, callContext())).rejects.toMatchObject({ code: 'TOOL_FAILED' });
    expect(hub.status()[0]?.state).toBe('up');
  });

  it('a server env value never reaches the answer, the status or a log line', async () => {
    const secret = 'mcp-secret-Zq81-value-7731';
    const lines: string[] = [];
    const logger = pino(
      { level: 'debug' },
      new Writable({
        write(chunk: Buffer, _encoding, done) {
          lines.push(chunk.toString());
          done();
        },
      }),
    );
    // get-env answers with the server's whole environment: the secret is in it.
    const hub = await startHub({ everything: { command: process.execPath, args: [EVERYTHING_BIN, 'stdio'], env: { SERVICE_TOKEN: secret } } }, { logger });
    const answer = JSON.stringify(await tool(hub, 'mcp__everything__get-env').run({}, callContext()));
    expect(answer).toContain('SERVICE_TOKEN');
    expect(answer).toContain('[REDACTED]');
    expect(answer).not.toContain(secret);
    expect(answer).not.toContain(secret.slice(0, 12));
    expect(JSON.stringify(hub.status())).not.toContain(secret);
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.join('')).not.toContain(secret);
    // Every configured secret is redacted wherever the config's secrets are (transcripts, the tool loop).
    expect(configSchema.shape.mcpServers.parse({ a: { command: 'x', env: { SERVICE_TOKEN: secret } } })).toBeDefined();
  });

  it('one process per server, ended on close', async () => {
    const marker = `--fp-mcp-marker-${process.pid}-${Date.now()}`;
    const hub = await McpHub.start(servers({ everything: { command: process.execPath, args: [EVERYTHING_BIN, 'stdio', marker] } }));
    expect(processesWith(marker)).toHaveLength(1);
    // More calls, same single process.
    await Promise.all([1, 2, 3].map(async (n) => tool(hub, 'mcp__everything__echo').run({ message: `m${n}` }, callContext())));
    expect(processesWith(marker)).toHaveLength(1);
    await hub.close();
    await waitFor(() => processesWith(marker).length === 0, 'the server process to end');
    expect(hub.tools()).toEqual([]);
  });

  it('no servers: nothing loaded, no tools', async () => {
    let loaded = 0;
    const hub = await McpHub.start(servers({}), {
      loadSdk: () => {
        loaded += 1;
        return Promise.reject(new Error('not used'));
      },
    });
    expect(loaded).toBe(0);
    expect(hub.tools()).toEqual([]);
    await hub.close();
  });

  it('the SDK missing: PACKAGE_MISSING naming @modelcontextprotocol/client and the install command', async () => {
    const missing = Object.assign(new Error("Cannot find package '@modelcontextprotocol/client' imported from /x/forkpool/dist/hub.js"), {
      code: 'ERR_MODULE_NOT_FOUND',
    });
    const { loadOptional } = await import('../../../src/main/executors/optional-package.js');
    const failure = await McpHub.start(servers({ a: { command: 'x' } }), {
      loadSdk: () => loadOptional('MCP servers (config "mcpServers")', ['@modelcontextprotocol/client'], () => Promise.reject(missing)),
    }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(ForkpoolError);
    expect(failure).toMatchObject({ code: 'PACKAGE_MISSING' });
    expect((failure as Error).message).toContain('npm install @modelcontextprotocol/client@^2.4.0');
  });
});

describe('mcpServers in the config', () => {
  it('takes stdio and http servers, top level and per agent, and names the field of a bad one', () => {
    const config = configSchema.parse({
      workspaceRoot: '/tmp',
      mcpServers: {
        github: { command: 'npx', args: ['-y', 'x'], env: { GH: 'token' } },
        docs: { url: 'http://127.0.0.1:3001/mcp', headers: { Authorization: 'Bearer abc' } },
      },
      agents: { helper: { description: 'helps', mcpServers: { notes: { command: 'node', trusted: true, timeoutMs: 5_000 } } } },
    });
    expect(config.mcpServers.github).toMatchObject({ command: 'npx', trusted: false, timeoutMs: 60_000 });
    expect(config.agents.helper?.mcpServers?.notes).toMatchObject({ trusted: true, timeoutMs: 5_000 });
    const bad = configSchema.safeParse({ workspaceRoot: '/tmp', mcpServers: { 'bad name!': { command: 'x' } } });
    expect(bad.success).toBe(false);
    expect(JSON.stringify(bad.error?.issues)).toContain('mcpServers');
    expect(configSchema.safeParse({ workspaceRoot: '/tmp', mcpServers: { a: { command: 'x', url: 'http://x' } } }).success).toBe(false);
  });
});
