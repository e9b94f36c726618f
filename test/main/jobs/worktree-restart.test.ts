/**
 * Worktree jobs across a restart and a resume, through the real manager, pool, sim and durable
 * ledger (SQLite): a job found again runs in its worktree (never in the workspace), an ended
 * job's kept branch can still be merged after the restart, a new run's job ids do not collide
 * with a kept worktree of an earlier run, and a resume goes on in the old job's worktree.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { BackgroundManager } from '../../../src/main/jobs/manager.js';
import { openSqliteLedger } from '../../../src/main/ledger/sqlite-store.js';
import type { ScriptStep } from '../../../src/sim/types.js';
import type { SimServer } from '../../../src/sim/index.js';
import { ended, git, gitRepo, ledgerFile, makeConfig, makeManager, startSim, tempDir, useCleanup } from '../../helpers/index.js';

const cleanups = useCleanup();
const TIMEOUT_MS = 120_000;

const repo = (): string => gitRepo(cleanups, { prefix: 'forkpool-wt-restart-', prune: true });

const write = (file: string, content: string): ScriptStep => ({ toolCalls: [{ name: 'write_file', arguments: { path: file, content } }] });

/**
 * One process's manager on the ledger file (a restart is a second one on the same file).
 * `onWorktreeKept`: called as a job's worktree is first written beside its spec (made, not yet launched).
 */
function durableManager(sim: SimServer, root: string, trees: string, file: string, onWorktreeKept?: (id: string) => void): BackgroundManager {
  const config = makeConfig(
    sim,
    root,
    { maxConcurrent: 1, workspace: 'worktree', worktreeDir: trees },
    { grantedTools: ['write_file'], ledger: { path: file } },
  );
  const store = openSqliteLedger(file);
  const jobs = store.jobs('m');
  const putSpec = jobs.putSpec.bind(jobs);
  jobs.putSpec = (spec) => {
    putSpec(spec);
    if (spec.worktree?.state === 'open') onWorktreeKept?.(spec.id);
  };
  const manager = new BackgroundManager({ config, store: jobs });
  cleanups.add(async () => {
    await manager.close({ timeoutMs: 2_000 });
    store.close();
  });
  return manager;
}

