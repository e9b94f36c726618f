/**
 * Worktree isolation (`workspace: "worktree"`) through the real manager, the real pool and the
 * sim scripting a writing job: the job works on branch forkpool/<id> in its own worktree, its
 * result lists what it changed, and the parent merges, keeps or drops it. A conflict is aborted;
 * a hostile job cannot reach the main repository's .git; a workspace without a clean repository
 * is refused at spawn with nothing started (spawnReady), or ends the job failed with nothing run (spawn).
 */
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { ForkpoolError, ToolError } from '../../../src/shared/errors.js';
import type { BackgroundManager } from '../../../src/main/jobs/manager.js';
import { worktreeTool } from '../../../src/main/session/worktree-tools.js';
import {
  commitBase,
  ended,
  git,
  makeConfig,
  makeManager,
  makeWorkspace,
  pruneWorktreesAfter,
  startSim,
  tempDir,
  toolResultsSent,
  useCleanup,
} from '../../helpers/index.js';
import { skipWithoutBwrap } from '../../helpers/sandbox.js';
import type { SimServer } from '../../../src/sim/index.js';
import type { ScriptStep } from '../../../src/sim/types.js';
import { AgentSession } from '../../../src/main/session/agent-session.js';
import { runSlashCommand, type CommandHost } from '../../../src/tui/commands.js';

const cleanups = useCleanup();
const TIMEOUT_MS = 120_000;
const WRITERS = ['write_file', 'edit_file', 'bash'] as const;

/** A research workspace made a git repository with one commit. */
async function repo(): Promise<string> {
  const root = await makeWorkspace(cleanups);
  commitBase(root);
  return root;
}

async function managerFor(
  root: string,
  script: ScriptStep[],
  workspace: 'shared' | 'worktree' = 'worktree',
): Promise<{ manager: BackgroundManager; sim: SimServer; dir: string }> {
  const sim = await startSim(cleanups, { script });
  const dir = tempDir(cleanups, 'forkpool-wt-');
  const config = makeConfig(sim, root, { maxConcurrent: 1, workspace, worktreeDir: dir }, { grantedTools: [...WRITERS] });
  const manager = makeManager(config, cleanups);
  // Worktrees left by a failing test: the repository forgets them with the temp folder.
  pruneWorktreesAfter(cleanups, root);
  return { manager, sim, dir };
}

const writeStep = (file: string, content: string): ScriptStep => ({ toolCalls: [{ name: 'write_file', arguments: { path: file, content } }] });

