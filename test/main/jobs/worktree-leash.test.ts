/**
 * forkpool's own git runs nothing a workspace can plant (src/main/jobs/git-leash.ts), through
 * the real manager, pool and sim: a writing job plants a hook, an attribute naming a filter,
 * merge or diff driver, or the repository already names one; each would write a marker file
 * outside the worktree when forkpool commits the job's work or merges it (through the manager,
 * the parent's tool or the HTTP route). No marker may appear, and the work still lands.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { git as leashedGit } from '../../../src/main/jobs/git-leash.js';
import type { BackgroundManager } from '../../../src/main/jobs/manager.js';
import { worktreeTool } from '../../../src/main/session/worktree-tools.js';
import type { ScriptStep } from '../../../src/sim/types.js';
import { ended, git, gitRepo, makeConfig, makeManager, startSim, tempDir, useCleanup } from '../../helpers/index.js';
import { startTestServer } from '../../helpers/server.js';
import { skipWithoutBwrap } from '../../helpers/sandbox.js';

const cleanups = useCleanup();
const TIMEOUT_MS = 120_000;

/** Where planted code would leave its marks: outside the repository and every worktree. */
function markerDir(): { dir: string; touch: (name: string) => string; marks: () => string[] } {
  const dir = tempDir(cleanups, 'forkpool-marks-');
  return { dir, touch: (name) => `touch ${path.join(dir, name)}`, marks: () => readdirSync(dir).sort() };
}

/** A repository with a README of three lines, committed. */
const repo = (): string => gitRepo(cleanups, { prefix: 'forkpool-leash-repo-', readme: 'one\ntwo\nthree\n', prune: true });

function script(path: string, body: string): void {
  writeFileSync(path, `#!/bin/sh\n${body}\n`);
  chmodSync(path, 0o755);
}

const write = (file: string, content: string): ScriptStep => ({ toolCalls: [{ name: 'write_file', arguments: { path: file, content } }] });

async function managerFor(root: string, steps: ScriptStep[], tools: Array<'write_file' | 'bash'> = ['write_file']): Promise<BackgroundManager> {
  const sim = await startSim(cleanups, { script: steps });
  const config = makeConfig(
    sim,
    root,
    { maxConcurrent: 1, workspace: 'worktree', worktreeDir: tempDir(cleanups, 'forkpool-leash-trees-') },
    { grantedTools: tools },
  );
  return makeManager(config, cleanups);
}

/** Runs one writing job to its end and returns its id, its worktree checked as committed. */
async function runJob(manager: BackgroundManager): Promise<string> {
  const { id } = manager.spawn({ task: 'Write the files.', label: 'writer' });
  const record = await ended(manager, id);
  expect(record.status).toBe('ok');
  expect(manager.parentControls.worktree(id)?.state, record.resultText).toBe('kept');
  return id;
}

const HOOKS = ['pre-commit', 'prepare-commit-msg', 'commit-msg', 'post-commit', 'post-checkout', 'pre-merge-commit', 'post-merge', 'reference-transaction'];

