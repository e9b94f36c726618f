import { constants, type Stats } from 'node:fs';
import { mkdir, open, readlink, realpath, rmdir, stat, unlink, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { ToolError } from '../errors.js';
import { A_FILE, assertNotHidden } from './hidden.js';
import { assertNotProtected } from './policy.js';
import { fdLimitError, isFdLimit, withFdRetry } from './fd-limit.js';
import { assertNoGitDirLayout } from './git-layout.js';
import { assertCreatablePath, removeCreated, type CreatedPath } from './new-folders.js';
import { atPath, procFdAvailable } from './proc-fd.js';
import { codeOf, displayPath, resolveInWorkspace } from './sandbox.js';
import { isInside } from '../workspace-scope.js';
import { pseudoFsDevicesNow } from './pseudo-fs.js';
import type { ToolPolicy } from './types.js';

/**
 * Race-free file access for the tools. Checking a path and then opening it lets a concurrent
 * swap (a folder replaced by a symbolic link to `../outside`) redirect the open. So:
 *
 * - Reads open first, then check *what was opened*: the kernel's own name for the descriptor
 *   (`/proc/self/fd/N`) must lie inside the workspace, and the file must not live on a pseudo
 *   file system. Nothing is read before that check.
 * - Writes never follow a symbolic link at all: they start from a descriptor of the workspace
 *   root and open each folder of the (already resolved) path by name *relative to the previous
 *   descriptor* (`/proc/self/fd/N/name`, Linux's `openat`) with `O_NOFOLLOW`, creating missing
 *   ones the same way; the file itself is opened the same way, without truncation, and only
 *   then truncated and written. A swap can make the call fail, never make it write elsewhere.
 *
 * Without /proc (not Linux), reads fall back to comparing device and inode of the descriptor
 * with a fresh resolution of the path; writes then open by path with `O_NOFOLLOW` on the last
 * component only (documented in docs/RELIABILITY.md).
 */

/** O_NONBLOCK: opening a FIFO must never wait for a writer (that waits for good). */
const READ_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY;
const DIR_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;

export interface OpenedPath {
  handle: FileHandle;
  /** Where the opened file really is (absolute). */
  realPath: string;
  stats: Stats;
}

/** What {@link openForReading} opened, with the pseudo file systems' devices it checked it against (for a walk that follows). */
export interface OpenedForReading extends OpenedPath {
  pseudoDevices: ReadonlySet<number>;
}

/** Where the open descriptor really is, by the kernel's name for it. */
async function realPathOf(handle: FileHandle, openedPath: string): Promise<string> {
  if (procFdAvailable()) return readlink(atPath(handle.fd));
  // Fallback: the path must still lead to the very inode that was opened.
  const real = await realpath(openedPath);
  const [now, opened] = await Promise.all([stat(real), handle.stat()]);
  if (now.dev !== opened.dev || now.ino !== opened.ino) throw Object.assign(new Error('the path changed while it was opened'), { code: 'ECHANGED' });
  return real;
}

function changedError(toolName: string, shown: string, cause?: unknown): ToolError {
  return new ToolError(
    'PATH_OUTSIDE_WORKSPACE',
    toolName,
    `path ${shown} changed while it was being opened (a symbolic link appeared in it); refusing it. Try again with a path that stays inside the workspace`,
    { cause },
  );
}

/**
 * Opens an existing file or folder inside the workspace for reading, race-free (see above).
 * Refuses what is not a regular file (or not a folder, with `directory`) and what lives on a
 * pseudo file system. The caller closes the handle.
 */
export async function openForReading(
  root: string,
  userPath: string,
  toolName: string,
  options: { kind?: 'file' | 'directory' | 'any'; signal?: AbortSignal; policy?: Pick<ToolPolicy, 'hiddenPaths'> } = {},
): Promise<OpenedForReading> {
  const kind = options.kind ?? 'file';
  const resolved = await resolveInWorkspace(root, userPath, toolName, { mustExist: true });
  const shown = displayPath(root, resolved);
  // The kind is known only after opening (O_RDONLY opens folders too): checked with fstat.
  let handle: FileHandle;
  try {
    handle = await withFdRetry(() => open(resolved, READ_FLAGS), options.signal);
  } catch (error) {
    const code = codeOf(error);
    if (code === 'ELOOP' || code === 'ENOENT') throw changedError(toolName, JSON.stringify(shown), error);
    if (code === 'ENXIO') throw new ToolError('TOOL_FAILED', toolName, `${shown} is not a regular file (device, socket or pipe); refusing to read it`);
    if (isFdLimit(error)) throw fdLimitError(toolName, shown, error);
    throw new ToolError('TOOL_FAILED', toolName, `cannot open ${shown}: ${code ?? String(error)}`, { cause: error });
  }
  try {
    let real: string;
    try {
      real = await realPathOf(handle, resolved);
    } catch (error) {
      throw changedError(toolName, JSON.stringify(shown), error);
    }
    if (!isInside(root, real))
      throw new ToolError(
        'PATH_OUTSIDE_WORKSPACE',
        toolName,
        `path ${JSON.stringify(userPath)} led outside the workspace (to ${real}) when opened; refusing it`,
      );
    const stats = await handle.stat();
    const pseudoDevices = pseudoFsDevicesNow();
    if (pseudoDevices.has(stats.dev))
      throw new ToolError('PATH_OUTSIDE_WORKSPACE', toolName, `${shown} is on a system pseudo file system (/proc, /sys, /dev); refusing it`);
    if (kind === 'directory' && !stats.isDirectory()) throw new ToolError('TOOL_FAILED', toolName, `${shown} is a file, not a directory`);
    if (kind === 'file' && stats.isDirectory())
      throw new ToolError('TOOL_FAILED', toolName, `${shown} is a directory, not a file; use list_dir to see its entries`);
    if (!stats.isDirectory() && !stats.isFile())
      throw new ToolError('TOOL_FAILED', toolName, `${shown} is not a regular file (device, socket or pipe); refusing to read it`);
    // What was opened, by real path and by inode: a link to a hidden file is refused too. Nothing read yet.
    if (options.policy) await assertNotHidden(options.policy, real, stats, toolName, shown);
    return { handle, realPath: real, stats, pseudoDevices };
  } catch (error) {
    await handle.close();
    throw error;
  }
}

/** What {@link openForWriting} opened; `discard()` removes the file and folders it created (for a write that failed). */
export interface OpenedForWriting extends OpenedPath {
  existed: boolean;
  discard(): Promise<void>;
}

export interface OpenForWritingOptions {
  /** Create the file (and missing parent folders) when absent. Default false: it must exist. */
  create?: boolean;
  policy: ToolPolicy;
}

/**
 * Opens a file inside the workspace for writing without following any symbolic link (see
 * above), refusing protected paths. Opened read-write and *not* truncated: the caller truncates
 * once it has decided to write. `existed` says whether the file was there before.
 */
export async function openForWriting(root: string, userPath: string, toolName: string, options: OpenForWritingOptions): Promise<OpenedForWriting> {
  const resolved = await resolveInWorkspace(root, userPath, toolName, { mustExist: !options.create });
  const shown = JSON.stringify(displayPath(root, resolved));
  // Protected either way: by the name the model gave and by where that name really leads.
  assertNotProtected(lexicalRelative(root, userPath), options.policy, toolName);
  assertNotProtected(displayPath(root, resolved), options.policy, toolName);
  // A hidden file is never written either (edit_file's "not found" would answer questions about it).
  await assertNotHidden(options.policy, path.resolve(root, userPath), A_FILE, toolName, displayPath(root, resolved));
  await assertNotHidden(options.policy, resolved, A_FILE, toolName, displayPath(root, resolved));
  if (resolved === root) throw new ToolError('TOOL_FAILED', toolName, 'the workspace root is a directory; give a file path');

  if (options.create) assertCreatablePath(root, resolved, toolName, shown);

  if (!procFdAvailable()) return openByPathFallback(root, resolved, toolName, options);
  const segments = path.relative(root, path.dirname(resolved)).split(path.sep).filter(Boolean);
  const created: CreatedPath = { root, segments, firstNew: segments.length };
  let dir = await open(root, DIR_FLAGS);
  try {
    for (const [i, segment] of segments.entries()) {
      const next = await openSubdir(dir.fd, segment, Boolean(options.create), toolName, shown);
      if (next.created && created.firstNew === segments.length) created.firstNew = i;
      await dir.close();
      dir = next.handle;
    }
    const base = path.basename(resolved);
    const flags = constants.O_RDWR | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY;
    let existed = true;
    let handle: FileHandle;
    try {
      handle = await open(atPath(dir.fd, base), flags);
    } catch (error) {
      if (codeOf(error) !== 'ENOENT' || !options.create) throw openError(error, toolName, shown);
      existed = false;
      try {
        // O_EXCL: if something appeared under this name meanwhile, fail rather than follow it.
        handle = await open(atPath(dir.fd, base), flags | constants.O_CREAT | constants.O_EXCL, 0o666);
      } catch (createError) {
        throw openError(createError, toolName, shown);
      }
      const { dev, ino } = await handle.stat();
      created.file = { name: base, dev, ino };
    }
    const opened = await verifyWritable(handle, root, toolName, shown, options.policy, existed);
    // Checked with the file in place, so a racing write sees this one; refused, it is removed below.
    await assertNoGitDirLayout(root, resolved, options.policy, toolName).catch(async (error: unknown) => {
      await opened.handle.close();
      throw error;
    });
    return { ...opened, discard: () => removeCreated(created) };
  } catch (error) {
    await dir.close();
    await removeCreated(created);
    throw error;
  } finally {
    await dir.close().catch(() => {});
  }
}

/** Opens (or, with `create`, makes and opens) folder `name` in `dirFd`; `created`: this call made it. */
async function openSubdir(dirFd: number, name: string, create: boolean, toolName: string, shown: string): Promise<{ handle: FileHandle; created: boolean }> {
  try {
    return { handle: await open(atPath(dirFd, name), DIR_FLAGS), created: false };
  } catch (error) {
    if (codeOf(error) !== 'ENOENT' || !create) throw openError(error, toolName, shown);
  }
  let created = true;
  try {
    await mkdir(atPath(dirFd, name));
  } catch (error) {
    if (codeOf(error) !== 'EEXIST') throw openError(error, toolName, shown);
    created = false;
  }
  try {
    return { handle: await open(atPath(dirFd, name), DIR_FLAGS), created };
  } catch (error) {
    throw openError(error, toolName, shown);
  }
}

function openError(error: unknown, toolName: string, shown: string): ToolError {
  const code = codeOf(error);
  if (code === 'ELOOP' || code === 'ENOTDIR' || code === 'EEXIST') return changedError(toolName, shown, error);
  if (code === 'ENOENT') return new ToolError('TOOL_FAILED', toolName, `path ${shown} does not exist (no such file or directory)`, { cause: error });
  if (code === 'EISDIR') return new ToolError('TOOL_FAILED', toolName, `${shown} is a directory; give a file path`, { cause: error });
  if (code === 'ENXIO') return new ToolError('TOOL_FAILED', toolName, `${shown} is not a regular file; refusing to write to it`, { cause: error });
  return new ToolError('TOOL_FAILED', toolName, `cannot write ${shown}: ${code ?? String(error)}`, { cause: error });
}

async function verifyWritable(
  handle: FileHandle,
  root: string,
  toolName: string,
  shown: string,
  policy: ToolPolicy,
  existed: boolean,
): Promise<OpenedPath & { existed: boolean }> {
  try {
    const stats = await handle.stat();
    if (!stats.isFile()) throw new ToolError('TOOL_FAILED', toolName, `${shown} is not a regular file; refusing to write to it`);
    const real = await readlink(atPath(handle.fd));
    if (!isInside(root, real)) throw new ToolError('PATH_OUTSIDE_WORKSPACE', toolName, `path ${shown} led outside the workspace when opened; refusing it`);
    assertNotProtected(displayPath(root, real), policy, toolName);
    // Opened without truncation: a hard link to a hidden file is refused before a byte changes.
    await assertNotHidden(policy, real, stats, toolName, displayPath(root, real));
    return { handle, realPath: real, stats, existed };
  } catch (error) {
    await handle.close();
    throw error;
  }
}

/** Not Linux: open by path, following no link at the last component, then verify. */
async function openByPathFallback(root: string, resolved: string, toolName: string, options: OpenForWritingOptions): Promise<OpenedForWriting> {
  const shown = JSON.stringify(displayPath(root, resolved));
  // The first folder mkdir made (undefined: none), so a failed write can remove what it made, by path.
  const firstMade = options.create
    ? await mkdir(path.dirname(resolved), { recursive: true }).catch((error: unknown) => {
        throw openError(error, toolName, shown);
      })
    : undefined;
  const removeMadeFolders = async () => {
    for (let dir = path.dirname(resolved); firstMade !== undefined && isInside(firstMade, dir); dir = path.dirname(dir)) {
      if (
        !(await rmdir(dir).then(
          () => true,
          () => false,
        ))
      )
        break;
    }
  };
  let existed = true;
  let handle: FileHandle;
  const flags = constants.O_RDWR | constants.O_NOFOLLOW | constants.O_NONBLOCK;
  try {
    handle = await open(resolved, flags);
  } catch (error) {
    if (codeOf(error) !== 'ENOENT' || !options.create) throw openError(error, toolName, shown);
    existed = false;
    handle = await open(resolved, flags | constants.O_CREAT | constants.O_EXCL, 0o666).catch(async (e: unknown) => {
      await removeMadeFolders();
      throw openError(e, toolName, shown);
    });
  }
  try {
    const real = await realPathOf(handle, resolved);
    if (!isInside(root, real)) throw new ToolError('PATH_OUTSIDE_WORKSPACE', toolName, `path ${shown} led outside the workspace when opened; refusing it`);
    const stats = await handle.stat();
    await assertNotHidden(options.policy, real, stats, toolName, displayPath(root, real));
    const discard = async () => {
      if (!existed) await unlink(resolved).catch(() => {});
      await removeMadeFolders();
    };
    await assertNoGitDirLayout(root, resolved, options.policy, toolName).catch(async (error: unknown) => {
      await handle.close();
      await discard();
      throw error;
    });
    return { handle, realPath: real, stats, existed, discard };
  } catch (error) {
    await handle.close().catch(() => {});
    throw error instanceof ToolError ? error : changedError(toolName, shown, error);
  }
}

/**
 * Opens `rel` (workspace-relative) without following any symbolic link on the way, for handing
 * to bubblewrap as a descriptor: `undefined` when it is missing, a link, or not a regular file
 * or folder. A path would let a link planted by an earlier command pull an outside file into
 * the sandbox; a descriptor is the very object checked here. Linux only (bubblewrap is too).
 */
export async function openNoFollow(root: string, rel: string): Promise<FileHandle | undefined> {
  const segments = path.posix
    .normalize(rel.replaceAll('\\', '/'))
    .split('/')
    .filter((s) => s !== '' && s !== '.');
  if (segments.length === 0 || segments.includes('..') || !procFdAvailable()) return undefined;
  let dir: FileHandle | undefined;
  try {
    dir = await open(root, DIR_FLAGS);
    for (const segment of segments.slice(0, -1)) {
      const next: FileHandle = await open(atPath(dir.fd, segment), DIR_FLAGS);
      await dir.close();
      dir = next;
    }
    const handle = await open(atPath(dir.fd, segments[segments.length - 1]), READ_FLAGS);
    const stats = await handle.stat();
    if (stats.isFile() || stats.isDirectory()) return handle;
    await handle.close();
    return undefined;
  } catch {
    return undefined; // missing, a link (ELOOP), or unreadable
  } finally {
    await dir?.close();
  }
}

/** The workspace-relative form of what the model typed (no symlinks resolved). */
function lexicalRelative(root: string, userPath: string): string {
  return path.relative(root, path.resolve(root, userPath)).split(path.sep).join('/');
}

/** Replaces the whole content of an opened file. */
export async function overwrite(handle: FileHandle, content: string | Buffer): Promise<void> {
  const data = typeof content === 'string' ? Buffer.from(content, 'utf8') : content;
  await handle.truncate(0);
  let offset = 0;
  while (offset < data.length) {
    const { bytesWritten } = await handle.write(data, offset, data.length - offset, offset);
    offset += bytesWritten;
  }
}
