import { execFile, spawn, spawnSync } from 'node:child_process';
import { PROCESS_TAG_VAR } from './process-tag.js';
import { existsSync, lstatSync, readlinkSync } from 'node:fs';
import path from 'node:path';
import type { ForkpoolConfig } from '../config.js';
import { ConfigError } from '../errors.js';
import type { ToolPolicy } from './types.js';

/**
 * bash's sandbox: bubblewrap (the same base as Claude Code's Linux sandbox). Inside, the
 * workspace is the only writable folder (protected paths in it read-only), system folders are
 * read-only, /tmp is a fresh tmpfs, /proc and the PID namespace are private (so nothing the
 * command starts, `setsid` included, outlives the sandbox), there is no network unless granted,
 * no capabilities, and the environment is a short fixed list: bwrap itself is spawned with it,
 * so `/proc/1/environ` inside holds nothing of the host's.
 */

/** System folders bound read-only (symbolic links, as on merged-/usr systems, are recreated). */
const SYSTEM_DIRS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'] as const;

/**
 * The parts of /etc that programs need (users, name service, certificates, the dynamic linker,
 * locale, shell start-up files). Not /etc itself: it holds shadow files, host keys and tokens.
 */
const ETC_ENTRIES = [
  'alternatives',
  'bash.bashrc',
  'ca-certificates',
  'ca-certificates.conf',
  'debian_version',
  'gitconfig',
  'group',
  'host.conf',
  'hostname',
  'hosts',
  'inputrc',
  'ld.so.cache',
  'ld.so.conf',
  'ld.so.conf.d',
  'locale.alias',
  'localtime',
  'magic',
  'magic.mime',
  'mime.types',
  'nsswitch.conf',
  'os-release',
  'passwd',
  'profile',
  'protocols',
  'resolv.conf',
  'services',
  'ssl',
  'terminfo',
  'timezone',
] as const;

const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

export interface BwrapCommand {
  workspaceRoot: string;
  /** The program run inside, in the workspace (see `limitedBashArgv`). */
  argv: readonly string[];
  policy: ToolPolicy;
  /**
   * Protected paths bound read-only over the workspace: the workspace-relative path and the
   * child's descriptor number of the very file or folder (opened without following links).
   */
  readOnlyInWorkspace: ReadonlyArray<{ rel: string; childFd: number }>;
  /** Workspace-relative paths held by an empty read-only folder, so nothing can be created there. */
  heldEmpty?: readonly string[] | undefined;
  /** MiB of the private /tmp; undefined: unbounded (a bwrap without `--size`). */
  tmpMb?: number | undefined;
  /** Files and folders hidden from the tools, masked inside (see bash-masks.ts). */
  hidden?: SandboxHiddenMasks;
}

/**
 * /proc entries no sandboxed process may write (as container runtimes do): sysctls —
 * `kernel.core_pattern` among them, writable by uid 0 even without capabilities — the magic
 * SysRq key, IRQ affinity, bus and file-system settings. bubblewrap itself covers only some of
 * them, and only when they look writable from the outside.
 */
const PROC_READ_ONLY = ['sys', 'sysrq-trigger', 'irq', 'bus', 'fs'] as const;
/**
 * /proc entries hidden (files behind /dev/null, folders behind an empty read-only tmpfs): kernel
 * memory and symbols, keyrings, timers, scheduler internals, firmware tables and devices.
 */
const PROC_MASKED = [
  'kcore',
  'keys',
  'key-users',
  'kallsyms',
  'latency_stats',
  'timer_list',
  'timer_stats',
  'sched_debug',
  'kpagecount',
  'kpageflags',
  'kpagecgroup',
  'acpi',
  'asound',
  'scsi',
  'driver',
] as const;

/**
 * Arguments that follow `--proc /proc`: the read-only binds and masks above, for the entries
 * this kernel has (bubblewrap cannot create a mount point inside /proc). /sys is not mounted at
 * all, so it needs none.
 */
export function procHardeningArgs(): string[] {
  // The kernel's /proc entries do not change while the process runs: looked up once per thread.
  procArgs ??= procHardeningLookup();
  return procArgs;
}

let procArgs: string[] | undefined;

function procHardeningLookup(): string[] {
  const args: string[] = [];
  for (const entry of PROC_READ_ONLY) if (existsSync(`/proc/${entry}`)) args.push('--ro-bind', `/proc/${entry}`, `/proc/${entry}`);
  for (const entry of PROC_MASKED) {
    const dest = `/proc/${entry}`;
    const kind = lstatSync(dest, { throwIfNoEntry: false });
    if (kind?.isDirectory()) args.push('--tmpfs', dest, '--remount-ro', dest);
    else if (kind) args.push('--ro-bind', '/dev/null', dest);
  }
  return args;
}