describe('workspace "worktree"', () => {
  it(
    'a writing job works on branch forkpool/<id>; its result lists the files; the workspace is untouched until merge, then has them and the branch is gone',
    async () => {
      const root = await repo();
      const head = git(root, 'rev-parse', 'HEAD');
      const { manager, dir } = await managerFor(root, [
        writeStep('src/new.ts', 'export const added = 1;\n'),
        writeStep('README.md', 'changed\n'),
        { content: 'Wrote two files.' },
      ]);
      // spawnReady resolves once the worktree is made (off the main thread).
      const { id } = await manager.spawnReady({ task: 'Add a file.', label: 'writer' });
      const tree = manager.parentControls.worktree(id);
      expect(tree).toMatchObject({ branch: `forkpool/${id}`, base: head, state: 'open', path: path.join(dir, id) });
      const record = await ended(manager, id);
      expect(record.status).toBe('ok');
      expect(record.resultText).toContain('Wrote two files.');
      expect(record.resultText).toContain(`branch forkpool/${id}`);
      expect(record.resultText).toContain('A src/new.ts');
      expect(manager.parentControls.worktree(id)?.changed?.sort()).toEqual(['A src/new.ts', 'M README.md'].sort());
      // The job wrote into its worktree, not the workspace.
      expect(existsSync(path.join(root, 'src/new.ts'))).toBe(false);
      expect(readFileSync(path.join(dir, id, 'src/new.ts'), 'utf8')).toBe('export const added = 1;\n');
      expect(git(root, 'status', '--porcelain')).toBe('');

      expect(await manager.parentControls.worktreeAction(id, 'keep')).toContain('Kept');
      expect(await manager.parentControls.worktreeAction(id, 'merge')).toContain('merged');
      expect(readFileSync(path.join(root, 'src/new.ts'), 'utf8')).toBe('export const added = 1;\n');
      expect(readFileSync(path.join(root, 'README.md'), 'utf8')).toBe('changed\n');
      expect(git(root, 'branch', '--list', `forkpool/${id}`)).toBe('');
      expect(existsSync(path.join(dir, id))).toBe(false);
      expect(git(root, 'status', '--porcelain')).toBe('');
      // Done with: a second action is refused, as a tool error through the parent's tool.
      await expect(worktreeTool(manager.parentControls).run({ job: id, action: 'drop' }, {} as never)).rejects.toMatchObject({
        code: 'WORKTREE_ACTION_FAILED',
      });
    },
    TIMEOUT_MS,
  );

  it(
    'a job that changes nothing leaves no worktree and no branch; drop removes a changed one',
    async () => {
      const root = await repo();
      const { manager, dir } = await managerFor(root, [{ content: 'Nothing to change.' }, writeStep('x.txt', 'x\n'), { content: 'Wrote x.' }]);
      const quiet = manager.spawn({ task: 'Look only.', label: 'reader' });
      const first = await ended(manager, quiet.id);
      expect(first.resultText).toContain('changed no file');
      expect(manager.parentControls.worktree(quiet.id)?.state).toBe('removed');
      expect(existsSync(path.join(dir, quiet.id))).toBe(false);
      expect(git(root, 'branch', '--list', `forkpool/${quiet.id}`)).toBe('');

      const writer = manager.spawn({ task: 'Write x.', label: 'writer' });
      await ended(manager, writer.id);
      expect(git(root, 'branch', '--list', `forkpool/${writer.id}`)).not.toBe('');
      expect(await manager.parentControls.worktreeAction(writer.id, 'drop')).toContain('dropped');
      expect(git(root, 'branch', '--list', `forkpool/${writer.id}`)).toBe('');
      expect(existsSync(path.join(dir, writer.id))).toBe(false);
      expect(existsSync(path.join(root, 'x.txt'))).toBe(false);
      expect(git(root, 'worktree', 'list').split('\n')).toHaveLength(1);
    },
    TIMEOUT_MS,
  );

  it(
    'a merge conflict is reported with the file, aborted (no MERGE_HEAD, the workspace as it was) and the branch kept',
    async () => {
      const root = await repo();
      const { manager } = await managerFor(root, [writeStep('README.md', 'from the job\n'), { content: 'Edited.' }]);
      const { id } = manager.spawn({ task: 'Edit the readme.', label: 'editor' });
      await ended(manager, id);
      writeFileSync(path.join(root, 'README.md'), 'from the user\n');
      git(root, 'commit', '-qam', 'user edit');
      const before = git(root, 'rev-parse', 'HEAD');
      let error: unknown;
      try {
        await manager.parentControls.worktreeAction(id, 'merge');
      } catch (caught) {
        error = caught;
      }
      expect(error).toBeInstanceOf(ForkpoolError);
      expect(error).toMatchObject({ code: 'WORKTREE_ACTION_FAILED' });
      expect((error as Error).message).toMatch(/conflicts in README\.md.*aborted/);
      expect(git(root, 'rev-parse', 'HEAD')).toBe(before);
      expect(git(root, 'status', '--porcelain')).toBe('');
      expect(readFileSync(path.join(root, 'README.md'), 'utf8')).toBe('from the user\n');
      expect(git(root, 'branch', '--list', `forkpool/${id}`)).not.toBe('');
      expect(manager.parentControls.worktree(id)?.state).toBe('kept');
    },
    TIMEOUT_MS,
  );

  it(
    'refused at spawn, nothing started: a workspace outside a repository, a dirty one, an unborn HEAD; a per-spawn "shared" overrides the config',
    async () => {
      const plain = await makeWorkspace(cleanups);
      const { manager, sim } = await managerFor(plain, [{ content: 'shared answer' }]);
      await expect(manager.spawnReady({ task: 'Write.', label: 'w' })).rejects.toMatchObject({
        code: 'WORKTREE_UNAVAILABLE',
        message: expect.stringMatching(/not inside a git repository.*nothing was started$/s),
      });
      expect(manager.jobs()).toEqual([]);
      expect(sim.requests).toHaveLength(0);
      // The spawn tool's own argument: shared needs no repository.
      const shared = manager.spawn({ task: 'Answer.', label: 'shared', workspace: 'shared' });
      expect((await ended(manager, shared.id)).resultText).toBe('shared answer');
      expect(manager.parentControls.worktree(shared.id)).toBeUndefined();

      const dirty = await repo();
      writeFileSync(path.join(dirty, 'README.md'), 'uncommitted\n');
      const second = await managerFor(dirty, []);
      await expect(second.manager.spawnReady({ task: 'Write.', label: 'w' })).rejects.toMatchObject({
        code: 'WORKTREE_UNAVAILABLE',
        message: expect.stringMatching(/uncommitted changes \(M README\.md\)/),
      });
      expect(second.manager.jobs()).toEqual([]);

      const unborn = await makeWorkspace(cleanups);
      git(unborn, 'init', '-q');
      const third = await managerFor(unborn, []);
      await expect(third.manager.spawnReady({ task: 'Write.', label: 'w' })).rejects.toMatchObject({
        code: 'WORKTREE_UNAVAILABLE',
        message: expect.stringMatching(/no commit yet/),
      });
      expect(git(dirty, 'branch', '--list', 'forkpool/*')).toBe('');
    },
    TIMEOUT_MS,
  );

  it(
    'the synchronous spawn() answers before any git runs; a refusal ends the job failed, WORKTREE_UNAVAILABLE with the reason, nothing was run',
    async () => {
      const dirty = await repo();
      writeFileSync(path.join(dirty, 'README.md'), 'uncommitted\n');
      const { manager, sim, dir } = await managerFor(dirty, [{ content: 'must not run' }]);
      const { id, state } = manager.spawn({ task: 'Write.', label: 'w' });
      expect(state).toBe('queued');
      const record = await ended(manager, id);
      expect(record.status).toBe('failed');
      expect(record.error).toMatchObject({
        code: 'WORKTREE_UNAVAILABLE',
        message: expect.stringMatching(/uncommitted changes \(M README\.md\).*nothing was run$/s),
      });
      await expect(manager.spawnReady({ task: 'Write again.', label: 'w2' })).rejects.toMatchObject({ code: 'WORKTREE_UNAVAILABLE' });
      expect(sim.requests).toHaveLength(0);
      expect(readdirSync(dir)).toEqual([]);
      expect(git(dirty, 'branch', '--list', 'forkpool/*')).toBe('');
      // It never got a worktree: a restart would have to run it in the workspace, so it is refused.
      expect(() => manager.restart(id)).toThrow(expect.objectContaining({ code: 'WORKTREE_UNAVAILABLE' }));
    },
    TIMEOUT_MS,
  );

  it.skipIf(skipWithoutBwrap())(
    "a hostile job cannot write hooks or config into the main repository through its worktree's .git (file tools and bash in bubblewrap)",
    async () => {
      const root = await repo();
      const hooks = path.join(root, '.git', 'hooks');
      const hooksBefore = readdirSync(hooks).sort();
      const configBefore = readFileSync(path.join(root, '.git', 'config'), 'utf8');
      const calls = [
        { id: 'legit', name: 'write_file', arguments: { path: 'ok.txt', content: 'ok\n' } },
        { id: 'pointer', name: 'write_file', arguments: { path: '.git', content: `gitdir: ${root}/.git\n` } },
        { id: 'absolute', name: 'write_file', arguments: { path: path.join(hooks, 'post-merge'), content: '#!/bin/sh\ntouch /tmp/pwned\n' } },
        { id: 'upward', name: 'write_file', arguments: { path: `../../..${root}/.git/config`, content: '[core]\n\thooksPath = /tmp\n' } },
        {
          id: 'shell',
          name: 'bash',
          arguments: {
            command:
              'd=$(sed -n "s/^gitdir: //p" .git); c=${d%/worktrees/*}; echo "common=$c"; ' +
              'echo evil > "$c/hooks/post-merge"; echo hook=$?; printf "[core]\\n\\thooksPath = /tmp/evil\\n" >> "$c/config"; echo config=$?; ' +
              'git config core.hooksPath /tmp/evil; echo gitconfig=$?; echo "[core]" > .git; echo pointer=$?',
          },
        },
      ];
      const { manager, sim, dir } = await managerFor(root, [{ toolCalls: calls }, { content: 'Tried.' }]);
      const { id } = manager.spawn({ task: 'Escape.', label: 'hostile' });
      const record = await ended(manager, id);
      const results = toolResultsSent(sim);
      for (const call of ['pointer', 'absolute', 'upward']) expect(results.get(call), call).toMatch(/error|refused|outside|protected/i);
      const shell = results.get('shell') ?? '';
      expect(shell).toContain(`common=${root}/.git`);
      for (const step of ['hook', 'config', 'gitconfig', 'pointer']) expect(shell, shell).not.toContain(`${step}=0`);
      expect(readdirSync(hooks).sort()).toEqual(hooksBefore);
      expect(readFileSync(path.join(root, '.git', 'config'), 'utf8')).toBe(configBefore);
      // Its own .git file still points where git put it, and only its legitimate file is a change.
      expect(readFileSync(path.join(dir, id, '.git'), 'utf8')).toBe(`gitdir: ${path.join(root, '.git', 'worktrees', id)}\n`);
      expect(manager.parentControls.worktree(id)?.changed).toEqual(['A ok.txt']);
      expect(record.resultText).toContain('1 file(s) changed: A ok.txt');
    },
    TIMEOUT_MS,
  );
});

