import { realpathSync, statSync } from 'node:fs';
import { realpath, lstat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ConfigError, ToolError } from '../errors.js';
import { broadWorkspace, broadWorkspaceIssue, isInside } from '../workspace-scope.js';

/**
 * Path sandboxing for the file and shell tools. Every path a tool touches is resolved here:
 * relative paths against the workspace root, symlinks through `realpath`, and anything that
 * lands outside the root (or in a kernel pseudo-filesystem) is refused with
 * `PATH_OUTSIDE_WORKSPACE`.
 */

/** Pseudo-filesystems that expose process memory, environment or devices; never readable. */
const FORBIDDEN_PREFIXES = ['/proc', '/sys', '/dev'] as const;

/** How many ancestors to climb looking for an existing one (bounds the loop). */
const MAX_ANCESTOR_STEPS = 4096;

export interface ResolveOptions {
  /** The path must exist (read tools). Default `false`: write tools may name a new file. */
  mustExist?: boolean;
}

/**
 * Resolves the configured workspace root to its real, absolute path. Rejects with a
 * {@link ConfigError} (`CONFIG_INVALID`) when it does not exist or is not a directory, and
 * when it is `/`, the home folder or a system folder unless `allowBroad` (the config's
 * `allowBroadWorkspace`), and always when it is in /proc, /sys or /dev.
 */
export async function resolveWorkspaceRoot(root: string, options: { allowBroad?: boolean } = {}): Promise<string> {
  const received = JSON.stringify(root);
  if (root.length === 0 || root.includes('\0')) {
    throw new ConfigError([{ field: 'workspaceRoot', expected: 'a path to an existing directory', received }]);
  }
  // Blocking calls on purpose: every job resolves its root before its first model request, and
  // three round trips through libuv's thread pool (busy with the other jobs' file tools) cost
  // that request milliseconds; these are three system calls of microseconds on the same result.
  let real: string;
  try {
    real = realpathSync.native(path.resolve(root));
  } catch (cause) {
    throw new ConfigError([{ field: 'workspaceRoot', expected: 'an existing directory', received: `${received} (${codeOf(cause) ?? 'not found'})` }]);
  }
  if (!statSync(real).isDirectory()) {
    throw new ConfigError([{ field: 'workspaceRoot', expected: 'a directory', received: `${received} (not a directory)` }]);
  }
  const home = realHomedir();
  // By the name given and by where it really leads (/lib is /usr/lib on a merged-/usr system).
  const broad = broadWorkspace(path.resolve(root), home) ?? broadWorkspace(real, home);
  if (broad && (!broad.forcible || !options.allowBroad)) throw new ConfigError([broadWorkspaceIssue(root, broad)]);
  return real;
}

function realHomedir(): string {
  try {
    return realpathSync.native(os.homedir());
  } catch {
    return os.homedir();
  }
}

/**
 * Resolves `userPath` (relative to `root`, or absolute inside it) to a real absolute path
 * inside the workspace. For a path that does not exist yet, the nearest existing ancestor is
 * resolved and checked instead, so a write cannot escape through a symlinked directory.
 *
 * Rejects with `PATH_OUTSIDE_WORKSPACE` for escapes, NUL bytes, dangling or looping symlinks
 * and `/proc`, `/sys`, `/dev`; with `TOOL_FAILED` when `mustExist` and the path is missing.
 */
export async function resolveInWorkspace(root: string, userPath: string, toolName: string, options: ResolveOptions = {}): Promise<string> {
  const shown = JSON.stringify(userPath);
  const outside = (why: string) =>
    new ToolError(
      'PATH_OUTSIDE_WORKSPACE',
      toolName,
      `path ${shown} ${why}; only paths inside the workspace are allowed (use a path relative to the workspace root)`,
    );

  if (userPath.includes('\0')) throw outside('contains a NUL byte');
  let realRoot: string;
  try {
    realRoot = await realpath(root);
  } catch (cause) {
    throw new ToolError('TOOL_FAILED', toolName, `the workspace root ${JSON.stringify(root)} is not accessible (${codeOf(cause) ?? 'error'})`, { cause });
  }
  const lexical = path.resolve(realRoot, userPath === '' ? '.' : userPath);
  if (isForbidden(lexical)) throw outside('is in a system pseudo-filesystem');
  if (!isInside(realRoot, lexical)) throw outside('is outside the workspace');

  // Climb from the path to its nearest existing ancestor; `rest` holds the missing segments.
  let probe = lexical;
  const rest: string[] = [];
  for (let step = 0; step < MAX_ANCESTOR_STEPS; step++) {
    let real: string | undefined;
    try {
      real = await realpath(probe);
    } catch (error) {
      const code = codeOf(error);
      if (code === 'ELOOP') throw outside('goes through a symbolic link loop');
      if (code === 'ENOTDIR') throw new ToolError('TOOL_FAILED', toolName, `path ${shown}: a parent of it is a file, not a directory`);
      if (code !== 'ENOENT') throw new ToolError('TOOL_FAILED', toolName, `cannot resolve path ${shown}: ${codeOf(error) ?? String(error)}`, { cause: error });
      // ENOENT from realpath while lstat succeeds: a dangling symlink. Writing through it
      // would create its target wherever it points, so refuse it outright.
      if (await exists(probe)) throw outside('is (or goes through) a symbolic link whose target does not exist');
    }
    if (real !== undefined) {
      if (isForbidden(real)) throw outside(`resolves to ${real}, a system pseudo-filesystem`);
      if (!isInside(realRoot, real)) throw outside(`resolves (through a symbolic link) to ${real}, outside the workspace`);
      if (rest.length > 0 && options.mustExist) {
        throw new ToolError('TOOL_FAILED', toolName, `path ${shown} does not exist (no such file or directory)`);
      }
      return rest.length === 0 ? real : path.join(real, ...rest.reverse());
    }
    rest.push(path.basename(probe));
    const parent = path.dirname(probe);
    // The root itself exists (it was realpath'd above), so the climb ends there at the latest.
    if (parent === probe) break;
    probe = parent;
  }
  throw new ToolError('TOOL_FAILED', toolName, `cannot resolve path ${shown}`);
}

/** Workspace-relative path with forward slashes (`.` for the root itself). */
export function displayPath(root: string, abs: string): string {
  const rel = path.relative(root, abs);
  if (rel === '') return '.';
  if (rel.startsWith('..') || path.isAbsolute(rel)) return abs.split(path.sep).join('/');
  return rel.split(path.sep).join('/');
}

function isForbidden(abs: string): boolean {
  return FORBIDDEN_PREFIXES.some((p) => abs === p || abs.startsWith(`${p}/`));
}

async function exists(p: string): Promise<boolean> {
  try {
    await lstat(p);
    return true;
  } catch {
    return false;
  }
}

export function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}
