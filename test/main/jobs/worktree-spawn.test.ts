/**
 * A worktree job's spawn-time git (the checks and `git worktree add`, job-worktrees.ts
 * `prepare`) through the real manager, pool, sim and repository: spawn() books the job and
 * answers before any git runs; the git runs in child processes awaited off the main thread;
 * a cancel or a close while the worktree is being made leaves no worktree or branch, and a
 * restart never runs such a job in the workspace.
 */
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { createExecutor } from '../../../src/main/jobs/executor-factory.js';
import { BackgroundManager } from '../../../src/main/jobs/manager.js';
import { openSqliteLedger } from '../../../src/main/ledger/sqlite-store.js';
import type { SimServer } from '../../../src/sim/index.js';
import type { ScriptStep } from '../../../src/sim/types.js';
import { ended, git, gitRepo, ledgerFile, makeConfig, makeManager, startSim, startedJob, tempDir, useCleanup } from '../../helpers/index.js';
import { watchChildren } from '../../helpers/child-processes.js';

const cleanups = useCleanup();
const TIMEOUT_MS = 120_000;

const repo = (): string => gitRepo(cleanups, { prefix: 'forkpool-wt-spawn-', prune: true });

const write = (file: string, content: string): ScriptStep => ({ toolCalls: [{ name: 'write_file', arguments: { path: file, content } }] });

function worktreeConfig(sim: SimServer, root: string, trees: string, ledger?: string) {
  return makeConfig(
    sim,
    root,
    { maxConcurrent: 1, workspace: 'worktree', worktreeDir: trees },
    { grantedTools: ['write_file'], ...(ledger ? { ledger: { path: ledger } } : {}) },
  );
}

/** Nothing forkpool made is left: no worktree folder, no `forkpool/*` branch, no worktree git knows of but the checkout. */
function expectNoWorktreeLeft(root: string, trees: string): void {
  expect(readdirSync(trees)).toEqual([]);
  expect(git(root, 'branch', '--list', 'forkpool/*')).toBe('');
  expect(git(root, 'worktree', 'list', '--porcelain').match(/^worktree /gm)).toHaveLength(1);
}

