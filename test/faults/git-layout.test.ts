/**
 * A workspace folder made into a git directory's layout (HEAD, objects/, refs/ and a config with
 * `core.worktree` and `core.fsmonitor`): git takes such a folder for a repository, and the user's
 * next `git status` would run the planted command. write_file refuses the write that completes
 * the layout, at the root or in a subfolder; bash in bubblewrap has it undone after the command
 * and reported. Jobs run through the real pool and worker threads against the sim; afterwards a
 * real `git status` runs in the workspace and must not run the fsmonitor command.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requireBwrap, runOneJob, runs, skipWithout, skipWithoutBwrap, toolResultsSent, useCleanup } from '../helpers/index.js';

const noGit = () => skipWithout('git', runs('git', ['--version']));

const cleanups = useCleanup();
let markers: string;
beforeAll(async () => {
  markers = await realpath(await mkdtemp(path.join(os.tmpdir(), 'forkpool-gitlayout-')));
});
afterAll(() => rm(markers, { recursive: true, force: true }));

let markerCount = 0;
/** A file the planted fsmonitor command would create; it must never appear. */
const newMarker = () => path.join(markers, `pwned-${++markerCount}`);

/** A git config that makes its folder a repository of `worktree` and runs `touch marker` at `git status`. */
const plantedConfig = (worktree: string, marker: string) =>
  `[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = ${worktree}\n\tfsmonitor = "touch ${marker}; false"\n`;

/** A real `git status` in `cwd`, with nothing from this machine's git environment and no discovery above `ceiling`. */
function gitStatus(cwd: string, ceiling: string): void {
  const env: Record<string, string> = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: markers, GIT_CEILING_DIRECTORIES: ceiling };
  try {
    execFileSync('git', ['status', '--porcelain'], { cwd, env, stdio: 'ignore' });
  } catch {
    // Not a repository: exactly what is wanted. The marker says whether the planted command ran.
  }
}

describe.skipIf(noGit())('write_file and a git directory layout', () => {
  it.each([
    ['at the workspace root', ''],
    ['in a subfolder', 'sub/'],
  ])('write_file building HEAD, objects/, config and refs/ %s is refused at the write that completes it; git status runs nothing', async (_where, prefix) => {
    const marker = newMarker();
    const write = (rel: string, content: string) => ({ toolCalls: [{ name: 'write_file', arguments: { path: `${prefix}${rel}`, content } }] });
    // The worktree the planted config names is the workspace; filled in once it is known (below).
    const script = [
      write('HEAD', 'ref: refs/heads/main\n'),
      write('objects/info/packs', ''),
      write('config', plantedConfig('WORKSPACE', marker)),
      write('refs/heads/main', ''),
      { content: 'done' },
    ];
    const run = await runOneJob(cleanups, { sim: { script }, config: { grantedTools: ['write_file'] }, task: 'Plant a repository.' });
    expect(run.record.status).toBe('ok');
    const ws = run.config.workspaceRoot;
    const folder = path.join(ws, prefix);
    // The config really would run the command if git took the folder for a repository.
    await writeFile(path.join(folder, 'config'), plantedConfig(ws, marker));
    gitStatus(ws, path.dirname(ws));
    gitStatus(folder, path.dirname(ws));
    expect(existsSync(marker), 'git status ran the planted fsmonitor command').toBe(false);
    expect(existsSync(path.join(folder, 'refs')), 'the refused write leaves no refs/ folder behind').toBe(false);
    const results = [...toolResultsSent(run.sim).values()];
    expect(results).toHaveLength(4);
    // The first three are written; the fourth would complete HEAD + objects/ + refs/ and is refused.
    for (const result of results.slice(0, 3)) expect(result).toMatch(/^Created /);
    expect(results[3]).toMatch(/^Error: writing "(sub\/)?refs\/heads\/main"/);
    expect(results[3]).toMatch(/laid out as a git directory/);
    expect(results[3]).toContain('Nothing was written');
  });
});

