/**
 * Worktree isolation for writing jobs (`workspace: "worktree"`): a job runs in a fresh
 * `git worktree` of the workspace on its own branch `forkpool/<job-id>` from the workspace's
 * HEAD, and the parent merges, keeps or drops it afterwards. Every git command runs here, on the
 * main thread's side, never in the job: inside bubblewrap only the worktree is mounted, so the
 * main repository's `.git` (which the worktree's `.git` file points into) is out of the job's reach.
 * Every one goes through git-leash.ts: no hook, filter, fsmonitor or external diff the
 * workspace could plant runs, and every one (the checks and the `worktree add` before a job's
 * first launch, the commit, the merge) is a child process awaited asynchronously, bounded in
 * time; a job's commit is bounded in size (WORKTREE_LIMITS).
 *
 * The worktrees live outside the repository, in `background.worktreeDir` (default: the user's
 * cache folder, `forkpool/worktrees/<repo>-<hash>/`), so the parent's own tools never walk them.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { lstat, mkdir, realpath } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { WORKTREE_LIMITS } from '../../shared/fixed-limits.js';
import { JobError } from '../../shared/errors.js';
import { git as leashedGit, type GitRun } from './git-leash.js';

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
  /**
   * `open` until the job ended; then `kept` (changes committed on its branch), `removed` (no
   * change) or `uncommitted` (its changes could not be committed: too big, or git failed; the
   * worktree is left as it is); later `merged` or `dropped`.
   */
  state: WorktreeState;
  /** What it changed against `base` (`M path`, `A path`, `D path`...), set when the job ended. */
  changed?: string[];
  /** Why its changes are `uncommitted`. */
  problem?: string;
  /** A resume of the job went on in this worktree: that job's id (it merges, keeps or drops it now). */
  handedTo?: string;
}

export const WORKTREE_STATES = ['open', 'kept', 'removed', 'uncommitted', 'merged', 'dropped'] as const;
export type WorktreeState = (typeof WORKTREE_STATES)[number];

/** The checks and the `worktree add` before a job's first launch, awaited off the main thread; `workTrees`: the checkouts no config may come from. */
function quick(cwd: string, args: readonly string[], workTrees: readonly string[] = [cwd]): Promise<GitRun> {
  return leashedGit(cwd, args, { workTrees, timeoutMs: WORKTREE_LIMITS.quickTimeoutMs });
}

/** A command of an ended job's worktree, awaited off the main thread; no config may come from the repository's checkout or the worktree. */
function git(tree: JobWorktree, cwd: string, args: readonly string[]): Promise<GitRun> {
  return leashedGit(cwd, args, { workTrees: [tree.repoRoot, tree.path] });
}

function unavailable(what: string): JobError {
  return new JobError(
    'WORKTREE_UNAVAILABLE',
    '-',
    `workspace "worktree" cannot be used: ${what}. Spawn with workspace "shared" instead, or fix the repository first`,
  );
}

/** What a worktree is made from, checked before the job's first launch (and, for spawnReady, before it is booked). */
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
export async function worktreeBase(workspaceRoot: string): Promise<WorktreeBase> {
  const top = await quick(workspaceRoot, ['rev-parse', '--show-toplevel']);
  if (top.missing) throw unavailable('git is not installed (no "git" on PATH)');
  if (!top.ok) throw unavailable(`the workspace ${JSON.stringify(workspaceRoot)} is not inside a git repository (${top.stderr || 'git rev-parse failed'})`);
  const repoRoot = top.stdout.trim();
  const inRepo = (args: readonly string[]) => quick(workspaceRoot, args, [repoRoot]);
  const head = await inRepo(['rev-parse', '--verify', '--quiet', 'HEAD^{commit}']);
  if (!head.ok) throw unavailable(head.stderr ? `git rev-parse HEAD failed: ${head.stderr}` : 'the repository has no commit yet (HEAD is unborn)');
  for (const marker of ['MERGE_HEAD', 'CHERRY_PICK_HEAD', 'REVERT_HEAD', 'rebase-merge', 'rebase-apply']) {
    const where = (await inRepo(['rev-parse', '--git-path', marker])).stdout.trim();
    if (where && existsSync(path.resolve(workspaceRoot, where)))
      throw unavailable(`the repository is in the middle of an operation (${marker} exists); finish or abort it`);
  }
  const dirty = await quick(repoRoot, ['status', '--porcelain', '--untracked-files=no']);
  if (!dirty.ok) throw unavailable(`git status failed: ${dirty.stderr}`);
  const lines = dirty.stdout.split('\n').filter(Boolean);
  if (lines.length > 0) {
    const shown = lines
      .slice(0, 5)
      .map((l) => l.trim())
      .join(', ');
    throw unavailable(`tracked files have uncommitted changes (${shown}${lines.length > 5 ? `, and ${lines.length - 5} more` : ''}); commit or stash them`);
  }
  const prefix = (await inRepo(['rev-parse', '--show-prefix'])).stdout.trim();
  return { repoRoot, prefix, head: head.stdout.trim() };
}

