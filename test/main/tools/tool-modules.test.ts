/**
 * Tool modules: named in the config (relative to the config file), imported once per worker
 * thread (module-level state is the thread's: a counter there counts across the jobs it runs)
 * and once on the main thread for names and schemas. One that fails to load is a config error
 * naming it, at load.
 */
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { BackgroundManager } from '../../../src/main/jobs/manager.js';
import { loadConfig } from '../../../src/main/setup/config-load.js';
import { ConfigError } from '../../../src/shared/errors.js';
import { configError, ended, makeWorkspace, startSim, tempWorkspace, toolMessagesOf, toolSchema, useCleanup, watchManager } from '../../helpers/index.js';

const cleanups = useCleanup();
const fixture = (name: string) => new URL(`../../fixtures/tool-modules/${name}`, import.meta.url).pathname;

/** A config folder with `tools/<files>` copied in and a forkpool.config.json naming them relatively. */
function configDir(files: string[], config: Record<string, unknown>): string {
  const dir = tempWorkspace({}, cleanups);
  mkdirSync(path.join(dir, 'tools'));
  for (const file of files) copyFileSync(fixture(file), path.join(dir, 'tools', file));
  writeFileSync(path.join(dir, 'forkpool.config.json'), JSON.stringify(config));
  return dir;
}

