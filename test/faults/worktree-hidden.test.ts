/**
 * hiddenPaths in a worktree job (workspace: "worktree"): the config lists absolute paths of the
 * main workspace, and a worktree job's root is a git worktree elsewhere holding its own copy of
 * every tracked file. The copy is hidden too: read_file, grep and bash (bubblewrap's masks) see
 * nothing of it. Through the real manager, pool and worker threads, against the sim.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, realpathSync, rmSync, existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ended, makeConfig, makeManager, makeWorkspace, runs, skipWithout, skipWithoutBwrap, startSim, toolResultsSent, useCleanup } from '../helpers/index.js';
import type { ScriptStep } from '../../src/sim/types.js';

const cleanups = useCleanup();
const TOKEN = 'wt-hidden-token-5f3a9c1e7b';
const noGit = () => skipWithout('git', runs('git', ['--version']));

function git(cwd: string, ...args: string[]): void {
  execFileSync('git', ['-C', cwd, '-c', 'user.name=t', '-c', 'user.email=t@t', ...args], { stdio: 'ignore' });
}

describe.skipIf(noGit())('hiddenPaths in a worktree job', () => {
  it('a worktree job reads, greps, finds and cats nothing of its copy of a hidden tracked file', { timeout: 120_000 }, async () => {
    const root = await makeWorkspace(cleanups);
    await mkdir(path.join(root, 'secrets'));
    await writeFile(path.join(root, 'secrets', 'keys.json'), `{"token": "${TOKEN}"}\n`);
    git(root, 'init', '-q', '-b', 'main');
    git(root, 'add', '-A');
    git(root, 'commit', '-qm', 'base');
    const dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'forkpool-wt-hidden-')));
    cleanups.add(() => rmSync(dir, { recursive: true, force: true }));
    cleanups.add(() => (existsSync(path.join(root, '.git')) ? git(root, 'worktree', 'prune') : undefined));
    const bwrap = !skipWithoutBwrap();
    const script: ScriptStep[] = [
      { toolCalls: [{ name: 'read_file', arguments: { path: 'secrets/keys.json' } }] },
      { toolCalls: [{ name: 'grep', arguments: { pattern: 'token' } }] },
      { toolCalls: [{ name: 'find_files', arguments: { pattern: '**/*.json' } }] },
      ...(bwrap ? [{ toolCalls: [{ name: 'bash', arguments: { command: 'cat secrets/keys.json; echo; pwd' } }] }] : []),
      { content: 'done' },
    ];
    const sim = await startSim(cleanups, { script });
    const config = makeConfig(
      sim,
      root,
      { maxConcurrent: 1, workspace: 'worktree', worktreeDir: dir },
      { grantedTools: ['bash'], sandbox: bwrap ? 'bwrap' : 'none', hiddenPaths: [path.join(root, 'secrets', 'keys.json')] },
    );
    const manager = makeManager(config, cleanups);
    const { id } = await manager.spawnReady({ task: 'Find the token.', label: 'reader' });
    const tree = manager.parentControls.worktree(id);
    expect(tree?.workspaceRoot, 'the job works in a worktree outside the workspace').toBe(path.join(dir, id));
    // The copy is there, with the token: what the tools must not show.
    expect(execFileSync('cat', [path.join(dir, id, 'secrets', 'keys.json')], { encoding: 'utf8' })).toContain(TOKEN);
    const record = await ended(manager, id);
    expect(record.status).toBe('ok');
    const [read = '', grep = '', find = '', bash] = [...toolResultsSent(sim).values()];
    for (const [tool, result] of Object.entries({ read, grep, find, ...(bwrap ? { bash: bash ?? '' } : {}) })) {
      expect(result, `${tool} showed the hidden file's copy`).not.toContain(TOKEN);
    }
    expect(read).toMatch(/^Error: .*keys\.json.* is hidden from the tools/);
    expect(grep).toMatch(/hidden/);
    expect(find).not.toContain('keys.json');
    expect(find).toMatch(/hidden/);
    if (bwrap) expect(bash).toContain(path.join(dir, id));
  });
});