/** Where a repository's worktrees go: `dir` when set, else the user's cache folder, one subfolder per repository. */
export function worktreeParent(repoRoot: string, dir: string): string {
  if (dir !== '') return path.resolve(dir);
  const cache = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  const hash = createHash('sha256').update(repoRoot).digest('hex').slice(0, 10);
  return path.join(cache, 'forkpool', 'worktrees', `${path.basename(repoRoot)}-${hash}`);
}

/** Names tried for one job's worktree and branch: its id, then `<id>-2`, `<id>-3`… (ids restart with an in-memory ledger; a kept worktree of an earlier run keeps its name). */
const MAX_NAME_TRIES = 100;

/** Makes the job's worktree on a new branch `forkpool/<job-id>` (or the first free `-n` after it) from `base.head`. Throws `WORKTREE_UNAVAILABLE`. */
export async function createWorktree(base: WorktreeBase, jobId: string, dir: string): Promise<JobWorktree> {
  const parent = worktreeParent(base.repoRoot, dir);
  await mkdir(parent, { recursive: true });
  const realParent = await realpath(parent);
  for (let n = 1; n <= MAX_NAME_TRIES; n++) {
    const name = n === 1 ? jobId : `${jobId}-${n}`;
    const where = path.join(realParent, name);
    const branch = `forkpool/${name}`;
    if (existsSync(where) || (await quick(base.repoRoot, ['rev-parse', '--verify', '--quiet', `refs/heads/${branch}`])).ok) continue;
    const added = await quick(base.repoRoot, ['worktree', 'add', '--quiet', '-b', branch, where, base.head]);
    if (!added.ok) throw unavailable(`git worktree add failed: ${added.stderr}`);
    return { jobId, branch, base: base.head, repoRoot: base.repoRoot, path: where, workspaceRoot: path.join(where, base.prefix), state: 'open' };
  }
  throw unavailable(`${MAX_NAME_TRIES} worktrees or branches named forkpool/${jobId}[-n] exist already in ${parent}; remove old ones with git worktree remove`);
}

/** Why a job's changes are not committed: more files or bytes than WORKTREE_LIMITS allows. Undefined when within them. */
/** The bounds of one job's commit (WORKTREE_LIMITS; smaller in tests). */
export interface CommitLimits {
  maxCommitFiles: number;
  maxCommitBytes: number;
}

async function tooBig(tree: JobWorktree, limits: CommitLimits): Promise<string | undefined> {
  const status = await git(tree, tree.path, ['status', '--porcelain=v1', '-z', '--untracked-files=all', '--no-renames']);
  if (!status.ok) return `git status failed: ${status.stderr}`;
  const paths = status.stdout
    .split('\0')
    .filter(Boolean)
    .map((entry) => entry.slice(3));
  if (paths.length > limits.maxCommitFiles) return `it changed ${paths.length} files, more than the ${limits.maxCommitFiles} one commit may hold`;
  let bytes = 0;
  for (const rel of paths) {
    // One stat at a time, awaited: 60,000 files never hold the event loop.
    const stat = await lstat(path.join(tree.path, rel)).catch(() => undefined);
    bytes += stat?.isFile() ? stat.size : 0;
    if (bytes > limits.maxCommitBytes) return `its changed files hold more than the ${limits.maxCommitBytes} bytes one commit may hold`;
  }
  return undefined;
}

/**
 * The job ended: whatever it changed is committed on its branch and listed against the base; a
 * worktree with no change is removed, with its branch. Never throws: a failure is said in the text.
 */