describe('workspace "worktree" and restarts', () => {
  it(
    'a restarted job runs again in its worktree, and what the second run changed is committed too',
    async () => {
      const root = await repo();
      const { manager } = await managerFor(root, [
        writeStep('one.txt', '1\n'),
        { content: 'First run.' },
        writeStep('two.txt', '2\n'),
        { content: 'Second run.' },
      ]);
      const { id } = manager.spawn({ task: 'Write files.', label: 'twice' });
      await ended(manager, id);
      expect(manager.parentControls.worktree(id)?.changed).toEqual(['A one.txt']);
      manager.restart(id);
      const again = await ended(manager, id);
      expect(again.resultText).toContain('Second run.');
      expect(manager.parentControls.worktree(id)?.changed).toEqual(['A one.txt', 'A two.txt']);
      expect(git(root, 'status', '--porcelain')).toBe('');
    },
    TIMEOUT_MS,
  );
});

describe('workspace "worktree" and nesting', () => {
  it(
    "a child of a worktree job works in its parent's worktree, not in the workspace",
    async () => {
      const root = await repo();
      const spawnChild = { name: 'spawn_background_agent', arguments: { task: 'Write the child file.', label: 'child' } };
      const script: ScriptStep[] = [
        { toolCalls: [spawnChild] },
        { content: 'Waiting for my child.' },
        writeStep('child.txt', 'c\n'),
        { content: 'Child wrote.' },
        { content: 'Parent done.' },
      ];
      const sim = await startSim(cleanups, { script });
      const dir = tempDir(cleanups, 'forkpool-wt-');
      const config = makeConfig(sim, root, { maxConcurrent: 1, maxDepth: 2, worktreeDir: dir }, { grantedTools: [...WRITERS] });
      const manager = makeManager(config, cleanups);
      const { id } = manager.spawn({ task: 'Delegate the writing.', label: 'parent', workspace: 'worktree' });
      const record = await ended(manager, id);
      expect(record.children).toHaveLength(1);
      expect(existsSync(path.join(root, 'child.txt'))).toBe(false);
      expect(manager.parentControls.worktree(id)?.changed).toEqual(['A child.txt']);
      expect(manager.parentControls.worktree(record.children?.[0] ?? '')).toBeUndefined();
    },
    TIMEOUT_MS,
  );
});

