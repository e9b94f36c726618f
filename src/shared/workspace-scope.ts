import path from 'node:path';
import type { ConfigIssue } from './errors.js';

/**
 * Which folders may not be a workspace. The file and shell tools reach everything under the
 * workspace, so a folder that holds the whole machine, a user's credentials or the system's
 * programs and settings is refused. Shared by the config check (by name) and the worker's
 * `resolveWorkspaceRoot` (by real path), so the two cannot disagree.
 */

/** Kernel pseudo file systems: never a workspace, nor anything inside them (the tools refuse to read there anyway). */
const PSEUDO_FS_ROOTS = ['/proc', '/sys', '/dev'] as const;

/**
 * System folders refused as the workspace itself unless `allowBroadWorkspace` (a project
 * inside one, such as `/var/www/site` or `/usr/local/src/app`, is fine).
 */
const SYSTEM_FOLDERS = new Set([
  '/bin',
  '/boot',
  '/etc',
  '/home',
  '/lib',
  '/lib32',
  '/lib64',
  '/libx32',
  '/media',
  '/mnt',
  '/opt',
  '/root',
  '/run',
  '/sbin',
  '/srv',
  '/usr',
  '/var',
  // Where /bin, /lib... lead on a merged-/usr system (their real paths).
  '/usr/bin',
  '/usr/sbin',
  '/usr/lib',
  '/usr/lib32',
  '/usr/lib64',
  '/usr/libx32',
  '/usr/local',
  '/usr/share',
]);

export interface BroadWorkspace {
  /** What the folder is, for the error's `received`. */
  what: string;
  /** `allowBroadWorkspace` can force it (false for /proc, /sys, /dev and inside them). */
  forcible: boolean;
}

/** Why `absolutePath` is too broad (or too dangerous) for a workspace; `undefined` when it is a project folder. */
export function broadWorkspace(absolutePath: string, homeDir: string): BroadWorkspace | undefined {
  const p = path.resolve(absolutePath);
  if (PSEUDO_FS_ROOTS.some((root) => p === root || p.startsWith(`${root}/`)))
    return { what: 'a kernel pseudo file system: never a workspace', forcible: false };
  if (p === '/') return { what: 'the file system root', forcible: true };
  if (homeDir !== '' && homeDir !== '/' && p === path.resolve(homeDir)) return { what: 'the home folder', forcible: true };
  if (SYSTEM_FOLDERS.has(p)) return { what: 'a system folder', forcible: true };
  return undefined;
}

/** The config issue for a broad workspace (the same wording from the config check and the worker). */
export function broadWorkspaceIssue(workspaceRoot: string, found: BroadWorkspace): ConfigIssue {
  return {
    field: 'workspaceRoot',
    expected: found.forcible
      ? 'a project folder, not / or the home folder or a system folder such as /etc or /usr (set allowBroadWorkspace: true or pass --allow-broad-workspace to force it)'
      : 'a project folder, not a path in /proc, /sys or /dev (allowBroadWorkspace does not force these)',
    received: `${JSON.stringify(workspaceRoot)} (${found.what})`,
  };
}

/** True when `target` is `root` or below it (both absolute and normalized): the one containment test of the workspace, the tools and the ledger's path check. */
export function isInside(root: string, target: string): boolean {
  const rel = path.relative(root, target);
  return rel === '' || (!rel.startsWith(`..${path.sep}`) && rel !== '..' && !path.isAbsolute(rel));
}