describe('worktree jobs across a restart', () => {
  it(
    'a queued worktree job found again by the next process runs in its worktree, not in the workspace',
    async () => {
      const root = repo();
      const trees = tempDir(cleanups, 'forkpool-wt-trees-');
      const file = ledgerFile(cleanups);
      // The process goes before the job ever starts (as its worktree is made): on disk it is queued, its worktree beside it.
      let closed: Promise<unknown> | undefined;
      const first = durableManager(await startSim(cleanups, { script: [] }), root, trees, file, () => void (closed ??= first.close({ timeoutMs: 2_000 })));
      const { id } = await first.spawnReady({ task: 'Write the notes.', label: 'writer' });
      const tree = first.parentControls.worktree(id);
      await closed;
      const sim = await startSim(cleanups, { script: [write('notes.md', 'after the restart\n'), { content: 'Wrote notes.' }] });
      const second = durableManager(sim, root, trees, file);
      expect(second.recovery?.requeued).toEqual([id]);
      const record = await ended(second, id);
      expect(record.status, JSON.stringify(record)).toBe('ok');
      expect(existsSync(path.join(root, 'notes.md'))).toBe(false);
      expect(readFileSync(path.join(tree?.path ?? '', 'notes.md'), 'utf8')).toBe('after the restart\n');
      expect(record.resultText).toContain(`branch ${tree?.branch}`);
      expect(second.parentControls.worktree(id)).toMatchObject({ state: 'kept', changed: ['A notes.md'] });
    },
    TIMEOUT_MS,
  );

  it(
    'a queued worktree job whose worktree was removed meanwhile ends WORKTREE_UNAVAILABLE in the next process; it never runs in the workspace',
    async () => {
      const root = repo();
      const trees = tempDir(cleanups, 'forkpool-wt-trees-');
      const file = ledgerFile(cleanups);
      let closed: Promise<unknown> | undefined;
      const first = durableManager(await startSim(cleanups, { script: [] }), root, trees, file, () => void (closed ??= first.close({ timeoutMs: 2_000 })));
      const { id } = await first.spawnReady({ task: 'Write the notes.', label: 'writer' });
      await closed;
      git(root, 'worktree', 'remove', '--force', first.parentControls.worktree(id)?.path ?? '');
      const sim = await startSim(cleanups, { script: [write('notes.md', 'in the workspace?\n'), { content: 'Wrote notes.' }] });
      const second = durableManager(sim, root, trees, file);
      expect(second.recovery?.interrupted).toEqual([id]);
      const record = await ended(second, id);
      expect(record.error).toMatchObject({ code: 'WORKTREE_UNAVAILABLE', message: expect.stringContaining('is gone') });
      expect(sim.requests).toHaveLength(0);
      expect(existsSync(path.join(root, 'notes.md'))).toBe(false);
    },
    TIMEOUT_MS,
  );

  it(
    "an ended job's kept branch is merged after a restart; a next run's bg-1 (ids start again in memory) gets forkpool/bg-1-2",
    async () => {
      const root = repo();
      const trees = tempDir(cleanups, 'forkpool-wt-trees-');
      const file = ledgerFile(cleanups);
      const first = durableManager(await startSim(cleanups, { script: [write('kept.txt', 'kept\n'), { content: 'Wrote.' }] }), root, trees, file);
      const { id } = await first.spawnReady({ task: 'Write kept.txt.', label: 'writer' });
      await ended(first, id);
      await first.close({ timeoutMs: 2_000 });

      // A manager with no ledger starts its ids at bg-1 again, while bg-1's branch is kept.
      const sim = await startSim(cleanups, { script: [write('other.txt', 'o\n'), { content: 'Wrote other.' }] });
      const fresh = makeManager(
        makeConfig(sim, root, { maxConcurrent: 1, workspace: 'worktree', worktreeDir: trees }, { grantedTools: ['write_file'] }),
        cleanups,
      );
      const again = await fresh.spawnReady({ task: 'Write other.txt.', label: 'other' });
      expect(again.id).toBe(id);
      expect(fresh.parentControls.worktree(again.id)).toMatchObject({ branch: `forkpool/${id}-2`, path: path.join(trees, `${id}-2`) });
      await ended(fresh, again.id);

      const second = durableManager(await startSim(cleanups, { script: [] }), root, trees, file);
      expect(second.parentControls.worktree(id)).toMatchObject({ state: 'kept', branch: `forkpool/${id}`, changed: ['A kept.txt'] });
      expect(await second.parentControls.worktreeAction(id, 'merge')).toContain('merged');
      expect(readFileSync(path.join(root, 'kept.txt'), 'utf8')).toBe('kept\n');
      // The other run's branch is its own, untouched.
      expect(git(root, 'branch', '--list', `forkpool/${id}-2`)).not.toBe('');
    },
    TIMEOUT_MS,
  );
});

describe('a child of a worktree job across a restart', () => {
  it(
    "restarted by hand in the next process, it works in its parent's worktree, not in the workspace",
    async () => {
      const root = repo();
      const trees = tempDir(cleanups, 'forkpool-wt-trees-');
      const file = ledgerFile(cleanups);
      const spawnChild = { name: 'spawn_background_agent', arguments: { task: 'Write the child file.', label: 'child' } };
      const script: ScriptStep[] = [
        { toolCalls: [spawnChild] },
        { content: 'Waiting for my child.' },
        write('child.txt', 'c\n'),
        { content: 'Child wrote.' },
        { content: 'Parent done.' },
      ];
      const nestedConfig = (sim: SimServer) =>
        makeConfig(sim, root, { maxConcurrent: 1, maxDepth: 2, worktreeDir: trees }, { grantedTools: ['write_file'], ledger: { path: file } });
      const open = (sim: SimServer) => {
        const store = openSqliteLedger(file);
        const manager = new BackgroundManager({ config: nestedConfig(sim), store: store.jobs('m') });
        cleanups.add(async () => {
          await manager.close({ timeoutMs: 2_000 });
          store.close();
        });
        return manager;
      };
      const first = open(await startSim(cleanups, { script }));
      const { id } = await first.spawnReady({ task: 'Delegate the writing.', label: 'parent', workspace: 'worktree' });
      const childId = (await ended(first, id)).children?.[0] as string;
      const treePath = first.parentControls.worktree(id)?.path as string;
      await first.close({ timeoutMs: 2_000 });

      const second = open(await startSim(cleanups, { script: [write('again.txt', 'again\n'), { content: 'Again.' }] }));
      second.restart(childId);
      expect((await ended(second, childId)).status).toBe('ok');
      expect(existsSync(path.join(root, 'again.txt'))).toBe(false);
      expect(readFileSync(path.join(treePath, 'again.txt'), 'utf8')).toBe('again\n');
    },
    TIMEOUT_MS,
  );
});

