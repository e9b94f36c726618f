/**
 * Issue 34 §4: a server that is down, hangs, crashes mid-call, floods notifications, answers
 * 10 MB or lists a schema with 10,000 properties gives that call (or that tool) a clear error
 * and nothing else: the hub and the other servers carry on. The hostile server is
 * test/fixtures/mcp/hostile-server.mjs (raw JSON-RPC over stdio). Invariants, not time windows.
 */
import { spawn } from 'node:child_process';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { McpHub, mcpToolSources } from '../../../src/main/tools/mcp/index.js';
import { MCP_LIMITS } from '../../../src/main/tools/mcp/limits.js';
import { AbortError, ToolError } from '../../../src/shared/errors.js';
import { mcpServersSchema } from '../../../src/shared/mcp-config.js';
import { useCleanup, waitFor } from '../../helpers/index.js';
import { callContext, HOSTILE_BIN, HOSTILE_HTTP_BIN, processesWith } from '../../helpers/mcp.js';

const cleanup = useCleanup();

async function startHub(input: unknown, outputMaxChars?: number) {
  const hub = await McpHub.start(mcpServersSchema.parse(input), outputMaxChars === undefined ? {} : { outputMaxChars });
  cleanup.add(() => hub.close());
  return hub;
}

const hostile = (extra: Record<string, unknown> = {}) => ({ command: process.execPath, args: [HOSTILE_BIN], ...extra });

/** Calls a hub tool directly; an MCP tool answers text. */
async function run(hub: McpHub, name: string, args: unknown = {}, signal?: AbortSignal): Promise<string> {
  const found = hub.tools().find((t) => t.name === name);
  if (found === undefined) throw new Error(`no tool ${name}`);
  const answer = await found.run(args, callContext(signal));
  if (typeof answer !== 'string') throw new Error(`${name} answered ${typeof answer}, not text`);
  return answer;
}

