import type { Stats } from 'node:fs';
import { realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import type { ForkpoolConfig } from '../config.js';
import { DEFAULTS } from '../defaults.js';
import { ToolError } from '../errors.js';
import { isInside } from '../workspace-scope.js';
import type { ToolPolicy } from './types.js';

/**
 * Files hidden from every tool: where keys are kept within the tools' reach. Redaction of tool
 * output is only the second line; this is the first. Two kinds:
 *
 * - by path (`ToolPolicy.hiddenPaths`, absolute, computed on the main thread): the config
 *   file(s) forkpool loaded, the files and folders the config lists in `hiddenPaths`, and the
 *   durable ledger with its `-wal`, `-shm` and `-journal` companions;
 * - by name, anywhere: `forkpool.config.json`, `.env`, `.env.<x>` (not `.env.example`,
 *   `.env.sample`, `.env.template`) and `.envrc`.
 *
 * The file tools check what they opened: its real path, and its device and inode against each
 * hidden file's, so a symbolic link or a hard link to a hidden file is refused too. The search
 * walks skip hidden files without reading them and say how many they skipped. bash sees them
 * masked in its sandbox (bash-masks.ts).
 */

/** True for a file name hidden wherever it is (see above). Case-insensitive. */
export function isHiddenName(name: string): boolean {
  const lower = name.toLowerCase();
  if (DEFAULTS.hiddenNames.includes(lower)) return true;
  return lower.startsWith('.env.') && !DEFAULTS.hiddenNameTemplates.includes(lower.slice('.env.'.length));
}

/** A SQLite file and the companions SQLite keeps beside it (each may hold recent pages). */
export function sqliteFiles(file: string): string[] {
  return [file, `${file}-wal`, `${file}-shm`, `${file}-journal`];
}

/**
 * The absolute hidden paths of a config: its `hiddenPaths` (the loaded config file is among
 * them when `loadConfig` read one), its ledger's files, and `extra` (a library's own ledger
 * store). Relative entries resolve against `cwd`, as `ledger.path` does.
 */
export function hiddenPathsOf(config: Pick<ForkpoolConfig, 'hiddenPaths' | 'ledger'>, extra: readonly string[] = [], cwd = process.cwd()): string[] {
  const ledger = config.ledger.path === undefined ? [] : sqliteFiles(config.ledger.path);
  return [...new Set([...config.hiddenPaths, ...ledger, ...extra].map((p) => path.resolve(cwd, p)))];
}

/**
 * The hidden paths of a job whose workspace root is `jobRoot`, another copy of the main
 * workspace `mainRoot` (a git worktree of it): each hidden path inside the main workspace is
 * hidden at the same place in the job's workspace too, since that copy holds the same tracked
 * file. The main workspace's own paths stay hidden. `mainRoots`: the main root as configured
 * and its real path, for hidden paths given by either.
 */
export function hiddenPathsForRoot(hiddenPaths: readonly string[], mainRoots: readonly string[], jobRoot: string): string[] {
  const out = new Set(hiddenPaths);
  for (const hidden of hiddenPaths) {
    const main = mainRoots.find((root) => isInside(root, hidden));
    if (main !== undefined) out.add(path.join(jobRoot, path.relative(main, hidden)));
  }
  return [...out];
}

/** The hidden paths as they are now: each path and its real path, and the identity of each that exists. */
export interface HiddenSnapshot {
  paths: ReadonlySet<string>;
  /** `dev:ino` of every hidden file or folder that exists. */
  ids: ReadonlySet<string>;
}

const identity = (s: Pick<Stats, 'dev' | 'ino'>) => `${s.dev}:${s.ino}`;

/** Looks each hidden path up now (a few stat calls): files may appear or be replaced during a job. */
export async function hiddenSnapshot(policy: Pick<ToolPolicy, 'hiddenPaths'>): Promise<HiddenSnapshot> {
  const paths = new Set<string>();
  const ids = new Set<string>();
  // A policy built by hand (before hiddenPaths existed) may lack the list: nothing hidden by path then.
  await Promise.all(
    (policy.hiddenPaths ?? []).map(async (p) => {
      paths.add(p);
      try {
        const [real, stats] = await Promise.all([realpath(p), stat(p)]);
        paths.add(real);
        ids.add(identity(stats));
      } catch {
        // Not there (now): its path is hidden, by its folder's real path too (a -journal appears later).
        const folder = await realpath(path.dirname(p)).catch(() => undefined);
        if (folder !== undefined) paths.add(path.join(folder, path.basename(p)));
      }
    }),
  );
  return { paths, ids };
}

/** What was opened: its identity, and whether it is a folder. */
export type OpenedStats = Pick<Stats, 'isDirectory'> & Partial<Pick<Stats, 'dev' | 'ino'>>;

/** For a folder known by path only (a walk's sub-folder). */
export const A_FOLDER: OpenedStats = { isDirectory: () => true };
/** For a regular file known by path only (a walk's listing, a file about to be created). */
export const A_FILE: OpenedStats = { isDirectory: () => false };

/**
 * Why `realPath` (or what was opened there, `stats`) is hidden; undefined when it is not. The
 * names hide files only: a folder called `.env` is usually a Python virtual environment.
 */
export function hiddenReason(snapshot: HiddenSnapshot, realPath: string, stats?: OpenedStats): string | undefined {
  if (!stats?.isDirectory() && isHiddenName(path.basename(realPath))) return 'files of that name (.env-style files, forkpool.config.json) usually hold keys';
  for (const hidden of snapshot.paths) {
    if (realPath === hidden || realPath.startsWith(`${hidden}${path.sep}`)) return "it is forkpool's configuration or ledger, or listed in hiddenPaths";
  }
  if (stats?.dev !== undefined && stats.ino !== undefined && snapshot.ids.has(identity({ dev: stats.dev, ino: stats.ino })))
    return 'it is another name (a hard or symbolic link) for a hidden file';
  return undefined;
}

/** The model-readable refusal for a hidden path. Names the path the model gave, never the content. */
export function hiddenError(toolName: string, shown: string, reason: string): ToolError {
  return new ToolError('PATH_HIDDEN', toolName, `${shown} is hidden from the tools (${reason}): no tool reads, searches or writes it. Work without it`);
}

/** Throws {@link hiddenError} when what was opened at `realPath` is hidden. */
export async function assertNotHidden(
  policy: Pick<ToolPolicy, 'hiddenPaths'>,
  realPath: string,
  stats: OpenedStats | undefined,
  toolName: string,
  shown: string,
): Promise<void> {
  const reason = hiddenReason(await hiddenSnapshot(policy), realPath, stats);
  if (reason !== undefined) throw hiddenError(toolName, JSON.stringify(shown), reason);
}
