/**
 * Real git repositories for the worktree tests: `git` (runs with a test identity, output
 * trimmed), `tempDir` (a real-path temp folder removed after the test), `gitRepo` (a temp
 * repository on branch main with one commit of a README) and the parts it is made of.
 *
 *   const root = gitRepo(cleanup, { prefix: 'forkpool-wt-', prune: true });
 *   const trees = tempDir(cleanup, 'forkpool-wt-trees-');
 *   expect(git(root, 'rev-list', '--count', 'main')).toBe('1');
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Cleanup } from './cleanup.js';

/** Runs `git -C cwd ...args` with a test author; returns its stdout, trimmed. */
export function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', ['-C', cwd, '-c', 'user.name=t', '-c', 'user.email=t@t', ...args], { encoding: 'utf8' }).trim();
}

/** A fresh temp folder (its real path: git reports real paths), removed after the test. */
export function tempDir(cleanup: Cleanup, prefix: string): string {
  const dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), prefix)));
  cleanup.add(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Makes `root` a repository on branch main and commits all it holds as `base`. */
export function commitBase(root: string): void {
  git(root, 'init', '-q', '-b', 'main');
  git(root, 'add', '-A');
  git(root, 'commit', '-qm', 'base');
}

/**
 * After the test, `git worktree prune` in `root`: worktrees a failing test left are forgotten
 * once their temp folders are gone. Register it before those folders so it runs after them.
 */
export function pruneWorktreesAfter(cleanup: Cleanup, root: string): void {
  cleanup.add(() => {
    if (existsSync(path.join(root, '.git'))) execFileSync('git', ['-C', root, 'worktree', 'prune']);
  });
}

export interface GitRepoOptions {
  /** The temp folder's name prefix. */
  prefix: string;
  /** The committed README.md's content (default `base\n`). */
  readme?: string;
  /** Prune the repository's worktrees after the test (see pruneWorktreesAfter). */
  prune?: boolean;
}

/** A temp repository on branch main with one commit (`base`) of a README.md; removed after the test. */
export function gitRepo(cleanup: Cleanup, opts: GitRepoOptions): string {
  const root = tempDir(cleanup, opts.prefix);
  writeFileSync(path.join(root, 'README.md'), opts.readme ?? 'base\n');
  commitBase(root);
  if (opts.prune) pruneWorktreesAfter(cleanup, root);
  return root;
}
