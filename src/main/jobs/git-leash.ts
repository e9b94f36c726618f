/**
 * Every git command forkpool runs itself (worktrees.ts) goes through here: off the main thread
 * (a child process awaited asynchronously), bounded in time and output, and on a leash, so that
 * nothing a workspace can write runs as code on the host. What a workspace could otherwise use:
 *
 * - hooks: a relative `core.hooksPath` (husky's `.husky/_`) names files in the work tree, and the
 *   user's own hooks in `.git/hooks` run code too. Every command gets `core.hooksPath=/dev/null`
 *   (git finds no hook there; `reference-transaction` and `post-checkout` included).
 * - drivers named by attributes: an in-tree `.gitattributes` (a job can write one, and a merge
 *   brings it into the checkout) picks `filter=` and `merge=` drivers by name, and git
 *   runs the command configured for that name. `core.attributesFile` cannot outrank in-tree
 *   attributes, and `--attr-source`/`GIT_ATTR_SOURCE` need git 2.40 or newer (2.39 is common).
 *   What holds instead: an attribute naming a driver that no config defines does nothing, so
 *   before each command every driver name the config defines is read (`git config --list`, same
 *   folder, same environment, includes followed) and overridden for that command: filters
 *   emptied and not required, merge drivers replaced by git's own three-way text merge
 *   (`git merge-file`). Overrides travel as
 *   `GIT_CONFIG_KEY_n`/`VALUE_n`, which outrank every config file and take any name verbatim.
 * - config from the work tree: a config file included from inside a work tree could define new
 *   drivers or keys between that read and the command; such a repository is refused.
 * - `core.fsmonitor` (a command), `core.pager`, `core.editor`, signing programs: overridden
 *   below. `diff=` drivers, `diff.external` and `GIT_EXTERNAL_DIFF`: every command that could
 *   make a patch runs with `--no-ext-diff --no-textconv` (see DIFF_COMMANDS).
 * - the environment: git reads GIT_DIR, GIT_CONFIG_*, GIT_EXEC_PATH... from it, so the child's
 *   environment is built from nothing but PATH, HOME and the locale, never inherited whole.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { WORKTREE_LIMITS } from '../../shared/fixed-limits.js';

export interface GitRun {
  ok: boolean;
  stdout: string;
  stderr: string;
  /** git is not on PATH. */
  missing: boolean;
  /** Stopped after `WORKTREE_LIMITS.gitTimeoutMs`. */
  timedOut: boolean;
}

/** Keys set for every command, whatever the repository's config says. */
const FIXED_OVERRIDES: ReadonlyArray<readonly [string, string]> = [
  ['core.hooksPath', '/dev/null'],
  ['core.fsmonitor', 'false'],
  ['core.untrackedCache', 'false'],
  ['core.pager', 'cat'],
  ['core.editor', 'true'],
  ['core.sshCommand', 'false'],
  ['core.askPass', ''],
  ['credential.helper', ''],
  ['merge.stat', 'false'],
  ['commit.gpgSign', 'false'],
  ['tag.gpgSign', 'false'],
  ['merge.verifySignatures', 'false'],
  ['gpg.program', 'false'],
  ['gc.auto', '0'],
  ['maintenance.auto', 'false'],
  ['user.name', 'forkpool'],
  ['user.email', 'forkpool@localhost'],
];

/** git's own three-way merge, in place of a configured merge driver: %A is rewritten, conflicts leave markers and a non-zero exit. */
const TEXT_MERGE = 'git merge-file --marker-size=%L %A %O %B';

/** The environment of forkpool's git: built from nothing, so no GIT_* of the host's reaches it. */
function baseEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    LC_ALL: 'C',
    GIT_TERMINAL_PROMPT: '0',
    GIT_EDITOR: 'true',
    GIT_PAGER: 'cat',
    GIT_OPTIONAL_LOCKS: '0',
    GIT_CONFIG_NOSYSTEM: '1',
  };
  // HOME and XDG_CONFIG_HOME find the user's global config (safe.directory, init defaults); nothing else is taken.
  for (const name of ['HOME', 'XDG_CONFIG_HOME', 'TMPDIR'] as const) if (process.env[name]) env[name] = process.env[name];
  return env;
}

function withOverrides(env: NodeJS.ProcessEnv, pairs: ReadonlyArray<readonly [string, string]>): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = { ...env, GIT_CONFIG_COUNT: String(pairs.length) };
  pairs.forEach(([key, value], i) => {
    out[`GIT_CONFIG_KEY_${i}`] = key;
    out[`GIT_CONFIG_VALUE_${i}`] = value;
  });
  return out;
}

/** A refusal the leash itself makes (not git's): said like git's own failure. */
export class GitLeashRefusal extends Error {}

/**
 * The overrides for every driver the config defines, from `git config --list --show-origin -z`
 * (records `origin\0key\nvalue\0`). Throws {@link GitLeashRefusal} when a config file comes from,
 * or an include points into, one of `workTrees` (outside their `.git`).
 */