describe('a resumed worktree job', () => {
  it(
    "goes on in the old job's worktree and branch; the old job's id points to it; merging the resume brings both runs' files",
    async () => {
      const root = repo();
      const sim = await startSim(cleanups, { script: [write('a.txt', 'a\n'), { content: 'Wrote a.' }, write('b.txt', 'b\n'), { content: 'Wrote b.' }] });
      // The default workspace is shared: only the first spawn asks for a worktree.
      const config = makeConfig(sim, root, { maxConcurrent: 1, worktreeDir: tempDir(cleanups, 'forkpool-wt-trees-') }, { grantedTools: ['write_file'] });
      const manager = makeManager(config, cleanups);
      const first = manager.spawn({ task: 'Write a.txt.', label: 'writer', workspace: 'worktree' });
      await ended(manager, first.id);
      const resumed = manager.parentControls.resume(first.id, 'Now write b.txt as well.');
      const record = await ended(manager, resumed.id);
      expect(existsSync(path.join(root, 'b.txt'))).toBe(false);
      expect(manager.parentControls.worktree(resumed.id)).toMatchObject({ branch: `forkpool/${first.id}`, state: 'kept', changed: ['A a.txt', 'A b.txt'] });
      expect(record.resultText).toContain(`branch forkpool/${first.id}`);
      await expect(manager.parentControls.worktreeAction(first.id, 'drop')).rejects.toMatchObject({
        code: 'WORKTREE_ACTION_FAILED',
        message: expect.stringContaining(`went on with job ${resumed.id}`),
      });
      expect(await manager.parentControls.worktreeAction(resumed.id, 'merge')).toContain('merged');
      expect(readFileSync(path.join(root, 'a.txt'), 'utf8')).toBe('a\n');
      expect(readFileSync(path.join(root, 'b.txt'), 'utf8')).toBe('b\n');
    },
    TIMEOUT_MS,
  );

  it(
    'after its branch was merged, goes on in a fresh worktree from the workspace HEAD, never in the workspace itself',
    async () => {
      const root = repo();
      const sim = await startSim(cleanups, { script: [write('a.txt', 'a\n'), { content: 'Wrote a.' }, write('c.txt', 'c\n'), { content: 'Wrote c.' }] });
      const config = makeConfig(sim, root, { maxConcurrent: 1, worktreeDir: tempDir(cleanups, 'forkpool-wt-trees-') }, { grantedTools: ['write_file'] });
      const manager = makeManager(config, cleanups);
      const first = manager.spawn({ task: 'Write a.txt.', label: 'writer', workspace: 'worktree' });
      await ended(manager, first.id);
      await manager.parentControls.worktreeAction(first.id, 'merge');
      const resumed = manager.parentControls.resume(first.id, 'Now write c.txt.');
      await ended(manager, resumed.id);
      expect(existsSync(path.join(root, 'c.txt'))).toBe(false);
      expect(manager.parentControls.worktree(resumed.id)).toMatchObject({
        branch: `forkpool/${resumed.id}`,
        base: git(root, 'rev-parse', 'HEAD'),
        changed: ['A c.txt'],
      });
    },
    TIMEOUT_MS,
  );
});