describe('tool modules', () => {
  it('are imported once per worker thread: a module-level counter counts across the jobs of one thread', async () => {
    const step = (id: string) => [{ toolCalls: [{ name: 'thread_counter', arguments: '{}', id }] }, { content: `done ${id}` }];
    const sim = await startSim(cleanups, { script: [...step('a'), ...step('b'), ...step('c')] });
    const root = await makeWorkspace(cleanups);
    const dir = configDir(['thread-tools.mjs'], {
      toolModules: ['./tools/thread-tools.mjs'],
      tools: ['read_file', 'thread_counter'],
      background: { isolation: 'shared', threads: 1, maxConcurrent: 1 },
    });
    const config = loadConfig({
      file: path.join(dir, 'forkpool.config.json'),
      cwd: dir,
      config: { baseUrl: sim.url, apiKey: 'k', workspaceRoot: root, maxRetries: 0 },
    });
    expect(config.toolModules).toEqual([path.join(dir, 'tools', 'thread-tools.mjs')]);
    const manager = watchManager(new BackgroundManager({ config }));
    cleanups.add(() => manager.close({ timeoutMs: 2_000 }));
    expect(manager.tools.get('thread_counter')).toMatchObject({ source: 'module', module: config.toolModules[0], gated: false });

    const answers: Array<{ threadId: number; loads: number; calls: number }> = [];
    for (const label of ['a', 'b', 'c']) {
      const record = await ended(manager, manager.spawn({ task: `count ${label}`, label }).id);
      expect(record.status).toBe('ok');
      expect(record.tools).toEqual(['read_file', 'thread_counter']);
    }
    sim.assertScriptDone();
    for (const i of [1, 3, 5]) answers.push(JSON.parse(toolMessagesOf(sim.requests[i]?.body)[0] ?? '{}'));
    // One thread, the module evaluated there once, its state shared by the three jobs.
    expect(new Set(answers.map((a) => a.threadId)).size).toBe(1);
    expect(answers.map((a) => a.loads)).toEqual([1, 1, 1]);
    expect(answers.map((a) => a.calls)).toEqual([1, 2, 3]);
    // The model is shown the module's own JSON Schema.
    expect(toolSchema(sim.requests[0]!, 'thread_counter')).toMatchObject({ type: 'object', additionalProperties: false });
  });

  it('a default-exported function is called with its thread', async () => {
    const sim = await startSim(cleanups, { script: [{ toolCalls: [{ name: 'which_thread', arguments: '{}', id: 'w' }] }, { content: 'ok' }] });
    const root = await makeWorkspace(cleanups);
    const dir = configDir(['factory-tools.mjs'], { toolModules: ['./tools/factory-tools.mjs'], tools: ['which_thread'] });
    const config = loadConfig({ file: path.join(dir, 'forkpool.config.json'), cwd: dir, config: { baseUrl: sim.url, apiKey: 'k', workspaceRoot: root } });
    const manager = watchManager(new BackgroundManager({ config }));
    cleanups.add(() => manager.close({ timeoutMs: 2_000 }));
    await ended(manager, manager.spawn({ task: 'where', label: 'where' }).id);
    expect(toolMessagesOf(sim.requests[1]?.body)[0]).toMatch(/^worker:\d+$/);
  });

  it('one that fails to load is a config error naming it, at load', () => {
    const dir = configDir(['broken-tools.mjs'], { toolModules: ['./tools/broken-tools.mjs'] });
    const error = configError(() => loadConfig({ file: path.join(dir, 'forkpool.config.json'), cwd: dir }));
    expect(error).toBeInstanceOf(ConfigError);
    expect(error.issues[0]?.field).toBe('toolModules');
    expect(error.message).toContain(path.join(dir, 'tools', 'broken-tools.mjs'));
    expect(error.message).toContain('orders database not reachable');

    const missing = configDir([], { toolModules: ['no-such-package/tools'] });
    expect(() => loadConfig({ file: path.join(missing, 'forkpool.config.json'), cwd: missing })).toThrow(
      /toolModules\[0\].*"no-such-package\/tools": it cannot be found/,
    );
    // Its tool clashing with a built-in: a config error naming both.
    const clash = configDir([], { toolModules: ['./tools/grep.mjs'] });
    writeFileSync(
      path.join(clash, 'tools', 'grep.mjs'),
      "export default [{ name: 'grep', description: 'mine', parameters: { type: 'object' }, run: () => '' }];\n",
    );
    expect(() => loadConfig({ file: path.join(clash, 'forkpool.config.json'), cwd: clash })).toThrow(
      /tool "grep" \(module .*grep\.mjs\) clashes with the builtin tool/,
    );
  });

  it('one inside the workspace is protected: a job cannot rewrite the code the host runs later', async () => {
    const dir = configDir(['thread-tools.mjs'], {
      toolModules: ['./tools/thread-tools.mjs'],
      tools: ['write_file', 'edit_file'],
      grantedTools: ['write_file', 'edit_file'],
    });
    const write = { name: 'write_file', arguments: JSON.stringify({ path: 'tools/thread-tools.mjs', content: 'export default []' }), id: 'w' };
    const edit = {
      name: 'edit_file',
      arguments: JSON.stringify({ path: 'tools/thread-tools.mjs', old_text: 'let calls = 0;', new_text: 'process.exit(9);' }),
      id: 'e',
    };
    const sim = await startSim(cleanups, { script: [{ toolCalls: [write, edit] }, { content: 'done' }] });
    const config = loadConfig({ file: path.join(dir, 'forkpool.config.json'), cwd: dir, config: { baseUrl: sim.url, apiKey: 'k', workspaceRoot: dir } });
    expect(config.protectedPaths).toContain('tools/thread-tools.mjs');
    const manager = watchManager(new BackgroundManager({ config }));
    cleanups.add(() => manager.close({ timeoutMs: 2_000 }));
    await ended(manager, manager.spawn({ task: 'plant code', label: 'plant' }).id);
    const [wrote, edited] = toolMessagesOf(sim.requests[1]?.body);
    expect(wrote).toMatch(/is protected/);
    expect(edited).toMatch(/is protected/);
    expect(readFileSync(path.join(dir, 'tools', 'thread-tools.mjs'), 'utf8')).toBe(readFileSync(fixture('thread-tools.mjs'), 'utf8'));
  });

  it("an agent's own modules: its jobs get their tools, and a fork named to them finds them too", async () => {
    const step = (id: string) => [{ toolCalls: [{ name: 'thread_counter', arguments: '{}', id }] }, { content: `done ${id}` }];
    const sim = await startSim(cleanups, { script: [...step('a'), ...step('f')] });
    const root = await makeWorkspace(cleanups);
    const dir = configDir(['thread-tools.mjs'], {
      agents: { counter: { description: 'counts', toolModules: ['./tools/thread-tools.mjs'], tools: ['thread_counter'] } },
      tools: ['read_file', 'thread_counter'],
      background: { maxConcurrent: 1 },
    });
    const config = loadConfig({ file: path.join(dir, 'forkpool.config.json'), cwd: dir, config: { baseUrl: sim.url, apiKey: 'k', workspaceRoot: root } });
    expect(config.toolModules).toEqual([]);
    const manager = watchManager(new BackgroundManager({ config }));
    cleanups.add(() => manager.close({ timeoutMs: 2_000 }));
    expect(manager.tools.get('thread_counter')?.source).toBe('module');
    const agentJob = await ended(manager, manager.spawn({ task: 'count as the agent', label: 'a', agent: 'counter' }).id);
    const forkJob = await ended(manager, manager.spawn({ task: 'count as a fork', label: 'f' }).id);
    sim.assertScriptDone();
    expect(agentJob.tools).toEqual(['thread_counter']);
    expect(forkJob.tools).toEqual(['read_file', 'thread_counter']);
    for (const i of [1, 3]) expect(JSON.parse(toolMessagesOf(sim.requests[i]?.body)[0] ?? '{}')).toMatchObject({ loads: 1 });
  });
});
