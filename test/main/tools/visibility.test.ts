/**
 * A job's tool set is explicit and visible: its record lists the tools it was offered, and so do
 * `GET /v1/jobs/{id}` and `forkpool jobs show`; `forkpool tools --json` lists the catalog the
 * config gives (built-ins and its modules' tools, with source, gate and schema). `serve` reads
 * `toolModules` from its config.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { BackgroundManager } from '../../../src/main/jobs/manager.js';
import { AgentSession } from '../../../src/main/session/agent-session.js';
import { inspectTools } from '../../../src/main/session/inspect-tools.js';
import { openSqliteLedger } from '../../../src/main/ledger/sqlite-store.js';
import { startForkpoolServer } from '../../../src/server/app.js';
import { tool } from '../../../src/shared/tool-contract.js';
import { ended, makeConfig, makeWorkspace, runCli, startSim, startTestSim, tempWorkspace, useCleanup, watchManager } from '../../helpers/index.js';
import { ledgerFile } from '../../helpers/ledger.js';
import { TOKEN } from '../../helpers/server.js';

const cleanups = useCleanup();
const THREAD_TOOLS = new URL('../../fixtures/tool-modules/thread-tools.mjs', import.meta.url).pathname;

describe('the tools a job was offered', () => {
  it('GET /v1/jobs/{id} lists them: the subset and the extras (serve loads the config’s tool modules)', async () => {
    const { config } = await startTestSim(cleanups, { script: [{ content: 'done' }] }, { toolModules: [THREAD_TOOLS], tools: ['read_file', 'grep'] });
    const server = await startForkpoolServer({ config, token: TOKEN, port: 0 });
    cleanups.add(() => server.close());
    const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
    const created = await fetch(`${server.url}/v1/jobs`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ task: 'count', label: 'c', tools: ['grep'], extras: ['thread_counter'] }),
    });
    expect(created.status).toBe(202);
    const [job] = ((await created.json()) as { jobs: Array<{ id: string }> }).jobs;
    const result = await fetch(`${server.url}/v1/jobs/${job?.id}/result?wait=60`, { headers });
    expect(result.status).toBe(200);
    const detail = (await (await fetch(`${server.url}/v1/jobs/${job?.id}`, { headers })).json()) as { tools: string[] };
    expect(detail.tools).toEqual(['grep', 'thread_counter']);
  });

  it('forkpool jobs show prints them, from the durable ledger', async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups, { script: [{ content: 'done' }] });
    const file = ledgerFile(cleanups);
    const store = openSqliteLedger(file);
    const lookup = tool({ name: 'lookup_order', description: 'Looks an order up.', parameters: z.object({ id: z.number() }), run: () => 'x' });
    const config = makeConfig(sim, root, {}, { tools: ['read_file', 'lookup_order'] });
    const manager = watchManager(new BackgroundManager({ config, tools: [lookup], store: store.jobs('fanout') }));
    const record = await ended(manager, manager.spawn({ task: 'look it up', label: 'look' }).id);
    await manager.close({ timeoutMs: 2_000 });
    store.close();
    expect(record.tools).toEqual(['read_file', 'lookup_order']);

    const text = await runCli(['jobs', 'show', record.id, '--ledger', file]);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain('tools offered: read_file, lookup_order');
    const json = await runCli(['jobs', 'show', record.id, '--ledger', file, '--json']);
    expect(JSON.parse(json.stdout).job.tools).toEqual(['read_file', 'lookup_order']);
  });
});

describe("the parent's check_background_agent", () => {
  it('says which tools the job was offered', async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups, { script: [{ content: 'done' }] });
    const lookup = tool({ name: 'lookup_order', description: 'Looks an order up.', parameters: z.object({ id: z.number() }), run: () => 'x' });
    const config = makeConfig(sim, root, {}, { tools: ['read_file', 'grep'] });
    const session = new AgentSession({ config, tools: [lookup] });
    cleanups.add(() => session.close({ timeoutMs: 2_000 }));
    const job = session.manager.spawn({ task: 'look it up', label: 'look', tools: ['grep'], extras: ['lookup_order'], wave: 99 });
    await ended(session.manager, job.id);
    const check = inspectTools({
      manager: session.manager,
      deliveries: session.deliveries,
      activity: session.activity,
      currentTurn: () => 1,
      cooldownMs: 0,
      resultMaxChars: 2_000,
    }).find((t) => t.name === 'check_background_agent');
    const noContext = { workspaceRoot: '/', limits: {} as never, signal: new AbortController().signal, permissions: { check: async () => false }, env: {} };
    expect(await check?.run({ job_id: job.id }, noContext)).toContain('Tools offered: grep, lookup_order.');
  });
});

describe('forkpool tools', () => {
  it('--json lists the catalog: built-ins and the config’s module tools, with source, gate, schema and whether offered', async () => {
    const dir = tempWorkspace({}, cleanups);
    writeFileSync(path.join(dir, 'forkpool.config.json'), JSON.stringify({ toolModules: [THREAD_TOOLS], tools: ['read_file', 'thread_counter'] }));
    const result = await runCli(['tools', '--json'], { cwd: dir });
    expect(result.code).toBe(0);
    const { tools } = JSON.parse(result.stdout) as { tools: Array<Record<string, unknown>> };
    expect(tools.find((t) => t.name === 'bash')).toMatchObject({ source: 'builtin', gated: true, offered: false });
    expect(tools.find((t) => t.name === 'read_file')).toMatchObject({ source: 'builtin', gated: false, offered: true });
    expect(tools.find((t) => t.name === 'thread_counter')).toMatchObject({
      source: 'module',
      module: THREAD_TOOLS,
      gated: false,
      offered: true,
      parameters: { type: 'object', properties: {}, additionalProperties: false },
    });
    const text = await runCli(['tools'], { cwd: dir });
    expect(text.stdout).toMatch(/^exit_thread_when +module +Waits for a file/m);

    writeFileSync(path.join(dir, 'forkpool.config.json'), JSON.stringify({ toolModules: ['./nowhere.mjs'] }));
    const broken = await runCli(['tools'], { cwd: dir });
    expect(broken.code).toBe(2);
    expect(broken.stderr).toContain(path.join(dir, 'nowhere.mjs'));
  });
});