export function driverOverrides(listing: string, workTrees: readonly string[], top = ''): Array<[string, string]> {
  const fields = listing.split('\0');
  const pairs: Array<[string, string]> = [];
  const seen = new Set<string>();
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const origin = fields[i] ?? '';
    const entry = fields[i + 1] ?? '';
    const cut = entry.indexOf('\n');
    const key = cut < 0 ? entry : entry.slice(0, cut);
    const value = cut < 0 ? '' : entry.slice(cut + 1);
    // A repository's own config is named relative to its top folder (`file:.git/config`).
    const file = origin.startsWith('file:') ? path.resolve(top, origin.slice(5)) : undefined;
    if (file && inWorkTree(file, workTrees)) throw new GitLeashRefusal(`git reads config from ${file}, inside the work tree, where a job could write it`);
    if (file && /^include(if\..*)?\.path$/i.test(key)) {
      const target = path.resolve(path.dirname(file), value.replace(/^~(?=\/)/, process.env.HOME ?? '~'));
      if (inWorkTree(target, workTrees)) throw new GitLeashRefusal(`git's config includes ${target}, inside the work tree, where a job could write it`);
    }
    // Diff drivers (`diff.<name>.command`, `textconv`) need no override: see DIFF_COMMANDS.
    const driver = /^(filter|merge)\.(.+)\.[^.]+$/s.exec(key);
    if (!driver || seen.has(`${driver[1]}.${driver[2]}`)) continue;
    const [, kind, name] = driver as unknown as [string, string, string];
    seen.add(`${kind}.${name}`);
    if (kind === 'filter')
      for (const [k, v] of [
        ['clean', ''],
        ['smudge', ''],
        ['process', ''],
        ['required', 'false'],
      ])
        pairs.push([`filter.${name}.${k}`, v as string]);
    else pairs.push([`merge.${name}.driver`, TEXT_MERGE], [`merge.${name}.recursive`, 'text']);
  }
  return pairs;
}

function inWorkTree(file: string, workTrees: readonly string[]): boolean {
  return workTrees.some((tree) => {
    const rel = path.relative(tree, file);
    if (rel === '' || rel.startsWith('..') || path.isAbsolute(rel)) return false;
    return rel.split(path.sep)[0] !== '.git';
  });
}

interface RunOptions {
  /** Work trees no config may come from (the repository's checkout, a job's worktree). */
  workTrees: readonly string[];
  timeoutMs?: number;
}

const LIST_CONFIG = ['config', '--list', '--show-origin', '-z'];

/**
 * Commands that may make a patch: each gets `--no-ext-diff --no-textconv`, which make git ignore
 * `diff.external`, `GIT_EXTERNAL_DIFF` and every diff driver's command and textconv (an empty
 * override would not: git then tries to run the empty command). No other command forkpool runs
 * makes a patch (the merge runs with `--no-stat`, and `merge.stat` is off).
 */
const DIFF_COMMANDS = new Set(['diff', 'log', 'show']);

function withDiffGuard(args: readonly string[]): readonly string[] {
  const [command, ...rest] = args;
  return command !== undefined && DIFF_COMMANDS.has(command) ? [command, '--no-ext-diff', '--no-textconv', ...rest] : args;
}
const SHOW_TOP = ['rev-parse', '--show-toplevel'];

/** Whether a config file is named relative (to the top folder, which then must be asked for). */
function hasRelativeOrigin(listing: string): boolean {
  return listing.split('\0').some((field, i) => i % 2 === 0 && field.startsWith('file:') && !path.isAbsolute(field.slice(5)));
}

function result(status: number | null, error: Error | undefined, stdout: string, stderr: string, timedOut: boolean, timeoutMs: number): GitRun {
  const missing = (error as NodeJS.ErrnoException | undefined)?.code === 'ENOENT';
  const why = timedOut ? `git did not finish within ${timeoutMs / 1000} s and was stopped` : '';
  return { ok: status === 0 && !error && !timedOut, stdout, stderr: [stderr.trim(), why].filter(Boolean).join('; '), missing, timedOut };
}

function refused(error: unknown): GitRun {
  if (error instanceof GitLeashRefusal) return { ok: false, stdout: '', stderr: error.message, missing: false, timedOut: false };
  throw error;
}

/** One child process, awaited: output capped, stopped (SIGKILL) past its time. */
function runChild(cwd: string, args: readonly string[], env: NodeJS.ProcessEnv, timeoutMs: number): Promise<GitRun> {
  return new Promise((resolve) => {
    const child = spawn('git', ['-C', cwd, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let bytes = 0;
    let timedOut = false;
    const cap = (chunks: Buffer[]) => (chunk: Buffer) => {
      bytes += chunk.length;
      // Past the cap the rest is dropped, not held: a runaway listing cannot fill the heap.
      if (bytes <= WORKTREE_LIMITS.gitOutputMaxBytes) chunks.push(chunk);
    };
    child.stdout.on('data', cap(out));
    child.stderr.on('data', cap(err));
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    let failed: Error | undefined;
    child.on('error', (error) => (failed = error));
    child.on('close', (status) => {
      clearTimeout(timer);
      resolve(result(status, failed, Buffer.concat(out).toString('utf8'), Buffer.concat(err).toString('utf8'), timedOut, timeoutMs));
    });
  });
}

/** git on the leash, awaited: first the config's drivers are read, then the command runs with all of them overridden. */
export async function git(cwd: string, args: readonly string[], options: RunOptions): Promise<GitRun> {
  const timeoutMs = options.timeoutMs ?? WORKTREE_LIMITS.gitTimeoutMs;
  const env = withOverrides(baseEnv(), FIXED_OVERRIDES);
  const listing = await runChild(cwd, LIST_CONFIG, env, timeoutMs);
  if (!listing.ok) return listing;
  const top = hasRelativeOrigin(listing.stdout) ? await runChild(cwd, SHOW_TOP, env, timeoutMs) : undefined;
  if (top && !top.ok) return top;
  let drivers: Array<[string, string]>;
  try {
    drivers = driverOverrides(listing.stdout, options.workTrees, top?.stdout.trim());
  } catch (error) {
    return refused(error);
  }
  return runChild(cwd, withDiffGuard(args), withOverrides(baseEnv(), [...FIXED_OVERRIDES, ...drivers]), timeoutMs);
}
