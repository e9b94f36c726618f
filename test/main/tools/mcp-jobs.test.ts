/**
 * Issue 34 §4 end to end: the config's `mcpServers` start with the manager (one connection per
 * server), their tools join the catalog as `mcp:<server>`, and a job in a real worker thread
 * calls them: the call crosses the thread link, runs on the main thread's hub, and its answer
 * (or its error) is what the job's model reads. Scripted sim; invariants, not time windows.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { BackgroundManager } from '../../../src/main/jobs/manager.js';
import { AgentSession } from '../../../src/main/session/agent-session.js';
import type { ForkpoolConfigInput } from '../../../src/shared/config.js';
import type { ScriptStep } from '../../../src/sim/index.js';
import { ended, makeConfig, makeWorkspace, startSim, toolMessagesOf, toolSchema, useCleanup, waitFor, watchManager } from '../../helpers/index.js';
import { EVERYTHING_BIN, HOSTILE_BIN, processesWith } from '../../helpers/mcp.js';

const cleanups = useCleanup();

const call = (name: string, args: Record<string, unknown>, id: string) => ({ name, arguments: JSON.stringify(args), id });
const everything = (extra: Record<string, unknown> = {}) => ({ command: process.execPath, args: [EVERYTHING_BIN, 'stdio'], ...extra });

async function setUp(script: ScriptStep[], extra: Partial<ForkpoolConfigInput>, background: NonNullable<ForkpoolConfigInput['background']> = {}) {
  const root = await makeWorkspace(cleanups);
  const sim = await startSim(cleanups, { script });
  const config = makeConfig(sim, root, { maxConcurrent: 2, ...background }, extra);
  const manager = watchManager(new BackgroundManager({ config }));
  cleanups.add(() => manager.close({ timeoutMs: 2_000 }));
  // The MCP servers connect in the background; a job offered their tools is spawned once they have.
  await manager.tools.start();
  return { sim, manager };
}

describe('MCP tools in jobs', () => {
  for (const isolation of ['thread', 'shared'] as const) {
    it(`a job calls mcp__everything__echo and its model reads the answer (${isolation} isolation)`, async () => {
      const { sim, manager } = await setUp([{ toolCalls: [call('mcp__everything__echo', { message: 'hello from a job' }, 'c1')] }, { content: 'it echoed' }], {
        mcpServers: { everything: everything() },
        tools: ['read_file', 'mcp__everything__echo'],
        grantedTools: ['mcp__everything__echo'],
        background: { isolation, maxConcurrent: 2 },
      });
      const entry = manager.tools.get('mcp__everything__echo');
      expect(entry).toMatchObject({ source: 'mcp:everything', gated: true });
      const job = manager.spawn({ task: 'echo something', label: 'echo' });
      const record = await ended(manager, job.id);
      sim.assertScriptDone();
      expect(record.status).toBe('ok');
      expect(record.tools).toEqual(['read_file', 'mcp__everything__echo']);
      // The model was shown the server's own JSON Schema.
      expect(toolSchema(sim.requests[0]!, 'mcp__everything__echo')).toMatchObject({
        type: 'object',
        properties: { message: { type: 'string' } },
        required: ['message'],
      });
      expect(toolMessagesOf(sim.requests[1]?.body)).toEqual(['Echo: hello from a job']);
    });
  }

  it('an untrusted server tool needs a grant (the model reads the denial); a trusted server tool runs without one', async () => {
    const { sim, manager } = await setUp(
      [{ toolCalls: [call('mcp__gated__echo', { message: 'a' }, 'c1'), call('mcp__open__echo', { message: 'b' }, 'c2')] }, { content: 'done' }],
      {
        mcpServers: { gated: everything(), open: everything({ trusted: true }) },
        tools: ['mcp__gated__echo', 'mcp__open__echo'],
      },
    );
    const record = await ended(manager, manager.spawn({ task: 'echo twice', label: 'two' }).id);
    expect(record.status).toBe('ok');
    const [denied, answered] = toolMessagesOf(sim.requests[1]?.body);
    expect(denied).toMatch(/^Error: permission denied: "mcp__gated__echo" is not granted/);
    expect(answered).toBe('Echo: b');
  });

  it('a server that dies mid-call: the job model reads a tool error and the job ends ok; the next job calls the restarted server', async () => {
    const { sim, manager } = await setUp(
      [
        { toolCalls: [call('mcp__h__crash', {}, 'c1')] },
        { content: 'the tool failed' },
        { toolCalls: [call('mcp__h__echo', { message: 'again' }, 'c2')] },
        { content: 'it answered' },
      ],
      {
        mcpServers: { h: { command: process.execPath, args: [HOSTILE_BIN], trusted: true } },
        tools: ['mcp__h__crash', 'mcp__h__echo'],
        background: { maxConcurrent: 1 },
      },
    );
    const first = await ended(manager, manager.spawn({ task: 'crash it', label: 'crash' }).id);
    expect(first.status).toBe('ok');
    expect(toolMessagesOf(sim.requests[1]?.body)[0]).toMatch(/^Error: .*MCP server "h" closed the connection during "crash"; it is being restarted/);
    // The restart is the hub's, with backoff: call the tool on the main thread until it answers, then let a second job call it.
    const echo = manager.tools.get('mcp__h__echo')?.definition;
    const ctx = { signal: new AbortController().signal, jobId: 'test', callId: 'test', agent: 'test' };
    let answered: unknown;
    for (let tries = 0; tries < 100 && answered !== 'echo: ping'; tries++) {
      answered = await Promise.resolve(echo?.run({ message: 'ping' }, ctx)).catch(() => new Promise((resolve) => setTimeout(resolve, 100)));
    }
    expect(answered).toBe('echo: ping');
    const second = await ended(manager, manager.spawn({ task: 'echo again', label: 'again' }).id);
    expect(second.status).toBe('ok');
    expect(toolMessagesOf(sim.requests[3]?.body)).toEqual(['echo: again']);
  });

  it('a server env value never reaches the model, even when the server prints its environment', async () => {
    const secret = 'mcp-job-secret-Vb62-value-0917';
    const { sim, manager } = await setUp([{ toolCalls: [call('mcp__everything__get-env', {}, 'c1')] }, { content: 'the environment holds SERVICE_TOKEN' }], {
      mcpServers: { everything: everything({ env: { SERVICE_TOKEN: secret }, trusted: true }) },
      tools: ['mcp__everything__get-env'],
    });
    const record = await ended(manager, manager.spawn({ task: 'show the env', label: 'env' }).id);
    expect(record.status).toBe('ok');
    const sent = toolMessagesOf(sim.requests[1]?.body).join('\n');
    expect(sent).toContain('SERVICE_TOKEN');
    expect(sent).not.toContain(secret);
    // Nor the job's record (its events and tool results) nor the transcript kept of it.
    expect(JSON.stringify(record)).not.toContain(secret);
    const transcript = JSON.stringify(manager.transcript(record.id));
    expect(transcript).toContain('SERVICE_TOKEN');
    expect(transcript).not.toContain(secret);
  });

  it('one process per server for the manager, whatever the jobs; ended on close', async () => {
    const marker = `--fp-mcp-jobs-${process.pid}-${Date.now()}`;
    const script: ScriptStep[] = [];
    for (let i = 0; i < 4; i++) script.push({ toolCalls: [call('mcp__everything__echo', { message: `m${i}` }, `c${i}`)] }, { content: `done ${i}` });
    const { manager } = await setUp(script, {
      mcpServers: { everything: everything({ args: [EVERYTHING_BIN, 'stdio', marker], trusted: true }) },
      tools: ['mcp__everything__echo'],
      background: { maxConcurrent: 1 },
    });
    for (let i = 0; i < 4; i++) expect((await ended(manager, manager.spawn({ task: `echo ${i}`, label: `e${i}` }).id)).status).toBe('ok');
    expect(processesWith(marker)).toHaveLength(1);
    await manager.close({ timeoutMs: 2_000 });
    await waitFor(() => processesWith(marker).length === 0, 'the server process to end with the manager');
  });

  it('a tool of a server that is down is not offered, and the record says so; the job runs with the rest', async () => {
    const { sim, manager } = await setUp([{ toolCalls: [call('mcp__everything__echo', { message: 'still works' }, 'c1')] }, { content: 'done' }], {
      mcpServers: { gone: { command: '/nonexistent/fp-mcp-server' }, everything: everything({ trusted: true }) },
      tools: ['read_file', 'mcp__gone__search', 'mcp__everything__echo'],
    });
    const record = await ended(manager, manager.spawn({ task: 'use what works', label: 'partial' }).id);
    expect(record.status).toBe('ok');
    expect(record.tools).toEqual(['read_file', 'mcp__everything__echo']);
    expect((sim.requests[0]?.body.tools as Array<{ function: { name: string } }>).map((t) => t.function.name)).not.toContain('mcp__gone__search');
    expect(toolMessagesOf(sim.requests[1]?.body)).toEqual(['Echo: still works']);
  });

  it("a stdio server's program inside the workspace is protected: a job cannot rewrite code the host runs at the next restart", async () => {
    const root = await makeWorkspace(cleanups);
    const original = readFileSync(HOSTILE_BIN, 'utf8');
    writeFileSync(path.join(root, 'server.mjs'), original);
    const write = call('write_file', { path: 'server.mjs', content: 'process.exit(9)' }, 'w');
    const edit = call('edit_file', { path: 'server.mjs', old_text: 'let listed = 0;', new_text: 'process.exit(9);' }, 'e');
    const sim = await startSim(cleanups, { script: [{ toolCalls: [write, edit, call('mcp__h__crash', {}, 'c')] }, { content: 'done' }] });
    const config = makeConfig(
      sim,
      root,
      {},
      {
        mcpServers: { h: { command: process.execPath, args: ['server.mjs'], cwd: root, trusted: true } },
        tools: ['write_file', 'edit_file', 'mcp__h__crash', 'mcp__h__echo'],
        grantedTools: ['write_file', 'edit_file'],
      },
    );
    const manager = watchManager(new BackgroundManager({ config }));
    cleanups.add(() => manager.close({ timeoutMs: 2_000 }));
    await manager.tools.start();
    await ended(manager, manager.spawn({ task: 'plant code', label: 'plant' }).id);
    const [wrote, edited] = toolMessagesOf(sim.requests[1]?.body);
    expect(wrote).toMatch(/is protected/);
    expect(edited).toMatch(/is protected/);
    expect(readFileSync(path.join(root, 'server.mjs'), 'utf8')).toBe(original);
  });

  it("serves the parent's own loop too, once the server has connected after the session was built", async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups, {
      script: [{ toolCalls: [call('mcp__everything__echo', { message: 'from the parent' }, 'p1')] }, { content: 'echoed' }],
    });
    const config = makeConfig(sim, root, {}, { mcpServers: { everything: everything({ trusted: true }) }, tools: ['read_file', 'mcp__everything__echo'] });
    const session = new AgentSession({ config, background: false });
    cleanups.add(() => session.close({ timeoutMs: 2_000 }));
    // Built before the server listed its tools: the parent's tools are read again at its turn.
    expect(session.manager.tools.get('mcp__everything__echo')).toBeUndefined();
    await session.manager.tools.start();
    const turn = await session.submit('echo from the parent');
    sim.assertScriptDone();
    expect(turn.answer).toBe('echoed');
    expect(toolMessagesOf(sim.requests[1]?.body)).toEqual(['Echo: from the parent']);
  });

  it('an agent server with the name of a top-level one but other settings is a config error naming both', async () => {
    const root = await makeWorkspace(cleanups);
    const config = makeConfig(
      undefined,
      root,
      {},
      {
        baseUrl: 'http://127.0.0.1:9/v1',
        mcpServers: { docs: everything() },
        agents: { helper: { description: 'helps', mcpServers: { docs: everything({ trusted: true }) } } },
      },
    );
    expect(() => new BackgroundManager({ config })).toThrow(
      /config field "agents\.helper\.mcpServers\.docs": expected the same settings as "mcpServers\.docs"/,
    );
  });
});