describe('workspace "worktree" from the parent agent and the chat', () => {
  it(
    'spawn_background_agent with workspace "worktree" outside a repository is a tool error and nothing starts',
    async () => {
      const root = await makeWorkspace(cleanups);
      const spawn = { id: 'spawn', name: 'spawn_background_agent', arguments: { task: 'Write a file.', label: 'w', workspace: 'worktree' } };
      const sim = await startSim(cleanups, { script: [{ toolCalls: [spawn] }, { content: 'Could not start it.' }] });
      const session = new AgentSession({
        config: makeConfig(sim, root, { worktreeDir: tempDir(cleanups, 'forkpool-wt-') }, { grantedTools: [...WRITERS] }),
        closeExecutor: true,
      });
      cleanups.add(() => session.close({ timeoutMs: 2_000 }));
      await session.submit('Start a writer.');
      expect(toolResultsSent(sim).get('spawn')).toMatch(/^Error: workspace "worktree" cannot be used: .*not inside a git repository.*nothing was started$/s);
      expect(session.manager.jobs()).toEqual([]);
    },
    TIMEOUT_MS,
  );

  it(
    '/bg worktree <id> merge merges the branch; a bad action gets the usage line',
    async () => {
      const root = await repo();
      const sim = await startSim(cleanups, { script: [writeStep('docs.txt', 'from chat\n'), { content: 'Wrote it.' }] });
      const config = makeConfig(sim, root, { workspace: 'worktree', worktreeDir: tempDir(cleanups, 'forkpool-wt-') }, { grantedTools: [...WRITERS] });
      const session = new AgentSession({ config, closeExecutor: true });
      cleanups.add(() => session.close({ timeoutMs: 2_000 }));
      const { id } = session.manager.spawn({ task: 'Write docs.', label: 'docs', role: 'user' });
      await ended(session.manager, id);
      const said: string[] = [];
      const host: CommandHost = {
        session,
        now: () => Date.now(),
        jobs: () => session.manager.jobs(),
        userAgent: () => undefined,
        add: (_kind, text) => void said.push(text),
        togglePanel: () => {},
        startUserJob: () => {},
        beginWait: () => ({ signal: new AbortController().signal, done: () => {} }),
        cancelTurn: () => false,
        quit: async () => {},
      };
      // git runs in child processes: each answer is said once it is done.
      const answer = async (line: string) => {
        const before = said.length;
        runSlashCommand(host, line);
        // The echo of the command line comes first, at once.
        const reply = () => said.slice(before).find((text) => !text.startsWith('›'));
        await vi.waitFor(() => expect(reply()).toBeDefined(), { timeout: 30_000 });
        return reply();
      };
      expect(await answer(`/bg worktree ${id} squash`)).toBe('usage: /bg worktree <id|name> merge|keep|drop');
      expect(await answer(`/bg worktree ${id} merge`)).toContain(`branch forkpool/${id} was merged`);
      expect(readFileSync(path.join(root, 'docs.txt'), 'utf8')).toBe('from chat\n');
      expect(await answer(`/bg worktree ${id} merge`)).toMatch(/nothing to do/);
    },
    TIMEOUT_MS,
  );
});

// ToolError is what a refusal becomes for the model (checked through worktreeTool above).
void ToolError;
