/**
 * The bundled entry points (scripts/bundle-library.mjs): what `import 'forkpool'` and its
 * subpaths load through package.json `exports`. Child processes in the repo import the package
 * by its own name (a package may import itself), as a user does; build first.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/cli.js';
import { RESEARCH_TASK, RESEARCH_WORKSPACE_FILES } from '../helpers/config.js';

const workspaces: string[] = [];
afterAll(() => {
  for (const dir of workspaces) rmSync(dir, { recursive: true, force: true });
});

/** Runs `body` as an ES module in the repo, with a research workspace; its last stdout line is JSON. */
function child(body: string): unknown {
  const workspace = mkdtempSync(path.join(os.tmpdir(), 'forkpool-bundle-'));
  workspaces.push(workspace);
  for (const [file, text] of Object.entries(RESEARCH_WORKSPACE_FILES)) {
    mkdirSync(path.dirname(path.join(workspace, file)), { recursive: true });
    writeFileSync(path.join(workspace, file), text);
  }
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', body], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    timeout: 60_000,
    env: { ...process.env, NODE_OPTIONS: '', FORKPOOL_TEST_ROOT: workspace },
  });
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout.trim().split('\n').pop() as string);
}

describe('the worker bundle (scripts/bundle-worker.mjs)', () => {
  // Every isolate keeps its modules' source: one byte a character only when all are Latin-1.
  it('every chunk is Latin-1 text, so each worker thread holds its source at one byte a character', () => {
    const dir = path.join(REPO_ROOT, 'dist', 'worker', 'bundle');
    const chunks = readdirSync(dir).filter((name) => name.endsWith('.js'));
    expect(chunks).toContain('entry.js');
    for (const name of chunks) expect(/[^\x00-\xff]/.exec(readFileSync(path.join(dir, name), 'utf8'))?.[0], name).toBeUndefined();
  });
});

describe('the bundled entry points', () => {
  it("package.json exports: every subpath imports dist/bundle/<name>.js, types stay tsc's, and each bundled file is there", () => {
    const pkg = JSON.parse(readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as {
      exports: Record<string, string | { types: string; import: string }>;
    };
    const built = readdirSync(path.join(REPO_ROOT, 'dist', 'bundle'));
    for (const [subpath, target] of Object.entries(pkg.exports)) {
      if (typeof target === 'string') continue;
      expect(target.import, subpath).toMatch(/^\.\/dist\/bundle\/[\w-]+\.js$/);
      expect(target.types, subpath).not.toContain('/bundle/');
      expect(built, subpath).toContain(path.basename(target.import));
    }
  });

  it('one copy of each module across entries; classes keep their names; jobs run on threads and inline; the server reads its version', () => {
    const result = child(`
      import { BackgroundManager, ConfigError, ForkpoolError } from 'forkpool';
      import { parseConfig } from 'forkpool/protocol';
      import { createExecutor, InlineExecutor } from 'forkpool/executors';
      import { startSimServer } from 'forkpool/sim';
      import { startForkpoolServer } from 'forkpool/server';
      const sim = await startSimServer();
      const config = parseConfig({ workspaceRoot: process.env.FORKPOOL_TEST_ROOT, baseUrl: sim.url, apiKey: 'k' });
      const statuses = {};
      for (const kind of ['piscina', 'inline']) {
        const executor = createExecutor(config, undefined, kind);
        const manager = new BackgroundManager({ config, executor });
        manager.spawn({ task: ${JSON.stringify(RESEARCH_TASK)}, label: kind });
        await manager.onIdle();
        statuses[kind] = manager.jobs().map((j) => j.status);
        await manager.close();
      }
      const server = await startForkpoolServer({ config, token: 'test-token-0123456789', port: 0 });
      const openapi = await (await fetch(server.url + '/openapi.json', { headers: { authorization: 'Bearer test-token-0123456789' } })).json();
      await server.close();
      await sim.close();
      // An error thrown by forkpool/sim is an instance of forkpool's class: one errors module.
      let sameError;
      try { await startSimServer({ latencyMs: -1 }); } catch (error) { sameError = error instanceof ConfigError && error instanceof ForkpoolError; }
      console.log(JSON.stringify({ statuses, inline: new InlineExecutor().kind, names: [ConfigError.name, BackgroundManager.name], sameError, version: openapi.info.version }));
    `);
    expect(result).toEqual({
      statuses: { piscina: ['ok'], inline: ['ok'] },
      inline: 'inline',
      names: ['ConfigError', 'BackgroundManager'],
      sameError: true,
      version: '0.1.0',
    });
  });

  it("an inline job runs the bundle's own job runtime: the main thread loads no module of tsc's dist/ beside the bundle", () => {
    // A resolve hook lists every module the main thread loads (no worker thread: inline only).
    const hook = `export let port; export function initialize(d) { port = d.port; } export async function resolve(s, c, next) { const r = await next(s, c); port.postMessage(r.url); return r; }`;
    const { files } = child(`
      import { register } from 'node:module';
      import { MessageChannel } from 'node:worker_threads';
      const seen = new Set();
      const { port1, port2 } = new MessageChannel();
      port1.on('message', (url) => seen.add(url));
      register('data:text/javascript,' + encodeURIComponent(${JSON.stringify(hook)}), import.meta.url, { data: { port: port2 }, transferList: [port2] });
      const { BackgroundManager } = await import('forkpool');
      const { parseConfig } = await import('forkpool/protocol');
      const { startSimServer } = await import('forkpool/sim');
      const sim = await startSimServer();
      const config = parseConfig({ workspaceRoot: process.env.FORKPOOL_TEST_ROOT, baseUrl: sim.url, apiKey: 'k', executor: 'inline' });
      const manager = new BackgroundManager({ config });
      manager.spawn({ task: ${JSON.stringify(RESEARCH_TASK)}, label: 'inline' });
      await manager.onIdle();
      await manager.close();
      await sim.close();
      await new Promise((resolve) => setTimeout(resolve, 50));
      port1.close();
      const own = ${JSON.stringify(`file://${REPO_ROOT}/`)};
      console.log(JSON.stringify({ files: [...seen].filter((u) => u.startsWith(own) && !u.includes('/node_modules/')).map((u) => u.slice(own.length)) }));
    `) as { files: string[] };
    expect(files).toContain('dist/bundle/worker-job.js');
    expect(files.filter((f) => !f.startsWith('dist/bundle/') && !f.startsWith('[eval'))).toEqual([]);
  });
});