describe("forkpool's git runs no hook", () => {
  it(
    "the user's own hooks (.git/hooks) run neither at the job's worktree, its commit, nor the merge through the parent's tool",
    async () => {
      const marks = markerDir();
      const root = repo();
      for (const hook of HOOKS) script(path.join(root, '.git', 'hooks', hook), marks.touch(hook));
      const manager = await managerFor(root, [write('new.txt', 'new\n'), { content: 'Wrote.' }]);
      const id = await runJob(manager);
      expect(await worktreeTool(manager.parentControls).run({ job: id, action: 'merge' }, {} as never)).toContain('merged');
      expect(readFileSync(path.join(root, 'new.txt'), 'utf8')).toBe('new\n');
      expect(marks.marks()).toEqual([]);
    },
    TIMEOUT_MS,
  );

  it.skipIf(skipWithoutBwrap())(
    'a relative core.hooksPath (.githooks) whose hooks the job writes (bash, executable) runs none of them at its commit or the merge',
    async () => {
      const marks = markerDir();
      const root = repo();
      git(root, 'config', 'core.hooksPath', '.githooks');
      const plant = HOOKS.map((name) => `printf '#!/bin/sh\\n${marks.touch(name)}\\n' > .githooks/${name}`).join('; ');
      const manager = await managerFor(
        root,
        [
          { toolCalls: [{ name: 'bash', arguments: { command: `mkdir -p .githooks; ${plant}; chmod +x .githooks/*; ls .githooks | wc -l` } }] },
          { content: 'Planted.' },
        ],
        ['write_file', 'bash'],
      );
      const id = await runJob(manager);
      expect(readFileSync(path.join(manager.parentControls.worktree(id)?.path ?? '', '.githooks', 'post-commit'), 'utf8')).toContain(
        marks.touch('post-commit'),
      );
      await manager.parentControls.worktreeAction(id, 'merge');
      expect(existsSync(path.join(root, '.githooks', 'post-merge'))).toBe(true);
      expect(marks.marks()).toEqual([]);
    },
    TIMEOUT_MS,
  );

  it(
    "a husky-like repository (core.hooksPath=.husky/_): the job's .husky/post-merge does not run at the merge through HTTP",
    async () => {
      const marks = markerDir();
      const root = repo();
      // husky 9: an ignored .husky/_ of wrappers, each running the tracked .husky/<hook> when there is one.
      mkdirSync(path.join(root, '.husky', '_'), { recursive: true });
      writeFileSync(path.join(root, '.husky', '_', '.gitignore'), '*\n');
      for (const name of ['post-merge', 'post-commit', 'post-checkout'])
        script(path.join(root, '.husky', '_', name), `[ -f .husky/${name} ] && sh .husky/${name}; true`);
      git(root, 'config', 'core.hooksPath', '.husky/_');
      const server = await startTestServer(
        cleanups,
        { workspaceRoot: root, grantedTools: ['write_file'], background: { maxConcurrent: 1, worktreeDir: tempDir(cleanups, 'forkpool-leash-trees-') } },
        {
          script: [
            write('.husky/post-merge', marks.touch('husky-post-merge')),
            write('.husky/post-commit', marks.touch('husky-post-commit')),
            { content: 'Planted.' },
          ],
        },
      );
      const started = await server.api('/v1/jobs', { json: { task: 'Plant.', label: 'writer', workspace: 'worktree' } });
      const id = ((await started.json()) as { jobs: Array<{ id: string }> }).jobs[0]?.id as string;
      expect(((await (await server.api(`/v1/jobs/${id}/result?wait=60`)).json()) as { status: string }).status).toBe('ok');
      const merged = await server.api(`/v1/jobs/${id}/worktree`, { json: { action: 'merge' } });
      expect(merged.status, await merged.clone().text()).toBe(200);
      expect(existsSync(path.join(root, '.husky', 'post-merge'))).toBe(true);
      // The planted hook is real: the user's own next merge would run it (that is the user's git, not forkpool's).
      expect(marks.marks()).toEqual([]);
    },
    TIMEOUT_MS,
  );

  describe('nor one named by GIT_* in its environment', () => {
    const saved = { ...process.env };
    afterEach(() => {
      for (const key of Object.keys(process.env)) if (!(key in saved)) delete process.env[key];
      Object.assign(process.env, saved);
    });

    it(
      "GIT_CONFIG_COUNT/KEY/VALUE (core.hooksPath, core.fsmonitor) and GIT_TRACE in the host environment reach none of forkpool's git commands",
      async () => {
        const marks = markerDir();
        const root = repo();
        const hooks = tempDir(cleanups, 'forkpool-env-hooks-');
        for (const hook of HOOKS) script(path.join(hooks, hook), marks.touch(`env-${hook}`));
        const monitor = path.join(hooks, 'fsmonitor');
        script(monitor, marks.touch('env-fsmonitor'));
        const manager = await managerFor(root, [write('env.txt', 'e\n'), { content: 'Wrote.' }]);
        Object.assign(process.env, {
          GIT_CONFIG_COUNT: '2',
          GIT_CONFIG_KEY_0: 'core.hooksPath',
          GIT_CONFIG_VALUE_0: hooks,
          GIT_CONFIG_KEY_1: 'core.fsmonitor',
          GIT_CONFIG_VALUE_1: monitor,
          GIT_TRACE: path.join(marks.dir, 'env-trace'),
        });
        const id = await runJob(manager);
        await manager.parentControls.worktreeAction(id, 'merge');
        expect(readFileSync(path.join(root, 'env.txt'), 'utf8')).toBe('e\n');
        expect(marks.marks()).toEqual([]);
      },
      TIMEOUT_MS,
    );
  });
});