/** {@link HiddenMasks} as bwrap needs them: the pinned folders by the child's descriptor number. */
export interface SandboxHiddenMasks {
  files: readonly string[];
  folders: readonly string[];
  pinned: ReadonlyArray<{ rel: string; childFd: number }>;
}

/**
 * The folders down to hidden files, each bound onto itself (shallowest first), right after the
 * workspace bind and before any other bind inside it: a folder bound later would uncover what
 * was mounted below it earlier (a read-only `.git`, say).
 */
export function hiddenPinArgs(workspaceRoot: string, masks: SandboxHiddenMasks | undefined): string[] {
  return (masks?.pinned ?? []).flatMap(({ rel, childFd }) => ['--bind-fd', String(childFd), path.join(workspaceRoot, rel)]);
}

/**
 * The masks themselves, after every other bind (so none uncovers them): /dev/null over each
 * hidden file, an empty read-only tmpfs over each hidden folder.
 */
export function hiddenMaskArgs(masks: SandboxHiddenMasks | undefined): string[] {
  if (!masks) return [];
  return [
    ...masks.files.flatMap((file) => ['--ro-bind', '/dev/null', file]),
    ...masks.folders.flatMap((folder) => ['--tmpfs', folder, '--remount-ro', folder]),
  ];
}

/**
 * The environment of bwrap and so of everything inside: a fixed short list, never the host's.
 * HOME is the sandbox's own /tmp, so dotfiles a command writes do not land in the workspace.
 */
export function sandboxEnv(env: Readonly<Record<string, string>>): Record<string, string> {
  const base = { PATH: env.PATH || DEFAULT_PATH, HOME: '/tmp', TMPDIR: '/tmp', LANG: env.LANG || 'C.UTF-8', TERM: 'dumb' };
  // The job's tag (not a secret) lets the main thread find every process of a job it must end.
  return env[PROCESS_TAG_VAR] ? { ...base, [PROCESS_TAG_VAR]: env[PROCESS_TAG_VAR] } : base;
}

/** Host variables a command run without a sandbox keeps besides {@link sandboxEnv}'s: who and where the user is, none a secret. */
const UNSANDBOXED_KEPT = ['HOME', 'USER', 'LOGNAME', 'SHELL', 'TMPDIR', 'TZ', 'LANGUAGE', 'LC_ALL', 'LC_CTYPE', 'LC_MESSAGES'] as const;

/**
 * The environment of a command run without a sandbox (`sandbox: "none"`): the sandbox's short
 * list, with the user's own HOME and the few variables above; never the rest of the host's (a
 * variable whose name does not look secret may still hold one).
 */
export function unsandboxedEnv(env: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = { ...sandboxEnv(env) };
  delete out.TMPDIR;
  for (const name of UNSANDBOXED_KEPT) if (env[name]) out[name] = env[name];
  return out;
}

/** bwrap's argument list for running `spec.argv` in the workspace. */
export function bwrapArgs(spec: BwrapCommand): string[] {
  const args: string[] = ['--unshare-all'];
  if (spec.policy.network) args.push('--share-net');
  args.push('--die-with-parent', '--new-session', '--cap-drop', 'ALL', '--proc', '/proc', ...procHardeningArgs(), '--dev', '/dev');
  if (spec.tmpMb !== undefined) args.push('--size', String(spec.tmpMb * 1024 * 1024));
  args.push('--tmpfs', '/tmp');
  for (const dir of SYSTEM_DIRS) {
    const link = symlinkTarget(dir);
    if (link !== undefined) args.push('--symlink', link, dir);
    else args.push('--ro-bind-try', dir, dir);
  }
  for (const entry of ETC_ENTRIES) args.push('--ro-bind-try', `/etc/${entry}`, `/etc/${entry}`);
  for (const dir of spec.policy.readPaths) args.push('--ro-bind-try', dir, dir);
  // After the read-only binds, so a workspace below /usr or /tmp is still writable.
  args.push('--bind', spec.workspaceRoot, spec.workspaceRoot);
  args.push(...hiddenPinArgs(spec.workspaceRoot, spec.hidden));
  for (const { rel, childFd } of spec.readOnlyInWorkspace) {
    args.push('--ro-bind-fd', String(childFd), path.join(spec.workspaceRoot, rel));
  }
  for (const rel of spec.heldEmpty ?? []) {
    const dest = path.join(spec.workspaceRoot, rel);
    args.push('--tmpfs', dest, '--remount-ro', dest);
  }
  // The masks go last of the binds: none bound after them may uncover one.
  args.push(...hiddenMaskArgs(spec.hidden));
  args.push('--chdir', spec.workspaceRoot, '--', ...spec.argv);
  return args;
}

const sizeSupport = new Map<string, Promise<boolean>>();

