/**
 * Worktree isolation for writing jobs (`workspace: "worktree"`): a job runs in a fresh
 * `git worktree` of the workspace on its own branch `forkpool/<job-id>` from the workspace's
 * HEAD, and the parent merges, keeps or drops it afterwards. Every git command runs here, on the
 * main thread, never in the job: inside bubblewrap only the worktree is mounted, so the main
 * repository's `.git` (which the worktree's `.git` file points into) is out of the job's reach.
 *
 * The worktrees live outside the repository, in `background.worktreeDir` (default: the user's
 * cache folder, `forkpool/worktrees/<repo>-<hash>/`), so the parent's own tools never walk them.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, realpathSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { JobError } from '../../shared/errors.js';

export const WORKSPACE_MODES = ['shared', 'worktree'] as const;
export type WorkspaceMode = (typeof WORKSPACE_MODES)[number];
export const WORKTREE_ACTIONS = ['merge', 'keep', 'drop'] as const;
export type WorktreeAction = (typeof WORKTREE_ACTIONS)[number];

/** One job's worktree. */
export interface JobWorktree {
  jobId: string;
  branch: string;
  /** The commit it was made from (the workspace's HEAD at spawn). */
  base: string;
  /** The main repository's top folder (where a merge runs). */
  repoRoot: string;
  /** The worktree's top folder. */
  path: string;
  /** The job's workspace root: the worktree, or the same subfolder of it the workspace was of the repository. */
  workspaceRoot: string;
  /** `open` until the job ended; then `kept` (changes committed on its branch) or `removed` (no change); later `merged` or `dropped`. */
  state: 'open' | 'kept' | 'removed' | 'merged' | 'dropped';
  /** What it changed against `base` (`M path`, `A path`, `D path`...), set when the job ended. */
  changed?: string[];
}

interface GitRun {
  ok: boolean;
  stdout: string;
  stderr: string;
  missing: boolean;
}

/** git with no prompt, no pager, no editor; the user's hooks do not run on forkpool's own commits (`--no-verify` where it commits). */
function git(cwd: string, args: readonly string[]): GitRun {
  const run = spawnSync('git', ['-C', cwd, ...args], {
    encoding: 'utf8',
    env: { ...process.env, GIT_TERMINAL_PROMPT: '0', GIT_EDITOR: 'true', GIT_PAGER: 'cat', LC_ALL: 'C' },
    maxBuffer: 32 * 1024 * 1024,
  });
  const missing = (run.error as NodeJS.ErrnoException | undefined)?.code === 'ENOENT';
  return { ok: run.status === 0 && !run.error, stdout: run.stdout ?? '', stderr: (run.stderr ?? '').trim(), missing };
}

function unavailable(what: string): JobError {
  return new JobError(
    'WORKTREE_UNAVAILABLE',
    '-',
    `workspace "worktree" cannot be used: ${what}. Spawn with workspace "shared" instead, or fix the repository first; nothing was started`,
  );
}

/** What a worktree is made from, checked before the job is booked. */
export interface WorktreeBase {
  repoRoot: string;
  /** The workspace's path inside the repository ('' at its top). */
  prefix: string;
  head: string;
}

/**
 * Checks that the workspace can give a worktree: git is installed, the workspace is inside a
 * repository with a commit, no merge, rebase, cherry-pick or revert is under way, and tracked
 * files have no uncommitted change (the job would not see it, and a merge back could clash with
 * it). Untracked files are allowed: they simply are not in the worktree. Throws `WORKTREE_UNAVAILABLE`.
 */
export function worktreeBase(workspaceRoot: string): WorktreeBase {
  const top = git(workspaceRoot, ['rev-parse', '--show-toplevel']);
  if (top.missing) throw unavailable('git is not installed (no "git" on PATH)');
  if (!top.ok) throw unavailable(`the workspace ${JSON.stringify(workspaceRoot)} is not inside a git repository (${top.stderr || 'git rev-parse failed'})`);
  const repoRoot = top.stdout.trim();
  const head = git(workspaceRoot, ['rev-parse', '--verify', '--quiet', 'HEAD^{commit}']);
  if (!head.ok) throw unavailable('the repository has no commit yet (HEAD is unborn)');
  for (const marker of ['MERGE_HEAD', 'CHERRY_PICK_HEAD', 'REVERT_HEAD', 'rebase-merge', 'rebase-apply']) {
    const where = git(workspaceRoot, ['rev-parse', '--git-path', marker]).stdout.trim();
    if (where && existsSync(path.resolve(workspaceRoot, where)))
      throw unavailable(`the repository is in the middle of an operation (${marker} exists); finish or abort it`);
  }
  const dirty = git(repoRoot, ['status', '--porcelain', '--untracked-files=no']);
  if (!dirty.ok) throw unavailable(`git status failed: ${dirty.stderr}`);
  const lines = dirty.stdout.split('\n').filter(Boolean);
  if (lines.length > 0) {
    const shown = lines
      .slice(0, 5)
      .map((l) => l.trim())
      .join(', ');
    throw unavailable(`tracked files have uncommitted changes (${shown}${lines.length > 5 ? `, and ${lines.length - 5} more` : ''}); commit or stash them`);
  }
  const prefix = git(workspaceRoot, ['rev-parse', '--show-prefix']).stdout.trim();
  return { repoRoot, prefix, head: head.stdout.trim() };
}

