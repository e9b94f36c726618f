import { open, lstat, realpath, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { DEFAULTS } from '../defaults.js';
import { ToolError } from '../errors.js';
import { A_FOLDER, hiddenReason, hiddenSnapshot, isHiddenName, type HiddenSnapshot } from './hidden.js';
import { openNoFollow } from './safe-fs.js';
import { pseudoFsDevices } from './pseudo-fs.js';
import { displayPath } from './sandbox.js';
import { isInside } from '../workspace-scope.js';
import type { ToolLimits } from '../config.js';
import type { ToolPolicy } from './types.js';
import { IGNORED_DIRS } from './util.js';
import { walkFiles } from './walk.js';

/**
 * What bash's sandbox masks, found afresh before every command (see hidden.ts for what is
 * hidden). Inside the sandbox:
 *
 * - each hidden file there is covered by /dev/null, read-only: `cat`, `cp`, `base64` read
 *   nothing, and it cannot be renamed, removed or hard-linked (a mount point: EBUSY, EXDEV);
 * - each hidden folder is an empty read-only tmpfs;
 * - each folder between the workspace root and a hidden file is bound onto itself, so it cannot
 *   be renamed either (a renamed folder would carry the file out from under the next command's
 *   mask, which is placed by path). Bound by descriptor, opened without following links.
 *
 * A hidden file with a second name (a hard link made before, outside the sandbox) would show
 * its content under that name: bash is refused then, saying so.
 */
export interface HiddenMasks {
  /** Absolute paths of hidden files to cover with /dev/null. */
  files: string[];
  /** Absolute paths of hidden folders to cover with an empty tmpfs. */
  folders: string[];
  /** Folders to bind onto themselves, shallowest first, each open as `handle` (workspace-relative `rel`). */
  pinned: Array<{ rel: string; handle: FileHandle }>;
}

const NAME = 'bash';

/** The masks for one command. The caller closes every `pinned` handle once bash has started. */
export async function hiddenMasks(
  root: string,
  policy: ToolPolicy,
  limits: Pick<ToolLimits, 'hiddenScanMaxEntries'>,
  signal: AbortSignal,
): Promise<HiddenMasks> {
  const snapshot = await hiddenSnapshot(policy);
  const visible = [root, ...(policy.readPaths ?? [])];
  const files = new Set<string>();
  const folders = new Set<string>();
  for (const listed of policy.hiddenPaths ?? []) {
    const real = await realpath(listed).catch(() => undefined);
    if (real === undefined || !visible.some((area) => isInside(area, real)) || real === root) continue;
    const info = await lstat(real);
    if (info.isDirectory()) folders.add(real);
    else if (info.isFile()) files.add(checkedSingleName(root, real, info.nlink));
  }
  // A context built by hand may lack the limit: the default then.
  const scanLimit = limits.hiddenScanMaxEntries ?? DEFAULTS.tools.hiddenScanMaxEntries;
  for (const found of await hiddenByName(root, snapshot, scanLimit, signal)) files.add(found);
  const pinned: HiddenMasks['pinned'] = [];
  try {
    for (const rel of foldersToPin(root, [...files, ...folders])) {
      const handle = await openNoFollow(root, rel);
      // Gone or turned into a link since the scan: refuse rather than mask the wrong place.
      if (!handle)
        throw new ToolError('TOOL_FAILED', NAME, `the folder ${JSON.stringify(rel)} holding a hidden file changed while bash was starting; try again`);
      pinned.push({ rel, handle });
    }
  } catch (error) {
    for (const { handle } of pinned) await handle.close().catch(() => {});
    throw error;
  }
  return { files: [...files], folders: [...folders], pinned };
}

/** Files hidden by name anywhere in the workspace (outside node_modules, .git, dist), bounded. */
async function hiddenByName(root: string, snapshot: HiddenSnapshot, limit: number, signal: AbortSignal): Promise<string[]> {
  const found: string[] = [];
  let entries = 0;
  const start = await open(root, 'r');
  try {
    const walk = walkFiles(start, root, {
      signal,
      toolName: NAME,
      skipDirs: IGNORED_DIRS,
      pseudoDevices: await pseudoFsDevices(),
      skipFolder: (abs) => hiddenReason(snapshot, abs, A_FOLDER) !== undefined,
      onTick: () => {
        if (++entries <= limit) return;
        throw new ToolError(
          'PATH_HIDDEN',
          NAME,
          `bash is refused here: the workspace has more than ${limit} entries outside ${IGNORED_DIRS.join(', ')} (toolLimits.hiddenScanMaxEntries), too many to look through for .env-style files to hide from the command. Use the file tools, or a smaller workspace`,
        );
      },
    });
    for await (const file of walk) {
      if (!isHiddenName(file.name)) continue;
      const info = await lstat(file.abs).catch(() => undefined);
      if (info?.isFile()) found.push(checkedSingleName(root, file.abs, info.nlink));
    }
  } finally {
    await start.close();
  }
  return found;
}

/** `abs`, when the file has no other name a command could read it by; else the refusal. */
function checkedSingleName(root: string, abs: string, links: number): string {
  if (links <= 1) return abs;
  const shown = displayPath(root, abs);
  throw new ToolError(
    'PATH_HIDDEN',
    NAME,
    `bash is refused: ${shown} is hidden from the tools (it may hold keys) but has ${links} names (hard links), and another name would show its content to the command. ` +
      `The user can remove the extra links (find . -samefile ${shown})`,
  );
}

/** Workspace-relative folders from the root down to each hidden path's parent, shallowest first. */
function foldersToPin(root: string, hidden: readonly string[]): string[] {
  const out = new Set<string>();
  for (const abs of hidden) {
    if (!isInside(root, abs)) continue;
    const segments = path.relative(root, path.dirname(abs)).split(path.sep).filter(Boolean);
    for (let i = 1; i <= segments.length; i++) out.add(segments.slice(0, i).join('/'));
  }
  return [...out].sort((a, b) => a.split('/').length - b.split('/').length || (a < b ? -1 : a > b ? 1 : 0));
}