describe("a worktree job's spawn-time git", () => {
  it(
    'spawn() answers before any git runs; the checks and the worktree add run in child processes, and the event loop turned while each ran',
    async () => {
      const root = repo();
      const trees = tempDir(cleanups, 'forkpool-wt-spawn-trees-');
      const sim = await startSim(cleanups, { script: [write('notes.md', 'n\n'), { content: 'Wrote notes.' }] });
      const manager = makeManager(worktreeConfig(sim, root, trees), cleanups);
      const watch = watchChildren();
      try {
        const { id, state } = manager.spawn({ task: 'Write the notes.', label: 'writer' });
        // Booked, and no git ran inside spawn(): no child process yet, no worktree yet.
        expect(state).toBe('queued');
        expect(watch.turnsPerChild()).toEqual([]);
        expect(manager.parentControls.worktree(id)).toBeUndefined();
        await startedJob(manager, id);
        const turns = watch.turnsPerChild();
        // rev-parse ×3, a git-path per operation marker (5), status, show-prefix, the branch check
        // and the add: at least 12 commands, each a child process (and a config listing before each).
        // Run with spawnSync there would be no child process to see, and no turn while git works.
        expect(turns.length).toBeGreaterThanOrEqual(12);
        for (const seen of turns) expect(seen).toBeGreaterThanOrEqual(1);
        expect(manager.parentControls.worktree(id)).toMatchObject({ branch: `forkpool/${id}`, state: 'open', path: path.join(trees, id) });
      } finally {
        watch.stop();
      }
    },
    TIMEOUT_MS,
  );

  it(
    'jobs held while their worktrees are made count against background.queueLimit: a spawn past it is QUEUE_FULL at once',
    async () => {
      const root = repo();
      const trees = tempDir(cleanups, 'forkpool-wt-spawn-trees-');
      const sim = await startSim(cleanups, { script: [] });
      const config = makeConfig(sim, root, { maxConcurrent: 1, queueLimit: 2, workspace: 'worktree', worktreeDir: trees }, { grantedTools: ['write_file'] });
      const manager = makeManager(config, cleanups);
      // One takes the free slot once ready; two more wait; none is queued yet (all three are held).
      const held = [1, 2, 3].map((n) => manager.spawn({ task: `Write ${n}.`, label: `w${n}` }).id);
      expect(() => manager.spawn({ task: 'Write 4.', label: 'w4' })).toThrow(expect.objectContaining({ code: 'QUEUE_FULL' }));
      for (const id of held) manager.cancel(id);
      await manager.close({ timeoutMs: 2_000 });
      expectNoWorktreeLeft(root, trees);
    },
    TIMEOUT_MS,
  );

  it(
    'cancelled while its worktree is being made: the job ends cancelled, nothing runs, and the worktree made meanwhile is removed with its branch',
    async () => {
      const root = repo();
      const trees = tempDir(cleanups, 'forkpool-wt-spawn-trees-');
      const sim = await startSim(cleanups, { script: [{ content: 'The second job answered.' }] });
      const manager = makeManager(worktreeConfig(sim, root, trees), cleanups);
      let id = '';
      // Cancelled at the third git child process: mid-checks, before the worktree add.
      const watch = watchChildren((count) => {
        if (count === 3) queueMicrotask(() => manager.cancel(id));
      });
      try {
        id = manager.spawn({ task: 'Write the notes.', label: 'writer' }).id;
        const record = await ended(manager, id);
        expect(record.status).toBe('cancelled');
        expect(record.attempts).toBe(0);
        // Worktrees are made one at a time: once a second job's is made, the first's preparation
        // has settled (it went on to the worktree add, then removed what it made).
        const second = await manager.spawnReady({ task: 'Answer.', label: 'second' });
        expect(watch.turnsPerChild().length).toBeGreaterThan(20);
        expect(readdirSync(trees)).toEqual([second.id]);
        expect(git(root, 'branch', '--list', '--format=%(refname:short)', 'forkpool/*')).toBe(`forkpool/${second.id}`);
        await ended(manager, second.id);
      } finally {
        watch.stop();
      }
      expect(manager.parentControls.worktree(id)).toBeUndefined();
    },
    TIMEOUT_MS,
  );

  it(
    'close() while a worktree is being made leaves none behind; the next process ends that job WORKTREE_UNAVAILABLE and never runs it in the workspace',
    async () => {
      const root = repo();
      const trees = tempDir(cleanups, 'forkpool-wt-spawn-trees-');
      const file = ledgerFile(cleanups);
      // The first process's executor is not its manager's to close: its close() has nothing else to wait for.
      const open = (sim: SimServer, shared = false) => {
        const store = openSqliteLedger(file);
        const config = worktreeConfig(sim, root, trees, file);
        const executor = shared ? createExecutor(config) : undefined;
        if (executor) cleanups.add(() => executor.close());
        const manager = new BackgroundManager({ config, store: store.jobs('m'), ...(executor ? { executor } : {}) });
        cleanups.add(async () => {
          await manager.close({ timeoutMs: 2_000 });
          store.close();
        });
        return { manager, store };
      };
      const first = open(await startSim(cleanups, { script: [] }), true);
      let closing: Promise<unknown> | undefined;
      const watch = watchChildren((count) => {
        if (count === 3) queueMicrotask(() => void (closing = first.manager.close({ timeoutMs: 2_000 })));
      });
      let id = '';
      try {
        id = first.manager.spawn({ task: 'Write the notes.', label: 'writer' }).id;
        await vi.waitFor(() => expect(closing).toBeDefined(), { timeout: 60_000, interval: 10 });
        await closing;
        // close() resolved after the git it started had ended, and what it made was removed again:
        // a process that exits now leaves no worktree behind.
        expect(watch.running()).toBe(0);
        expect(watch.turnsPerChild().length).toBeGreaterThan(3);
      } finally {
        watch.stop();
      }
      expectNoWorktreeLeft(root, trees);
      first.store.close();

      const sim = await startSim(cleanups, { script: [write('notes.md', 'in the workspace?\n'), { content: 'Wrote.' }] });
      const second = open(sim);
      expect(second.manager.recovery?.interrupted).toEqual([id]);
      const record = second.manager.get(id);
      expect(record?.status).toBe('failed');
      expect(record?.error).toMatchObject({ code: 'WORKTREE_UNAVAILABLE', message: expect.stringContaining('its worktree was still being made') });
      expect(() => second.manager.restart(id)).toThrow(expect.objectContaining({ code: 'WORKTREE_UNAVAILABLE' }));
      await second.manager.onIdle();
      expect(sim.requests).toHaveLength(0);
      expect(existsSync(path.join(root, 'notes.md'))).toBe(false);
    },
    TIMEOUT_MS,
  );
});