/** Whether this bwrap can size a tmpfs (`--size`, bubblewrap 0.7 and later). Cached per path and thread. */
export function bwrapSizesTmpfs(bwrapPath: string): Promise<boolean> {
  let known = sizeSupport.get(bwrapPath);
  if (!known) {
    known = new Promise<boolean>((resolve) => {
      execFile(bwrapPath, ['--help'], { env: sandboxEnv({}), timeout: PROBE_TIMEOUT_MS }, (_error, stdout, stderr) =>
        resolve(`${stdout}${stderr}`.includes('--size')),
      );
    });
    sizeSupport.set(bwrapPath, known);
  }
  return known;
}

function symlinkTarget(p: string): string | undefined {
  try {
    return lstatSync(p).isSymbolicLink() ? readlinkSync(p) : undefined;
  } catch {
    return undefined;
  }
}

/** Arguments of the smallest sandbox that proves bwrap can build one here. */
function probeArgs(): string[] {
  const args = ['--unshare-all', '--die-with-parent', '--cap-drop', 'ALL', '--proc', '/proc', '--dev', '/dev', '--tmpfs', '/tmp'];
  for (const dir of SYSTEM_DIRS) {
    const link = symlinkTarget(dir);
    if (link !== undefined) args.push('--symlink', link, dir);
    else args.push('--ro-bind-try', dir, dir);
  }
  return [...args, '--', '/bin/true'];
}

const PROBE_TIMEOUT_MS = 10_000;
const probes = new Map<string, Promise<ProbeResult>>();

export interface ProbeResult {
  ok: boolean;
  /** Why not, when not ok. */
  reason?: string;
}

/** Whether `bwrapPath` exists and builds a sandbox on this machine. Cached per path and thread. */
export function probeBwrap(bwrapPath: string): Promise<ProbeResult> {
  let probe = probes.get(bwrapPath);
  if (!probe) {
    probe = new Promise<ProbeResult>((resolve) => {
      if (!existsSync(bwrapPath)) return resolve({ ok: false, reason: `${bwrapPath} not found` });
      const child = spawn(bwrapPath, probeArgs(), { stdio: ['ignore', 'ignore', 'pipe'], env: sandboxEnv({}), timeout: PROBE_TIMEOUT_MS });
      let stderr = '';
      child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d.slice(0, 500)));
      child.on('error', (error) => resolve({ ok: false, reason: error.message }));
      child.on('close', (code) => resolve(code === 0 ? { ok: true } : { ok: false, reason: stderr.trim().split('\n')[0] || `exit code ${code}` }));
    });
    probes.set(bwrapPath, probe);
  }
  return probe;
}

function probeBwrapSync(bwrapPath: string): ProbeResult {
  if (!existsSync(bwrapPath)) return { ok: false, reason: `${bwrapPath} not found` };
  const r = spawnSync(bwrapPath, probeArgs(), { stdio: ['ignore', 'ignore', 'pipe'], env: sandboxEnv({}), timeout: PROBE_TIMEOUT_MS, encoding: 'utf8' });
  if (r.error) return { ok: false, reason: r.error.message };
  return r.status === 0 ? { ok: true } : { ok: false, reason: r.stderr.trim().split('\n')[0] || `exit code ${r.status}` };
}

export interface SandboxStatus {
  /** What bash will run in. */
  mode: 'bwrap' | 'none';
  /**
   * One line to log once at start when bash is offered and runs without a sandbox; undefined
   * when it is sandboxed or not offered.
   */
  notice?: string;
}

/**
 * Decides at start how bash will run, for the one-line notice. Throws a {@link ConfigError}
 * (field `sandbox`) when `bwrap` was asked for and does not work here: an explicit sandbox
 * never degrades silently.
 */
export function checkSandbox(config: Pick<ForkpoolConfig, 'sandbox' | 'bwrapPath' | 'tools'>): SandboxStatus {
  const bashOffered = config.tools.includes('bash');
  if (config.sandbox === 'none') {
    return bashOffered
      ? {
          mode: 'none',
          notice:
            'forkpool: sandbox "none": bash runs without a sandbox (it can read outside the workspace and reach the network); only the file tools are confined',
        }
      : { mode: 'none' };
  }
  const probe = probeBwrapSync(config.bwrapPath);
  if (probe.ok) return { mode: 'bwrap' };
  if (config.sandbox === 'bwrap') {
    throw new ConfigError([
      {
        field: 'sandbox',
        expected: `"bwrap" needs a working bubblewrap at ${config.bwrapPath} (Debian: apt-get install bubblewrap), or set "auto" or "none"`,
        received: `"bwrap" (${probe.reason ?? 'unusable'})`,
      },
    ]);
  }
  const notice = `forkpool: bubblewrap is not usable here (${probe.reason ?? 'unknown'}): bash runs without a sandbox; install bubblewrap (apt-get install bubblewrap) to confine it`;
  return bashOffered ? { mode: 'none', notice } : { mode: 'none' };
}
