/**
 * A worktree job's commit (src/main/jobs/job-worktrees.ts, worktrees.ts) on a real repository:
 * its git runs in child processes awaited off the main thread (the event loop keeps turning
 * while it commits), and a job that left more files or bytes than one commit may hold is not
 * committed: its worktree is left as it is, its result says why, and it can be dropped, not merged.
 */
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { JobWorktrees } from '../../../src/main/jobs/job-worktrees.js';
import type { JobWorktree } from '../../../src/main/jobs/worktrees.js';
import { git, gitRepo, tempDir, useCleanup } from '../../helpers/index.js';
import { childrenDuring } from '../../helpers/child-processes.js';

const cleanups = useCleanup();

const repo = (): string => gitRepo(cleanups, { prefix: 'forkpool-commit-repo-' });

describe("a worktree job's commit", () => {
  it('runs off the main thread: at least ten git child processes, and the event loop turned while each ran, as a job that wrote 1,500 files and 40 MB is committed', async () => {
    const root = repo();
    const trees = new JobWorktrees({ dir: tempDir(cleanups, 'forkpool-commit-trees-') });
    const tree = (await trees.prepare('bg-1', root, () => true)) as JobWorktree;
    mkdirSync(path.join(tree.path, 'many'));
    for (let i = 0; i < 1_500; i++) writeFileSync(path.join(tree.path, 'many', `f${i}.txt`), `${i}\n`);
    writeFileSync(path.join(tree.path, 'big.bin'), Buffer.alloc(40 * 1024 * 1024, 7));
    const { turnsPerChild } = await childrenDuring(() => trees.commit('bg-1', 'many files') ?? Promise.resolve());
    // Five git commands (status, add, diff --cached, commit, diff --name-status), each after a
    // config listing: at least ten child processes, and the loop turned while each one ran.
    // Run with spawnSync there would be no child to see, and no turn while git works.
    expect(turnsPerChild.length).toBeGreaterThanOrEqual(10);
    for (const turns of turnsPerChild) expect(turns).toBeGreaterThanOrEqual(1);
    expect(trees.finish('bg-1', 'many files')).toContain('1501 file(s) changed');
    expect(trees.get('bg-1')?.state).toBe('kept');
    expect(git(root, 'rev-list', '--count', `forkpool/bg-1`)).toBe('2');
  }, 120_000);

  it('more files than one commit may hold: not committed, the worktree left as it is, the result says why; merge refused, drop removes it', async () => {
    const root = repo();
    const trees = new JobWorktrees({ dir: tempDir(cleanups, 'forkpool-commit-trees-'), limits: { maxCommitFiles: 5, maxCommitBytes: 1_000_000 } });
    const tree = (await trees.prepare('bg-1', root, () => true)) as JobWorktree;
    for (let i = 0; i < 6; i++) writeFileSync(path.join(tree.path, `f${i}.txt`), `${i}\n`);
    await trees.commit('bg-1', 'six files');
    const text = trees.finish('bg-1', 'six files');
    expect(text).toContain('not committed: it changed 6 files, more than the 5 one commit may hold');
    expect(trees.get('bg-1')).toMatchObject({ state: 'uncommitted' });
    // Nothing is lost: the files are still there, and the branch has no commit of them.
    expect(readdirSync(tree.path).filter((name) => name.startsWith('f'))).toHaveLength(6);
    expect(git(root, 'rev-parse', 'forkpool/bg-1')).toBe(git(root, 'rev-parse', 'HEAD'));
    await expect(trees.act('bg-1', 'merge')).rejects.toMatchObject({ code: 'WORKTREE_ACTION_FAILED', message: expect.stringMatching(/cannot be merged/) });
    expect(await trees.act('bg-1', 'drop')).toContain('dropped');
    expect(existsSync(tree.path)).toBe(false);
  });

  it('more bytes than one commit may hold: not committed, the result names the bound', async () => {
    const root = repo();
    const trees = new JobWorktrees({ dir: tempDir(cleanups, 'forkpool-commit-trees-'), limits: { maxCommitFiles: 100, maxCommitBytes: 10_000 } });
    const tree = (await trees.prepare('bg-1', root, () => true)) as JobWorktree;
    writeFileSync(path.join(tree.path, 'small.txt'), 'ok\n');
    writeFileSync(path.join(tree.path, 'big.bin'), Buffer.alloc(20_000, 1));
    await trees.commit('bg-1', 'big');
    expect(trees.finish('bg-1', 'big')).toContain('not committed: its changed files hold more than the 10000 bytes one commit may hold');
    expect(existsSync(path.join(tree.path, 'big.bin'))).toBe(true);
    expect(git(tree.path, 'status', '--porcelain')).toContain('big.bin');
  });
});