describe('write_file and a linked-worktree git directory (HEAD with commondir)', () => {
  it('the write of commondir beside HEAD is refused and leaves nothing', async () => {
    const script = [
      { toolCalls: [{ name: 'write_file', arguments: { path: 'HEAD', content: 'ref: refs/heads/main\n' } }] },
      { toolCalls: [{ name: 'write_file', arguments: { path: 'commondir', content: 'elsewhere\n' } }] },
      { content: 'done' },
    ];
    const run = await runOneJob(cleanups, { sim: { script }, config: { grantedTools: ['write_file'] }, task: 'Plant a linked git directory.' });
    expect(run.record.status).toBe('ok');
    expect(existsSync(path.join(run.config.workspaceRoot, 'commondir'))).toBe(false);
    const [head = '', commondir = ''] = [...toolResultsSent(run.sim).values()];
    expect(head).toMatch(/^Created HEAD/);
    expect(commondir).toMatch(/^Error: writing "commondir" would leave the workspace root laid out as a git directory/);
  });
});

describe.skipIf(skipWithoutBwrap() || noGit())('bash in bubblewrap and a git directory layout', () => {
  beforeAll(requireBwrap);

  it('bash making the workspace root a git directory has the new parts removed and reported; what was there stays; git status runs nothing', async () => {
    const marker = newMarker();
    const command = [
      `printf 'ref: refs/heads/main\\n' > HEAD`,
      'mkdir -p refs/heads objects/pack',
      `printf '[core]\\n\\trepositoryformatversion = 0\\n\\tbare = false\\n\\tworktree = %s\\n\\tfsmonitor = "touch ${marker}; false"\\n' "$PWD" > config`,
      'echo built',
    ].join(' && ');
    const script = [
      // First, a folder named like a part of the layout, as a user may have: it is theirs, and stays.
      { toolCalls: [{ name: 'bash', arguments: { command: 'mkdir objects && echo "v 0 0 0" > objects/model.obj' } }] },
      { toolCalls: [{ name: 'bash', arguments: { command } }] },
      { content: 'done' },
    ];
    const run = await runOneJob(cleanups, { sim: { script }, config: { grantedTools: ['bash'], sandbox: 'bwrap' }, task: 'Plant a repository with bash.' });
    expect(run.record.status).toBe('ok');
    const ws = run.config.workspaceRoot;
    gitStatus(ws, path.dirname(ws));
    expect(existsSync(marker), 'git status ran the planted fsmonitor command').toBe(false);
    for (const part of ['HEAD', 'refs', 'config']) expect(existsSync(path.join(ws, part)), `${part} is removed`).toBe(false);
    expect(existsSync(path.join(ws, 'objects', 'model.obj')), "the user's own objects/ stays").toBe(true);
    const [first = '', result = ''] = [...toolResultsSent(run.sim).values()];
    expect(first).toContain('[exit code: 0]');
    expect(result).toMatch(/^Error: bash: the command created or replaced protected paths/);
    expect(result).toContain('built');
    expect(result).toMatch(/"HEAD", "config", "refs"/);
    expect(result).not.toContain('"objects"');
  });

  it('bash running git init --bare in a folder the user had: the layout goes, their files stay; git status there runs nothing', async () => {
    const marker = newMarker();
    const command = [
      'git init -q --bare docs',
      `git -C docs config core.bare false && git -C docs config core.worktree "$PWD" && git -C docs config core.fsmonitor "touch ${marker}; false"`,
      'echo built',
    ].join(' && ');
    const script = [
      { toolCalls: [{ name: 'bash', arguments: { command: 'mkdir docs && echo "# Guide" > docs/guide.md' } }] },
      { toolCalls: [{ name: 'bash', arguments: { command } }] },
      { content: 'done' },
    ];
    const run = await runOneJob(cleanups, { sim: { script }, config: { grantedTools: ['bash'], sandbox: 'bwrap' }, task: 'Plant a repository in docs.' });
    expect(run.record.status).toBe('ok');
    const ws = run.config.workspaceRoot;
    gitStatus(path.join(ws, 'docs'), path.dirname(ws));
    expect(existsSync(marker), 'git status ran the planted fsmonitor command').toBe(false);
    expect(existsSync(path.join(ws, 'docs', 'guide.md')), "the user's file in docs/ stays").toBe(true);
    for (const part of ['HEAD', 'objects', 'refs', 'config']) expect(existsSync(path.join(ws, 'docs', part)), `docs/${part} is removed`).toBe(false);
    const [, result = ''] = [...toolResultsSent(run.sim).values()];
    expect(result).toMatch(/^Error: bash: the command created or replaced protected paths/);
    expect(result).toContain('built');
    expect(result).toMatch(/"docs\/HEAD", "docs\/config", "docs\/hooks", "docs\/objects", "docs\/refs"/);
  });
});
