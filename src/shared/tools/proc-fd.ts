/**
 * Opening relative to an open folder (Linux `openat`) by way of /proc/self/fd: the one path
 * trick every file tool uses to never follow a link that was swapped in after a check. The
 * bottom of the tools' file handling (safe-fs.ts, new-folders.ts, walk.ts, list-dir.ts).
 */
import { existsSync } from 'node:fs';

const PROC_FD = '/proc/self/fd';
let procFdUsable: boolean | undefined;

export function procFdAvailable(): boolean {
  procFdUsable ??= existsSync(PROC_FD);
  return procFdUsable;
}

/** A path that names `name` inside the folder open as `dirFd` (Linux `openat` through /proc). */
export function atPath(dirFd: number, name?: string): string {
  return name === undefined ? `${PROC_FD}/${dirFd}` : `${PROC_FD}/${dirFd}/${name}`;
}