/** Where a repository's worktrees go: `dir` when set, else the user's cache folder, one subfolder per repository. */
export function worktreeParent(repoRoot: string, dir: string): string {
  if (dir !== '') return path.resolve(dir);
  const cache = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  const hash = createHash('sha256').update(repoRoot).digest('hex').slice(0, 10);
  return path.join(cache, 'forkpool', 'worktrees', `${path.basename(repoRoot)}-${hash}`);
}

/** Makes the job's worktree on a new branch `forkpool/<job-id>` from `base.head`. Throws `WORKTREE_UNAVAILABLE`. */
export function createWorktree(base: WorktreeBase, jobId: string, dir: string): JobWorktree {
  const parent = worktreeParent(base.repoRoot, dir);
  mkdirSync(parent, { recursive: true });
  const where = path.join(realpathSync(parent), jobId);
  const branch = `forkpool/${jobId}`;
  if (existsSync(where)) throw unavailable(`${where} already exists (a worktree left by an earlier session?); remove it with git worktree remove`);
  const added = git(base.repoRoot, ['worktree', 'add', '--quiet', '-b', branch, where, base.head]);
  if (!added.ok) throw unavailable(`git worktree add failed: ${added.stderr}`);
  return { jobId, branch, base: base.head, repoRoot: base.repoRoot, path: where, workspaceRoot: path.join(where, base.prefix), state: 'open' };
}

/** Commits forkpool's own snapshot of the worktree; no user hook, no signing, a fixed author. */
const COMMIT_FLAGS = ['-c', 'user.name=forkpool', '-c', 'user.email=forkpool@localhost', '-c', 'commit.gpgsign=false'];

/**
 * The job ended: whatever it changed is committed on its branch and listed against the base; a
 * worktree with no change is removed, with its branch. Never throws: a failure is said in the text.
 */
export function finishWorktree(tree: JobWorktree, label: string): string {
  // `kept` too: a restarted job ran again in the same worktree, and its new changes are committed as well.
  if (tree.state !== 'open' && tree.state !== 'kept') return describe(tree);
  const added = git(tree.path, ['add', '-A']);
  if (!added.ok) return `Worktree ${tree.path} (branch ${tree.branch}): its changes could not be staged: ${added.stderr}. It is kept as it is.`;
  const staged = git(tree.path, ['diff', '--cached', '--quiet']);
  if (staged.ok) {
    if (git(tree.path, ['rev-parse', 'HEAD']).stdout.trim() === tree.base) {
      removeWorktree(tree);
      tree.state = 'removed';
      tree.changed = [];
      return describe(tree);
    }
  } else {
    const commit = git(tree.path, [...COMMIT_FLAGS, 'commit', '--quiet', '--no-verify', '-m', `forkpool job ${tree.jobId}: ${label}`.slice(0, 200)]);
    if (!commit.ok) return `Worktree ${tree.path} (branch ${tree.branch}): its changes could not be committed: ${commit.stderr}. It is kept as it is.`;
  }
  const diff = git(tree.repoRoot, ['diff', '--name-status', '--no-renames', tree.base, tree.branch]);
  tree.changed = diff.stdout
    .split('\n')
    .filter(Boolean)
    .map((line) => line.replace('\t', ' '));
  tree.state = 'kept';
  return describe(tree);
}

/** The line the job's result ends with, and what the tools answer. */
export function describe(tree: JobWorktree): string {
  const base = tree.base.slice(0, 12);
  switch (tree.state) {
    case 'open':
      return `Worktree ${tree.path} on branch ${tree.branch} (from ${base}): the job is still running.`;
    case 'removed':
      return `Worktree: the job changed no file, so its worktree and branch ${tree.branch} were removed.`;
    case 'merged':
      return `Worktree: branch ${tree.branch} was merged into the workspace; the worktree and the branch were removed.`;
    case 'dropped':
      return `Worktree: branch ${tree.branch} and its worktree were dropped; nothing of it was merged.`;
    case 'kept': {
      const files = tree.changed ?? [];
      const list = files.slice(0, 50).join(', ') + (files.length > 50 ? `, and ${files.length - 50} more` : '');
      return (
        `Worktree: the job's changes are committed on branch ${tree.branch} (from ${base}, worktree ${tree.path}); ` +
        `${files.length} file(s) changed: ${list}. Merge, keep or drop it with background_worktree.`
      );
    }
  }
}