describe("forkpool's git runs no driver or monitor the workspace can name", () => {
  it(
    "a filter the repository defines, named by the job's .gitattributes: no clean at the commit, no smudge at the merge, the bytes as written",
    async () => {
      const marks = markerDir();
      const root = repo();
      git(root, 'config', 'filter.evil.clean', `${marks.touch('clean')}; tr a-z A-Z`);
      git(root, 'config', 'filter.evil.smudge', `${marks.touch('smudge')}; cat`);
      git(root, 'config', 'filter.evil.process', `sh -c '${marks.touch('process')}'`);
      git(root, 'config', 'filter.evil.required', 'true');
      const manager = await managerFor(root, [write('.gitattributes', '* filter=evil\n'), write('data.txt', 'lower case\n'), { content: 'Wrote.' }]);
      const id = await runJob(manager);
      await manager.parentControls.worktreeAction(id, 'merge');
      expect(git(root, 'show', 'HEAD:data.txt')).toBe('lower case');
      expect(readFileSync(path.join(root, 'data.txt'), 'utf8')).toBe('lower case\n');
      expect(marks.marks()).toEqual([]);
    },
    TIMEOUT_MS,
  );

  it(
    "a merge driver named by a .gitattributes an earlier job's merge brought in: git's own three-way merge joins both sides instead",
    async () => {
      const marks = markerDir();
      const root = repo();
      git(root, 'config', 'merge.evil.driver', `${marks.touch('merge-driver')}; false`);
      const manager = await managerFor(root, [
        write('.gitattributes', '* merge=evil\n'),
        { content: 'Attributes.' },
        write('README.md', 'one\ntwo\nthree by the job\n'),
        { content: 'Wrote.' },
      ]);
      // A first job's .gitattributes is merged: from now on the checkout names the driver for every file.
      await manager.parentControls.worktreeAction(await runJob(manager), 'merge');
      const id = await runJob(manager);
      // The user changed another line meanwhile: both sides changed README.md, so its merge driver is asked.
      writeFileSync(path.join(root, 'README.md'), 'one by the user\ntwo\nthree\n');
      git(root, 'commit', '-qam', 'user edit');
      expect(await manager.parentControls.worktreeAction(id, 'merge')).toContain('merged');
      expect(readFileSync(path.join(root, 'README.md'), 'utf8')).toBe('one by the user\ntwo\nthree by the job\n');
      expect(marks.marks()).toEqual([]);
    },
    TIMEOUT_MS,
  );

  it(
    'core.fsmonitor, diff.external and a textconv driver named by .gitattributes run at none of the commit, the listing or the merge',
    async () => {
      const marks = markerDir();
      const root = repo();
      git(root, 'config', 'diff.external', path.join(root, '.git', 'ext-diff'));
      script(path.join(root, '.git', 'ext-diff'), marks.touch('external-diff'));
      git(root, 'config', 'diff.evil.textconv', `${marks.touch('textconv')}; cat`);
      git(root, 'config', 'diff.evil.command', marks.touch('diff-command'));
      script(path.join(root, '.git', 'monitor'), `${marks.touch('fsmonitor')}; exit 1`);
      git(root, 'config', 'core.fsmonitor', path.join(root, '.git', 'monitor'));
      const manager = await managerFor(root, [write('.gitattributes', '* diff=evil\n'), write('README.md', 'changed\n'), { content: 'Wrote.' }]);
      const id = await runJob(manager);
      expect(manager.parentControls.worktree(id)?.changed?.sort()).toEqual(['A .gitattributes', 'M README.md']);
      await manager.parentControls.worktreeAction(id, 'merge');
      expect(marks.marks()).toEqual([]);
    },
    TIMEOUT_MS,
  );

  it(
    "the leash itself: a diff that makes a patch runs neither diff.external nor a textconv driver the workspace names, and shows git's own diff",
    async () => {
      // forkpool's own commands make no patch (name-status, --quiet, --no-stat), so this asks the leash directly.
      const marks = markerDir();
      const root = repo();
      git(root, 'config', 'diff.external', path.join(root, '.git', 'ext-diff'));
      script(path.join(root, '.git', 'ext-diff'), marks.touch('external-diff'));
      git(root, 'config', 'diff.evil.textconv', `${marks.touch('textconv')}; cat`);
      git(root, 'config', 'diff.evil.command', marks.touch('diff-command'));
      writeFileSync(path.join(root, '.gitattributes'), '* diff=evil\n');
      writeFileSync(path.join(root, 'README.md'), 'changed\n');
      git(root, 'commit', '-qam', 'change');
      git(root, 'add', '-A');
      git(root, 'commit', '-qm', 'attributes');
      for (const command of [
        ['diff', 'HEAD~2', 'HEAD'],
        ['log', '-p', '-2'],
        ['show', 'HEAD~1'],
      ]) {
        const patch = await leashedGit(root, command, { workTrees: [root] });
        expect(patch.ok, patch.stderr).toBe(true);
        expect(patch.stdout, command.join(' ')).toContain('+changed');
      }
      expect(marks.marks()).toEqual([]);
    },
    TIMEOUT_MS,
  );

  it(
    'a repository whose config includes a file from its work tree is refused at spawn, naming the file; nothing starts',
    async () => {
      const root = repo();
      git(root, 'config', 'include.path', '../.gitconfig');
      const manager = await managerFor(root, []);
      await expect(manager.spawnReady({ task: 'Write.', label: 'w' })).rejects.toMatchObject({
        code: 'WORKTREE_UNAVAILABLE',
        message: expect.stringContaining(`includes ${path.join(root, '.gitconfig')}, inside the work tree`),
      });
      expect(manager.jobs()).toEqual([]);
    },
    TIMEOUT_MS,
  );
});
