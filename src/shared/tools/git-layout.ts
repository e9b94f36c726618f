import { lstat } from 'node:fs/promises';
import path from 'node:path';
import { ToolError } from '../errors.js';
import { normalizeEntry } from './policy.js';
import type { ToolPolicy } from './types.js';

/**
 * A folder git takes for a git directory without any `.git` in sight. Looking for a repository,
 * git walks up from its working directory and, in each folder, accepts the folder itself as a
 * (bare) git directory when it holds `HEAD` and either `objects/` and `refs/`, or a `commondir`
 * file (a linked worktree's git directory, whose objects and refs live where it points). Its
 * `config` is then read, so a `core.fsmonitor` or `core.worktree` planted there runs or redirects
 * the user's next `git status` in the workspace or any folder below it. (`safe.bareRepository =
 * explicit` in the user's git config turns this off; forkpool cannot count on it.)
 *
 * The names count whatever they are (file, folder or link): stricter than git, never looser.
 * bash's scan compares them without regard to case (stricter still).
 */

/** The names of a folder's entries that make it (or keep it) a git directory, lower case. */
export const GIT_DIR_NAMES = ['head', 'objects', 'refs', 'commondir', 'config', 'hooks'] as const;

/** True when a folder holding `names` is one git would take for a git directory (see above). */
export function isGitDirLayout(names: Iterable<string>): boolean {
  const lower = new Set([...names].map((name) => name.toLowerCase()));
  return lower.has('head') && ((lower.has('objects') && lower.has('refs')) || lower.has('commondir'));
}

/**
 * Whether `folder` has the layout now, by looking up the names git looks up (on a file system
 * that ignores case, any case matches, as it does for git): no listing of a big folder.
 */
async function hasGitDirLayout(folder: string): Promise<boolean> {
  const has = (name: string) =>
    lstat(path.join(folder, name)).then(
      () => true,
      () => false,
    );
  if (!(await has('HEAD'))) return false;
  return (await has('commondir')) || ((await has('objects')) && (await has('refs')));
}

/** Whether the guard covers git's own layouts: only when `.git` is among the protected names. */
export function guardsGit(policy: ToolPolicy): boolean {
  return !policy.allowProtectedWrites && policy.protectedPaths.some((entry) => normalizeEntry(entry).toLowerCase() === '.git');
}

/**
 * Refuses a write of `resolved` (inside `root`, already there: the file tools call this once
 * the file is open, so two racing writes each see the other's) when any folder it passes
 * through, the workspace root included, now has a git directory's layout: the write completed
 * one, or writes into one.
 */
export async function assertNoGitDirLayout(root: string, resolved: string, policy: ToolPolicy, toolName: string): Promise<void> {
  if (!guardsGit(policy)) return;
  const segments = path.relative(root, path.dirname(resolved)).split(path.sep).filter(Boolean);
  for (let depth = 0; depth <= segments.length; depth++) {
    const folderRel = segments.slice(0, depth).join('/');
    if (!(await hasGitDirLayout(path.join(root, folderRel)))) continue;
    const where = folderRel === '' ? 'the workspace root' : JSON.stringify(folderRel);
    throw new ToolError(
      'PERMISSION_DENIED',
      toolName,
      `writing ${JSON.stringify(path.relative(root, resolved).split(path.sep).join('/'))} would leave ${where} laid out as a git directory ` +
        "(HEAD with objects/ and refs/, or with commondir): git would take it for a repository and run its config at the user's next git command. " +
        'Nothing was written. Use other names; the user can allow it with allowProtectedWrites',
    );
  }
}
