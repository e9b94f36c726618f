import { lstat, readdir, readFile, realpath, rm, rmdir } from 'node:fs/promises';
import path from 'node:path';
import { DEFAULTS } from '../defaults.js';
import { GIT_DIR_NAMES, guardsGit, isGitDirLayout } from './git-layout.js';
import { normalizeEntry, protectedEntryOf } from './policy.js';
import { isInside } from '../workspace-scope.js';
import type { ToolPolicy } from './types.js';

/**
 * bash's guard for protected paths (`.git` and the config's `protectedPaths`) inside bubblewrap.
 * Before a command: a bounded walk finds every protected entry at any depth, so each can be bound
 * read-only, together with what a `.git` file (`gitdir: …`) or link points to inside the
 * workspace. After it: the same walk finds entries that appeared or were replaced meanwhile
 * (`git init sub`, a planted `.git` file) and removes them, since the user's next `git` in that
 * folder would run their hooks and `core.fsmonitor`. A folder laid out as a git directory
 * (git-layout.ts) counts as a `.git` too: git accepts it as one when run inside it. A folder
 * that was there before and that the command turned into one (the workspace root above all,
 * which can be neither bound nor removed) keeps what it held: only the parts of the layout
 * (HEAD, objects, refs, commondir, config, hooks) that were not there before are removed. A new
 * one goes whole.
 */

export type EntryKind = 'dir' | 'file' | 'link' | 'other';

export interface ProtectedEntry {
  /** Workspace-relative, forward slashes. */
  rel: string;
  kind: EntryKind;
  dev: number;
  ino: number;
}

export interface ProtectedScan {
  /** By workspace-relative path. */
  entries: Map<string, ProtectedEntry>;
  /**
   * Workspace-relative folders and files that a protected `.git` file or link points to (a
   * submodule's or worktree's git folder kept elsewhere in the workspace): bound read-only too.
   */
  pointedTo: string[];
  /** The walk stopped at `protectedScan.maxEntries` or `maxDepth`: deeper entries were not seen. */
  truncated: boolean;
  /** Every folder the walk listed (workspace-relative; the root is ''). */
  folders: Set<string>;
  /** The folders laid out as a git directory (the root included). */
  gitDirs: Set<string>;
  /** In every folder listed, the entries named as a git directory's parts (GIT_DIR_NAMES), whether or not they make one. */
  gitParts: Map<string, ProtectedEntry>;
}

type Bounds = typeof DEFAULTS.protectedScan;

/** A `.git` file is a line `gitdir: <path>`; anything longer is not one. */
const GITDIR_FILE_MAX_BYTES = 4096;

/** Walks `root` breadth first (never through a link) and lists its protected entries. */
export async function scanProtected(root: string, policy: ToolPolicy, bounds: Bounds = DEFAULTS.protectedScan): Promise<ProtectedScan> {
  const entries = new Map<string, ProtectedEntry>();
  const folders = new Set<string>();
  const gitDirs = new Set<string>();
  const gitParts = new Map<string, ProtectedEntry>();
  const git = guardsGit(policy);
  let truncated = false;
  let seen = 0;
  let level: string[] = [''];
  for (let depth = 0; level.length > 0; depth++) {
    if (depth > bounds.maxDepth) {
      truncated = true;
      break;
    }
    const next: string[] = [];
    for (const dirRel of level) {
      const dirents = await readdir(path.join(root, dirRel), { withFileTypes: true }).catch(() => []);
      folders.add(dirRel);
      const join = (name: string) => (dirRel === '' ? name : `${dirRel}/${name}`);
      const parts = git ? dirents.filter((d) => (GIT_DIR_NAMES as readonly string[]).includes(d.name.toLowerCase())) : [];
      for (const part of parts) await record(root, join(part.name), gitParts);
      const isGitDir = git && isGitDirLayout(dirents.map((d) => d.name));
      if (isGitDir) gitDirs.add(dirRel);
      // A git directory below the root is one protected entry, bound or removed whole.
      if (isGitDir && dirRel !== '') {
        await record(root, dirRel, entries);
        continue;
      }
      for (const dirent of dirents) {
        if (++seen > bounds.maxEntries) {
          truncated = true;
          break;
        }
        const rel = join(dirent.name);
        if (protectedEntryOf(rel, policy) !== undefined) await record(root, rel, entries);
        else if (dirent.isDirectory() && !(isGitDir && parts.includes(dirent))) next.push(rel);
      }
      if (truncated) break;
    }
    if (truncated) break;
    level = next;
  }
  return { entries, pointedTo: await pointedTargets(root, entries), truncated, folders, gitDirs, gitParts };
}

/** The parts of the git directory layout in `folder` (GIT_DIR_NAMES entries directly in it). */
export function gitPartsIn(scan: ProtectedScan, folder: string): ProtectedEntry[] {
  return [...scan.gitParts.values()].filter((part) => path.posix.dirname(part.rel) === (folder === '' ? '.' : folder));
}