export async function finishWorktree(tree: JobWorktree, label: string, limits: CommitLimits = WORKTREE_LIMITS): Promise<string> {
  // `kept` and `uncommitted` too: a restarted job ran again in the same worktree, and its changes are committed now.
  if (tree.state !== 'open' && tree.state !== 'kept' && tree.state !== 'uncommitted') return describe(tree);
  const kept = (problem: string) => {
    tree.state = 'uncommitted';
    tree.problem = problem;
    return describe(tree);
  };
  const big = await tooBig(tree, limits);
  if (big !== undefined) return kept(big);
  const added = await git(tree, tree.path, ['add', '-A']);
  if (!added.ok) return kept(`git add failed: ${added.stderr}`);
  const staged = await git(tree, tree.path, ['diff', '--cached', '--quiet']);
  if (staged.ok) {
    if ((await git(tree, tree.path, ['rev-parse', 'HEAD'])).stdout.trim() === tree.base) {
      await removeWorktree(tree);
      tree.state = 'removed';
      tree.changed = [];
      return describe(tree);
    }
  } else {
    const commit = await git(tree, tree.path, ['commit', '--quiet', '--no-verify', '-m', `forkpool job ${tree.jobId}: ${label}`.slice(0, 200)]);
    if (!commit.ok) return kept(`git commit failed: ${commit.stderr}`);
  }
  const diff = await git(tree, tree.repoRoot, ['diff', '--name-status', '--no-renames', tree.base, tree.branch]);
  tree.changed = diff.stdout
    .split('\n')
    .filter(Boolean)
    .map((line) => line.replace('\t', ' '));
  tree.state = 'kept';
  delete tree.problem;
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
    case 'uncommitted':
      return (
        `Worktree ${tree.path} (branch ${tree.branch}): the job's changes were not committed: ${tree.problem ?? 'git failed'}. ` +
        'The worktree is kept as it is: review it there, or drop it with background_worktree; it cannot be merged.'
      );
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

export async function removeWorktree(tree: JobWorktree): Promise<void> {
  await git(tree, tree.repoRoot, ['worktree', 'remove', '--force', tree.path]);
  await git(tree, tree.repoRoot, ['branch', '-D', tree.branch]);
}

/**
 * The parent's decision on an ended job's worktree. `merge` merges its branch into the
 * workspace's current branch (`--no-ff`); a conflict is aborted (`git merge --abort`), nothing
 * is left half-merged and the branch is kept. `drop` removes worktree and branch; `keep` leaves
 * both for the user. Rejects with `WORKTREE_ACTION_FAILED` with what git said.
 */
export async function actOnWorktree(tree: JobWorktree, action: WorktreeAction): Promise<string> {
  const fail = (why: string) => new JobError('WORKTREE_ACTION_FAILED', tree.jobId, `${action} of job ${tree.jobId}'s worktree (branch ${tree.branch}): ${why}`);
  if (tree.state === 'open') throw fail('the job has not ended yet; wait for its result');
  const droppable = tree.state === 'kept' || (tree.state === 'uncommitted' && action !== 'merge');
  if (!droppable) throw fail(`nothing to do: ${describe(tree)}`);
  if (action === 'keep') return `Kept: branch ${tree.branch} and worktree ${tree.path} stay as they are, for you or the user to review.`;
  if (action === 'drop') {
    await removeWorktree(tree);
    tree.state = 'dropped';
    return describe(tree);
  }
  const merge = await git(tree, tree.repoRoot, [
    'merge',
    '--no-ff',
    '--no-verify',
    '--no-edit',
    '--no-stat',
    '-m',
    `Merge ${tree.branch} (forkpool job ${tree.jobId})`,
    tree.branch,
  ]);
  if (!merge.ok) {
    const conflicts = (await git(tree, tree.repoRoot, ['diff', '--name-only', '--diff-filter=U'])).stdout.split('\n').filter(Boolean);
    // Only a merge that got under way has anything to abort; one refused up front (a dirty file in the way) left nothing.
    if ((await git(tree, tree.repoRoot, ['rev-parse', '-q', '--verify', 'MERGE_HEAD'])).ok) await git(tree, tree.repoRoot, ['merge', '--abort']);
    const what = conflicts.length > 0 ? `conflicts in ${conflicts.join(', ')}` : merge.stderr || merge.stdout.trim() || 'git merge failed';
    throw fail(`not merged (${what}); the merge was aborted, the workspace is as it was, and the branch is kept`);
  }
  await removeWorktree(tree);
  tree.state = 'merged';
  return describe(tree);
}
