import { constants } from 'node:fs';
import { lstat, open, rmdir, unlink, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { WRITE_PATH_LIMITS } from '../fixed-limits.js';
import { ToolError } from '../errors.js';
import { atPath } from './proc-fd.js';

/**
 * A write that creates folders on its way to a new file: its path is checked against the
 * system's limits before the first folder is made, and when the write fails after all, the
 * file and the folders it made are removed again, so a failed call leaves nothing behind.
 */

const DIR_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;

/** Refuses (TOOL_FAILED, nothing created yet) a path the file system would refuse at its end, or one too deep. */
export function assertCreatablePath(root: string, resolved: string, toolName: string, shown: string): void {
  const { nameMaxBytes, pathMaxBytes, maxDepth } = WRITE_PATH_LIMITS;
  const segments = path.relative(root, resolved).split(path.sep);
  const refuse = (why: string) =>
    new ToolError('TOOL_FAILED', toolName, `cannot write ${shown.length > 200 ? `${shown.slice(0, 200)}…"` : shown}: ${why}; nothing was created`);
  const folders = segments.length - 1;
  if (folders > maxDepth) throw refuse(`the file is ${folders} folders deep, over the limit of ${maxDepth}`);
  const long = segments.find((segment) => Buffer.byteLength(segment) > nameMaxBytes);
  if (long !== undefined) throw refuse(`a name in it is ${Buffer.byteLength(long)} bytes long, over the file system's limit of ${nameMaxBytes}`);
  const bytes = Buffer.byteLength(resolved);
  if (bytes > pathMaxBytes) throw refuse(`the full path is ${bytes} bytes long, over the file system's limit of ${pathMaxBytes}`);
}

/** What one call created: folders `segments[firstNew..]` below the root, and maybe the file. */
export interface CreatedPath {
  root: string;
  /** The folders from the root to the file's folder. */
  segments: readonly string[];
  /** Index in `segments` of the first folder this call made (`segments.length`: none). */
  firstNew: number;
  /** The new file's name and identity; absent when the file existed or was not made. */
  file?: { name: string; dev: number; ino: number };
}

/**
 * Removes what {@link CreatedPath} says this call made, bottom up, the way it was made: each
 * folder opened by name from its parent's descriptor without following a link, so a folder
 * swapped meanwhile is left alone, never followed. A folder someone filled meanwhile is not
 * empty and stays. Best effort: it runs on a failure path and never throws.
 */
export async function removeCreated(created: CreatedPath): Promise<void> {
  const chain: FileHandle[] = [];
  try {
    chain.push(await open(created.root, DIR_FLAGS));
    for (const segment of created.segments) chain.push(await open(atPath((chain.at(-1) as FileHandle).fd, segment), DIR_FLAGS));
  } catch {
    // Something changed under the path: remove only what was reached.
  }
  try {
    const last = chain.at(-1);
    if (created.file && last && chain.length === created.segments.length + 1) {
      const where = atPath(last.fd, created.file.name);
      const now = await lstat(where).catch(() => undefined);
      if (now && now.dev === created.file.dev && now.ino === created.file.ino) await unlink(where).catch(() => {});
    }
    for (let i = Math.min(chain.length, created.segments.length + 1) - 1; i >= 1 && i - 1 >= created.firstNew; i--) {
      const parent = chain[i - 1] as FileHandle;
      await (chain[i] as FileHandle).close();
      chain.length = i;
      const removed = await rmdir(atPath(parent.fd, created.segments[i - 1] as string)).then(
        () => true,
        () => false,
      );
      if (!removed) break;
    }
  } finally {
    await Promise.allSettled(chain.map((handle) => handle.close()));
  }
}