describe('McpHub against hostile servers', () => {
  it('a server down at start: its tools absent, a clear status; the other server works', async () => {
    const hub = await startHub({ gone: { command: '/nonexistent/fp-mcp-server' }, ok: hostile() });
    expect(hub.tools().some((t) => t.name.startsWith('mcp__gone__'))).toBe(false);
    expect(await run(hub, 'mcp__ok__echo', { message: 'still here' })).toBe('echo: still here');
    const gone = hub.status().find((s) => s.name === 'gone');
    expect(gone).toMatchObject({ state: 'restarting', tools: 0 });
    expect(gone?.lastError).toMatch(/could not connect: .*ENOENT/);
    expect(hub.status().find((s) => s.name === 'ok')).toMatchObject({ state: 'up' });
  });

  it('a server that stays down is one warning, not one per retry (the retries are debug lines)', async () => {
    const lines: Array<{ level: string; msg: string }> = [];
    const logger = pino({ level: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line) as { level: string; msg: string }) });
    const hub = await McpHub.start(mcpServersSchema.parse({ gone: { command: '/nonexistent/fp-mcp-server' } }), { logger });
    cleanup.add(() => hub.close());
    // Three retries at least (250 ms, then about 500 and 1,000: the backoff, not a time window).
    await waitFor(() => (hub.status()[0]?.restarts ?? 0) >= 3, 'three restarts of a server that stays down');
    const lost = lines.filter((line) => line.msg === 'mcp: server lost, restarting');
    expect(lost.length).toBeGreaterThanOrEqual(3);
    expect(lost.filter((line) => Number(line.level) >= 40)).toHaveLength(1);
  });

  it('a call that never answers: TOOL_TIMEOUT naming the server and the milliseconds; the server stays up; a cancel aborts at once', async () => {
    const hub = await startHub({ h: hostile({ timeoutMs: 300 }) });
    const error = await run(hub, 'mcp__h__hang').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ToolError);
    expect(error).toMatchObject({ code: 'TOOL_TIMEOUT', toolName: 'mcp__h__hang' });
    expect((error as Error).message).toBe('MCP server "h" did not answer "hang" within 300 ms');
    expect(await run(hub, 'mcp__h__echo', { message: 'after' })).toBe('echo: after');
    // The caller's signal (a job cancelled) ends the call as an abort, not a tool timeout.
    const cancel = new AbortController();
    const pending = run(hub, 'mcp__h__hang', {}, cancel.signal).catch((e: unknown) => e);
    cancel.abort(new Error('job cancelled'));
    expect(await pending).toBeInstanceOf(AbortError);
    expect(hub.status()[0]).toMatchObject({ state: 'up', restarts: 0 });
  });

  it('a server that dies mid-call: that call gets a tool error; the hub restarts it (one process again) and the next call works', async () => {
    const marker = `--fp-mcp-crash-${process.pid}-${Date.now()}`;
    const hub = await startHub({ h: hostile({ args: [HOSTILE_BIN, marker] }) });
    const error = await run(hub, 'mcp__h__crash').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ToolError);
    expect(error).toMatchObject({ code: 'TOOL_FAILED' });
    expect((error as Error).message).toContain('MCP server "h" closed the connection during "crash"');
    // While it restarts, a call is refused with the reason (or, if the restart was quick, answered).
    await waitFor(() => hub.status()[0]?.state === 'up' && hub.status()[0]!.restarts >= 1, 'the server to be restarted');
    expect(await run(hub, 'mcp__h__echo', { message: 'back' })).toBe('echo: back');
    expect(processesWith(marker)).toHaveLength(1);
    await hub.close();
    await waitFor(() => processesWith(marker).length === 0, 'the restarted process to end on close');
  });

  it('a call while the server is restarting is refused with the state and the last error', async () => {
    const hub = await startHub({ h: hostile() });
    await run(hub, 'mcp__h__crash').catch(() => undefined);
    // The loss is seen before the crashed call's error comes back; the restart waits its backoff (at least restartBaseMs / 2).
    expect(hub.status()[0]).toMatchObject({ state: 'restarting', lastError: expect.stringMatching(/^the connection closed/) });
    const error = await run(hub, 'mcp__h__echo', { message: 'x' }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'TOOL_FAILED' });
    expect((error as Error).message).toMatch(/^MCP server "h" is restarting \(the connection closed.*\): "echo" was not called$/);
    await waitFor(() => hub.status()[0]?.state === 'up', 'the restart');
  });

  it('a flood of 20,000 list_changed notifications costs a bounded number of tools/list refreshes', async () => {
    const hub = await startHub({ h: hostile() });
    let changes = 0;
    hub.onChange(() => (changes += 1));
    const started = Date.now();
    expect(await run(hub, 'mcp__h__flood')).toBe('flooded');
    // Let the refresh that may be pending run, then count what the server answered.
    await new Promise((resolve) => setTimeout(resolve, MCP_LIMITS.refreshMinIntervalMs * 3));
    const { listed } = JSON.parse(await run(hub, 'mcp__h__stats')) as { listed: number };
    const elapsed = Date.now() - started;
    // One at start, then at most one refresh per interval (one in flight, one pending), never one per notification.
    expect(listed).toBeLessThanOrEqual(2 + Math.ceil(elapsed / MCP_LIMITS.refreshMinIntervalMs));
    expect(listed).toBeLessThan(100);
    expect(changes).toBe(0);
    expect(hub.status()[0]).toMatchObject({ state: 'up', restarts: 0 });
  });

  it('list_changed with a new tool: the hub lists it and tells its listeners', async () => {
    const hub = await startHub({ h: hostile(), other: hostile() });
    const changed: string[] = [];
    hub.onChange((server) => changed.push(server));
    expect(hub.tools().some((t) => t.name === 'mcp__h__extra')).toBe(false);
    await run(hub, 'mcp__h__add-tool');
    await waitFor(() => hub.tools().some((t) => t.name === 'mcp__h__extra'), 'the new tool');
    expect(changed).toEqual(['h']);
    expect(hub.toolsOf('h').map((t) => t.name)).toContain('mcp__h__extra');
    expect(hub.toolsOf('other').map((t) => t.name)).not.toContain('mcp__other__extra');
  });

  it('a 10 MB answer is capped (head and tail, with the count left out); the server stays up', async () => {
    const hub = await startHub({ h: hostile() }, 30_000);
    const answer = await run(hub, 'mcp__h__huge');
    expect(answer.length).toBeLessThanOrEqual(30_000);
    expect(answer).toMatch(/characters omitted/);
    expect(hub.status()[0]).toMatchObject({ state: 'up', restarts: 0 });
    expect(await run(hub, 'mcp__h__echo', { message: 'ok' })).toBe('echo: ok');
  });

  it('a server that never answers its handshake does not hold up close: the process ends, start() resolves with no tools', async () => {
    const marker = `--fp-mcp-silent-${process.pid}-${Date.now()}`;
    const [source] = mcpToolSources(mcpServersSchema.parse({ h: hostile({ args: [HOSTILE_BIN, '--silent', marker] }) }), {});
    const starting = source!.start();
    await waitFor(() => processesWith(marker).length === 1, 'the server process to start');
    const closing = Date.now();
    await source!.close();
    // Well under the 30 s connect timeout it would otherwise wait for.
    expect(Date.now() - closing).toBeLessThan(MCP_LIMITS.connectTimeoutMs / 3);
    expect(processesWith(marker)).toEqual([]);
    expect(await starting).toEqual([]);
  });

  it('an HTTP answer past 32 MiB fails that call with the bound named; the hub reconnects and the next call works', async () => {
    const child = spawn(process.execPath, [HOSTILE_HTTP_BIN], { stdio: ['ignore', 'pipe', 'inherit'] });
    cleanup.add(() => child.kill('SIGKILL'));
    const port = await new Promise<string>((resolve) => child.stdout.once('data', (chunk: Buffer) => resolve(chunk.toString().trim())));
    const hub = await startHub({ web: { url: `http://127.0.0.1:${port}/mcp` } });
    const error = await run(hub, 'mcp__web__huge').catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'TOOL_FAILED' });
    expect((error as Error).message).toMatch(/^MCP server "web" failed "huge": .*the answer passed 33554432 bytes/);
    await waitFor(() => hub.status()[0]?.state === 'up', 'the reconnect');
    expect(await run(hub, 'mcp__web__echo', { message: 'after' })).toBe('echo: after');
  });

  it('a schema with 10,000 properties, one zod cannot read, a bad name: each tool refused and named in the status; the others are offered', async () => {
    const hub = await startHub({ h: hostile() });
    const names = hub.tools().map((t) => t.name);
    expect(names).not.toContain('mcp__h__wide');
    expect(names).toContain('mcp__h__echo');
    const { refused } = hub.status()[0]!;
    expect(refused).toHaveLength(3);
    expect(refused[0]).toMatch(/^"wide": its input schema is \d+ characters of JSON \(limit 100000\)$/);
    expect(refused[1]).toBe('"unreadable": its input schema cannot be read (Reference not found: #/definitions/missing)');
    expect(refused[2]).toMatch(/^"bad.name": "mcp__h__bad.name" is not a tool name/);
    expect(names).not.toContain('mcp__h__unreadable');
  });
});