async function record(root: string, rel: string, into: Map<string, ProtectedEntry>): Promise<void> {
  try {
    const info = await lstat(path.join(root, rel));
    const kind: EntryKind = info.isDirectory() ? 'dir' : info.isFile() ? 'file' : info.isSymbolicLink() ? 'link' : 'other';
    into.set(rel, { rel, kind, dev: info.dev, ino: info.ino });
  } catch {
    // Gone meanwhile: nothing to protect or remove.
  }
}

/** Where `.git` files (`gitdir: …`) and `.git` links lead, when that is inside the workspace. */
async function pointedTargets(root: string, entries: ReadonlyMap<string, ProtectedEntry>): Promise<string[]> {
  const targets = new Set<string>();
  for (const entry of entries.values()) {
    const abs = path.join(root, entry.rel);
    let target: string | undefined;
    if (entry.kind === 'link') target = abs;
    else if (entry.kind === 'file') target = await gitdirOf(abs);
    if (target === undefined) continue;
    const real = await realpath(target).catch(() => undefined);
    if (real === undefined || real === root || !isInside(root, real)) continue;
    const rel = path.relative(root, real).split(path.sep).join('/');
    // Already read-only when it lies in (or is) an entry that is bound itself.
    if (![...entries.keys()].some((e) => rel === e || rel.startsWith(`${e}/`))) targets.add(rel);
  }
  return [...targets];
}

async function gitdirOf(file: string): Promise<string | undefined> {
  const text = await readFile(file, 'utf8').catch(() => '');
  if (text.length === 0 || text.length > GITDIR_FILE_MAX_BYTES) return undefined;
  const match = /^gitdir:\s*(.+?)\s*$/m.exec(text);
  return match ? path.resolve(path.dirname(file), match[1] as string) : undefined;
}

/**
 * Protected names to hold at the workspace root while the command runs, so none can be created
 * there: each one absent now, whose parent folder exists. bubblewrap creates the mount point (an
 * empty folder) on the host; {@link settleProtected} removes it afterwards.
 */
export async function placeholdersFor(root: string, policy: ToolPolicy, scan: ProtectedScan): Promise<string[]> {
  const out: string[] = [];
  for (const raw of policy.protectedPaths) {
    const rel = normalizeEntry(raw);
    if (rel === '' || rel === '.' || rel.startsWith('..') || path.posix.isAbsolute(rel) || scan.entries.has(rel)) continue;
    const exists = await lstat(path.join(root, rel)).then(
      () => true,
      () => false,
    );
    const parent = path.join(root, path.posix.dirname(rel));
    // The parent must be a real folder in place (no link), or bwrap would create folders on the way.
    const parentReal = await realpath(parent).catch(() => undefined);
    if (!exists && parentReal === parent) out.push(rel);
  }
  return out;
}

/**
 * After the command: removes every protected entry that was not there before, or is not the same
 * file any more (a placeholder left empty is removed without a word). Returns the removed
 * entries' workspace-relative paths, for the tool error.
 */
export async function settleProtected(
  root: string,
  policy: ToolPolicy,
  before: ProtectedScan,
  placeholders: readonly string[],
  bounds: Bounds = DEFAULTS.protectedScan,
): Promise<string[]> {
  const after = await scanProtected(root, policy, bounds);
  const removed: string[] = [];
  const unchanged = (old: ProtectedEntry | undefined, now: ProtectedEntry) =>
    old !== undefined && old.kind === now.kind && old.dev === now.dev && old.ino === now.ino;
  // A folder that was there before and is now a git directory: what of the layout is new goes, the rest was the user's.
  const removeNewParts = async (folder: string) => {
    for (const part of gitPartsIn(after, folder)) {
      if (unchanged(before.gitParts.get(part.rel), part)) continue;
      await rm(path.join(root, part.rel), { recursive: true, force: true }).catch(() => {});
      removed.push(part.rel);
    }
  };
  for (const entry of after.entries.values()) {
    if (unchanged(before.entries.get(entry.rel), entry)) continue;
    if (after.gitDirs.has(entry.rel) && before.folders.has(entry.rel) && !before.entries.has(entry.rel)) {
      await removeNewParts(entry.rel);
      continue;
    }
    const abs = path.join(root, entry.rel);
    if (
      placeholders.includes(entry.rel) &&
      entry.kind === 'dir' &&
      (await rmdir(abs).then(
        () => true,
        () => false,
      ))
    )
      continue;
    // rm does not follow links: a planted `.git` link goes, not what it points to.
    await rm(abs, { recursive: true, force: true }).catch(() => {});
    removed.push(entry.rel);
  }
  // The root cannot be removed: a root left laid out as a git directory loses the parts that are new.
  if (after.gitDirs.has('')) await removeNewParts('');
  return removed.sort();
}