function removeWorktree(tree: JobWorktree): void {
  git(tree.repoRoot, ['worktree', 'remove', '--force', tree.path]);
  git(tree.repoRoot, ['branch', '-D', tree.branch]);
}

/**
 * The parent's decision on an ended job's worktree. `merge` merges its branch into the
 * workspace's current branch (`--no-ff`); a conflict is aborted (`git merge --abort`), nothing
 * is left half-merged and the branch is kept. `drop` removes worktree and branch; `keep` leaves
 * both for the user. Throws `WORKTREE_ACTION_FAILED` with what git said.
 */
export function actOnWorktree(tree: JobWorktree, action: WorktreeAction): string {
  const fail = (why: string) => new JobError('WORKTREE_ACTION_FAILED', tree.jobId, `${action} of job ${tree.jobId}'s worktree (branch ${tree.branch}): ${why}`);
  if (tree.state === 'open') throw fail('the job has not ended yet; wait for its result');
  if (tree.state !== 'kept') throw fail(`nothing to do: ${describe(tree)}`);
  if (action === 'keep') return `Kept: branch ${tree.branch} and worktree ${tree.path} stay as they are, for you or the user to review.`;
  if (action === 'drop') {
    removeWorktree(tree);
    tree.state = 'dropped';
    return describe(tree);
  }
  const merge = git(tree.repoRoot, [
    ...COMMIT_FLAGS,
    'merge',
    '--no-ff',
    '--no-verify',
    '--no-edit',
    '-m',
    `Merge ${tree.branch} (forkpool job ${tree.jobId})`,
    tree.branch,
  ]);
  if (!merge.ok) {
    const conflicts = git(tree.repoRoot, ['diff', '--name-only', '--diff-filter=U']).stdout.split('\n').filter(Boolean);
    // Only a merge that got under way has anything to abort; one refused up front (a dirty file in the way) left nothing.
    if (git(tree.repoRoot, ['rev-parse', '-q', '--verify', 'MERGE_HEAD']).ok) git(tree.repoRoot, ['merge', '--abort']);
    const what = conflicts.length > 0 ? `conflicts in ${conflicts.join(', ')}` : merge.stderr || merge.stdout.trim() || 'git merge failed';
    throw fail(`not merged (${what}); the merge was aborted, the workspace is as it was, and the branch is kept`);
  }
  removeWorktree(tree);
  tree.state = 'merged';
  return describe(tree);
}

/** The worktrees of one manager's jobs, by job id (in memory: a durable restart runs a job again in the shared workspace). */
export class JobWorktrees {
  readonly #trees = new Map<string, JobWorktree>();
  readonly #dir: string;

  /** `dir`: `background.worktreeDir` ('' for the cache folder). */
  constructor(dir: string) {
    this.#dir = dir;
  }

  /** Makes job `jobId`'s worktree from a checked base (see {@link worktreeBase}). */
  open(jobId: string, base: WorktreeBase): JobWorktree {
    const tree = createWorktree(base, jobId, this.#dir);
    this.#trees.set(jobId, tree);
    return tree;
  }

  /** Worktrees made for a spawn that then failed to book (the ledger refused it): removed again. */
  abandonUnbooked(booked: (jobId: string) => boolean): void {
    for (const [jobId, tree] of this.#trees) {
      // Only a tree still open can be the refused spawn's (an ended job's tree outlives its forgotten record).
      if (tree.state !== 'open' || booked(jobId)) continue;
      this.#trees.delete(jobId);
      removeWorktree(tree);
    }
  }

  get(jobId: string): Readonly<JobWorktree> | undefined {
    const tree = this.#trees.get(jobId);
    return tree && { ...tree, ...(tree.changed ? { changed: [...tree.changed] } : {}) };
  }

  /** At the job's end: the sentence its result ends with (undefined for a job in the shared workspace). */
  finish(jobId: string, label: string): string | undefined {
    const tree = this.#trees.get(jobId);
    return tree && finishWorktree(tree, label);
  }

  act(jobId: string, action: WorktreeAction): string {
    const tree = this.#trees.get(jobId);
    if (!tree) throw new JobError('WORKTREE_ACTION_FAILED', jobId, `job ${jobId} ran in the shared workspace: it has no worktree to ${action}`);
    return actOnWorktree(tree, action);
  }
}
