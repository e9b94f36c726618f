import { closeSync, constants, fstatSync, openSync, type Stats } from 'node:fs';
import { open, opendir, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { ToolError } from '../errors.js';
import { fdLimitError, isFdLimit, withFdRetry } from './fd-limit.js';
import { atPath, procFdAvailable } from './proc-fd.js';
import { throwIfAborted } from './util.js';

/**
 * The search tools' tree walk. Depth-first, names sorted per folder, never following a symbolic
 * link: each sub-folder is opened relative to its parent's descriptor with O_NOFOLLOW, so a
 * folder swapped for a link mid-walk is skipped, not followed. Yields regular files only: FIFOs,
 * sockets and devices are never opened (opening a FIFO for reading waits for a writer forever),
 * and folders on a pseudo file system (/proc, /sys, ... wherever mounted) are not entered.
 * Checks the signal and the deadline at every entry, so a cancel ends a huge walk promptly.
 */

const DIR_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;
/** O_NONBLOCK: a FIFO swapped in after the listing still cannot block the open. */
const FILE_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY;
/** Folder levels below the start that are walked (each level holds a descriptor while open). */
export const MAX_WALK_DEPTH = 64;

export interface WalkOptions {
  signal: AbortSignal;
  /** The tool walking, named in its errors. */
  toolName: string;
  /** Folder names not entered below the start (node_modules, .git, ...). */
  skipDirs: readonly string[];
  /** Device numbers of pseudo file systems (see `pseudoFsDevices`). */
  pseudoDevices: ReadonlySet<number>;
  /** Folder levels to descend; default {@link MAX_WALK_DEPTH}. */
  maxDepth?: number;
  /** Called at every entry; throws to end the walk (a time limit). */
  onTick?: () => void;
  /** A sub-folder (absolute path) not entered: one hidden from the tools (see hidden.ts). */
  skipFolder?: (abs: string) => boolean;
}

export interface WalkedFile {
  /** Absolute path (for display; open with {@link openWalkedFile}). */
  abs: string;
  /** Path relative to the walk's start, forward slashes. */
  rel: string;
  name: string;
  /** Descriptor of the folder holding it, valid until the walk moves on. */
  dirFd: number;
}

/** Walks the folder open as `start` (located at `startAbs`). The caller keeps `start` open and closes it. */
export async function* walkFiles(start: FileHandle, startAbs: string, options: WalkOptions): AsyncGenerator<WalkedFile> {
  yield* walkDir(start, startAbs, '', 0, options);
}

async function* walkDir(dir: FileHandle, abs: string, rel: string, depth: number, options: WalkOptions): AsyncGenerator<WalkedFile> {
  const entries: { name: string; dir: boolean }[] = [];
  try {
    const listing = await withFdRetry(() => opendir(procFdAvailable() ? atPath(dir.fd) : abs), options.signal);
    for await (const entry of listing) {
      throwIfAborted(options.signal);
      options.onTick?.();
      if (entry.isDirectory()) {
        if (!options.skipDirs.includes(entry.name)) entries.push({ name: entry.name, dir: true });
      } else if (entry.isFile()) entries.push({ name: entry.name, dir: false });
      // Symbolic links, FIFOs, sockets and devices: skipped.
    }
  } catch (error) {
    if (error instanceof ToolError || options.signal.aborted) throw error;
    if (isFdLimit(error)) throw fdLimitError(options.toolName, rel || '.', error);
    return; // unreadable folder: skipped
  }
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const entry of entries) {
    throwIfAborted(options.signal);
    options.onTick?.();
    const childAbs = path.join(abs, entry.name);
    const childRel = rel === '' ? entry.name : `${rel}/${entry.name}`;
    if (!entry.dir) {
      yield { abs: childAbs, rel: childRel, name: entry.name, dirFd: dir.fd };
      continue;
    }
    if (depth >= (options.maxDepth ?? MAX_WALK_DEPTH) || options.skipFolder?.(childAbs)) continue;
    let sub: FileHandle;
    try {
      sub = await withFdRetry(() => open(procFdAvailable() ? atPath(dir.fd, entry.name) : childAbs, DIR_FLAGS), options.signal);
    } catch (error) {
      if (options.signal.aborted) throw error;
      if (isFdLimit(error)) throw fdLimitError(options.toolName, childRel, error);
      continue; // gone, unreadable, or replaced by a link since the listing
    }
    try {
      if (options.pseudoDevices.has((await sub.stat()).dev)) continue;
      yield* walkDir(sub, childAbs, childRel, depth + 1, options);
    } finally {
      await sub.close();
    }
  }
}

/**
 * Opens a walked file for reading when it is still a regular file outside any pseudo file
 * system; `undefined` otherwise (it changed since the listing). The caller closes it.
 */
export async function openWalkedFile(
  file: WalkedFile,
  pseudoDevices: ReadonlySet<number>,
  options: Pick<WalkOptions, 'signal' | 'toolName'>,
): Promise<{ handle: FileHandle; size: number; stats: Stats } | undefined> {
  let handle: FileHandle;
  try {
    handle = await withFdRetry(() => open(procFdAvailable() ? atPath(file.dirFd, file.name) : file.abs, FILE_FLAGS), options.signal);
  } catch (error) {
    if (options.signal.aborted) throw error;
    if (isFdLimit(error)) throw fdLimitError(options.toolName, file.rel, error);
    return undefined;
  }
  try {
    const stats = await handle.stat();
    if (stats.isFile() && !pseudoDevices.has(stats.dev)) return { handle, size: stats.size, stats };
  } catch {
    // fall through: close and skip
  }
  await handle.close();
  return undefined;
}

/** Walked files up to this size are opened and read with blocking calls (see {@link openWalkedFileSync}). */
export const SYNC_READ_MAX_BYTES = 64 * 1024;

/**
 * {@link openWalkedFile} with blocking calls, for the small files most searches read: an open
 * relative to the held folder, with the same flags (no link followed, a FIFO never waited on),
 * and an fstat, each microseconds against a round trip through libuv's pool for each. Returns
 * the descriptor when it is a regular file of at most {@link SYNC_READ_MAX_BYTES} outside any
 * pseudo file system (the caller closes it with `closeSync`); `undefined` when it changed since
 * the listing (skip it, as {@link openWalkedFile} would); `'async'` when the async path must
 * decide: no /proc, descriptors ran out (it waits and retries), or a larger file.
 */
export function openWalkedFileSync(file: WalkedFile, pseudoDevices: ReadonlySet<number>): { fd: number; stats: Stats } | 'async' | undefined {
  if (!procFdAvailable()) return 'async';
  let fd: number;
  try {
    fd = openSync(atPath(file.dirFd, file.name), FILE_FLAGS);
  } catch (error) {
    return isFdLimit(error) ? 'async' : undefined;
  }
  let keep = false;
  try {
    const stats = fstatSync(fd);
    if (!stats.isFile() || pseudoDevices.has(stats.dev)) return undefined;
    if (stats.size > SYNC_READ_MAX_BYTES) return 'async';
    keep = true;
    return { fd, stats };
  } catch {
    return undefined;
  } finally {
    if (!keep) closeSync(fd);
  }
}
