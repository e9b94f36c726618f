import { spawn } from 'node:child_process';
import type { FileHandle } from 'node:fs/promises';
import { z } from 'zod';
import { DEFAULTS } from '../defaults.js';
import { AbortError, ToolError } from '../errors.js';
import { hiddenMasks } from './bash-masks.js';
import { bwrapArgs, bwrapSizesTmpfs, probeBwrap, sandboxEnv, unsandboxedEnv } from './bwrap.js';
import { policyOf } from './policy.js';
import { gitPartsIn, placeholdersFor, scanProtected, settleProtected, type ProtectedScan } from './protected-scan.js';
import { describeLimitHits, joiningArgv, limitedBashArgv, limitsHitByOutput, makeCommandCgroup, type CommandCgroup, type LimitName } from './sandbox-limits.js';
import { openNoFollow } from './safe-fs.js';
import { HeadTailBuffer } from '../text-budget.js';
import { scrubEnv } from './secrets.js';
import type { ProcessRegistry, ToolContext, ToolDefinition, ToolPolicy } from './types.js';
import { capOutput, throwIfAborted } from './util.js';

const NAME = 'bash';
/** After SIGTERM to the process group, SIGKILL follows this much later. */
const KILL_GRACE_MS = 500;
/** After the shell exits, wait this long for its output pipes to close (a background child may hold them). */
const CLOSE_GRACE_MS = 250;

const parameters = z.strictObject({
  command: z.string().min(1),
  timeout_ms: z.number().int().min(1).optional(),
});

export type BashArgs = z.output<typeof parameters>;

export const bashTool: ToolDefinition<BashArgs> = {
  name: NAME,
  description: 'Run a bash command in the workspace root; returns output and exit code. Usually sandboxed: no network, .git read-only.',
  parameters,
  gated: true,
  describeCall: (args) => `bash: ${args.command.length > 200 ? `${args.command.slice(0, 200)}…` : args.command}`,
  async run(args, ctx) {
    throwIfAborted(ctx.signal);
    const timeoutMs = Math.min(args.timeout_ms ?? ctx.limits.bashTimeoutMs, ctx.limits.bashTimeoutMs);
    const output = new HeadTailBuffer(ctx.limits.outputMaxChars);
    const launch = await launchFor(args.command, ctx);
    let outcome: Outcome;
    let removed: string[] = [];
    let cgroupHits = new Set<LimitName>();
    try {
      throwIfAborted(ctx.signal);
      outcome = await runCommand(launch, timeoutMs, ctx.signal, ctx.processes, (chunk) => output.push(chunk));
    } finally {
      for (const handle of launch.extraFds) await handle.close().catch(() => {});
      if (launch.cgroup) {
        cgroupHits = await launch.cgroup.hits();
        await launch.cgroup.remove();
      }
      // Also after an abort: what the command planted goes either way.
      if (launch.guard) removed = await settleProtected(ctx.workspaceRoot, policyOf(ctx), launch.guard.scan, launch.guard.heldEmpty).catch(() => []);
    }
    const status = outcome.timedOut
      ? `[timed out after ${timeoutMs} ms; everything the command started was killed]`
      : outcome.code !== null
        ? `[exit code: ${outcome.code}]`
        : `[killed by signal ${outcome.signal ?? 'unknown'}]`;
    const raw = output.total === 0 ? '(no output)' : output.text(ctx.limits.outputMaxChars - status.length - 1);
    const text = `${raw.endsWith('\n') ? raw.slice(0, -1) : raw}\n${status}`;
    if (removed.length > 0) {
      const shown =
        removed
          .slice(0, 10)
          .map((rel) => JSON.stringify(rel))
          .join(', ') + (removed.length > 10 ? `, and ${removed.length - 10} more` : '');
      const note = `bash: the command created or replaced protected paths (${shown}; protectedPaths: .git, or a folder laid out as a git directory with HEAD, objects/ and refs/), which could run code at the user's next git command; forkpool removed them. Leave .git alone`;
      throw new ToolError('PERMISSION_DENIED', NAME, capOutput(`${note}\n${text}`, ctx.limits));
    }
    const hits = new Set([...cgroupHits, ...(outcome.timedOut ? [] : limitsHitByOutput(raw, outcome, launch.sandboxed))]);
    if (hits.size > 0) throw new ToolError('SANDBOX_LIMIT', NAME, capOutput(`${describeLimitHits(hits, ctx.limits)}\n${text}`, ctx.limits));
    // The tool loop redacts every configured key and the process environment's credentials from
    // every tool result (what an unsandboxed command reads at /proc/$PPID/environ); the sandbox hides the rest.
    return capOutput(text, ctx.limits);
  },
};

interface Outcome {
  code: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
}

/** What to spawn: bwrap around bash, or bash alone (either in a cgroup of its own where one can be made). */
interface Launch {
  file: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
  /** Descriptors handed to the child as fds 3, 4, … (closed here once it is spawned). */
  extraFds: FileHandle[];
  sandboxed: boolean;
  cgroup?: CommandCgroup | undefined;
  /** In bubblewrap: the protected entries seen before the command, to check against after it. */
  guard?: { scan: ProtectedScan; heldEmpty: string[] } | undefined;
}

async function launchFor(command: string, ctx: ToolContext): Promise<Launch> {
  const policy = policyOf(ctx);
  const sandboxed = policy.sandbox === 'bwrap' || (policy.sandbox === 'auto' && (await probeBwrap(policy.bwrapPath)).ok);
  const cgroup = await makeCommandCgroup(ctx.limits);
  const inCgroup = (argv: string[]) => (cgroup ? joiningArgv(cgroup.procsFiles, argv) : argv);
  if (!sandboxed) {
    const [file, ...args] = inCgroup(limitedBashArgv(command, ctx.limits, { nproc: false })) as [string, ...string[]];
    return { file, args, cwd: ctx.workspaceRoot, env: unsandboxedEnv(scrubEnv(ctx.env)), extraFds: [], sandboxed, cgroup };
  }
  // RLIMIT_NPROC counts per user: only inside bwrap's own user namespace (not root) is it the command's own count.
  const argv = limitedBashArgv(command, ctx.limits, { nproc: !cgroup && process.getuid?.() !== 0 });
  const extraFds: FileHandle[] = [];
  try {
    // Hidden files (config, ledger, .env-style) are masked: the command reads nothing of them. The
    // folders down to them are pinned by descriptor first (fds 3, 4, …), then the protected binds.
    const masks = await hiddenMasks(ctx.workspaceRoot, policy, ctx.limits, ctx.signal);
    extraFds.push(...masks.pinned.map((p) => p.handle));
    const hidden = { files: masks.files, folders: masks.folders, pinned: masks.pinned.map((p, i) => ({ rel: p.rel, childFd: 3 + i })) };
    const { readOnlyInWorkspace, guard } = await protectedBinds(ctx.workspaceRoot, policy, extraFds);
    const tmpMb = (await bwrapSizesTmpfs(policy.bwrapPath)) ? ctx.limits.bashTmpMb : undefined;
    const bwrap = bwrapArgs({ workspaceRoot: ctx.workspaceRoot, argv, policy, readOnlyInWorkspace, heldEmpty: guard?.heldEmpty, tmpMb, hidden });
    const [file, ...args] = inCgroup([policy.bwrapPath, ...bwrap]) as [string, ...string[]];
    return { file, args, cwd: ctx.workspaceRoot, env: sandboxEnv(scrubEnv(ctx.env)), extraFds, sandboxed, cgroup, guard };
  } catch (error) {
    // Refused before it ran (a hidden file with a second link, too many entries…): nothing of it may stay.
    await Promise.allSettled(extraFds.map((handle) => handle.close()));
    await cgroup?.remove();
    throw error;
  }
}

/**
 * Every protected entry in the workspace (any depth, bounded walk), and what `.git` files and
 * links point to there, becomes read-only inside; absent root-level ones are held empty. Handed
 * over as descriptors opened without following links (appended to `extraFds`): a `.git` link an
 * earlier command planted (to ~/.ssh, say) is never mounted, only what it points to inside the
 * workspace.
 */
async function protectedBinds(root: string, policy: ToolPolicy, extraFds: FileHandle[]) {
  const readOnlyInWorkspace: Array<{ rel: string; childFd: number }> = [];
  if (policy.allowProtectedWrites) return { readOnlyInWorkspace, guard: undefined };
  const scan = await scanProtected(root, policy);
  // A root already laid out as a git directory keeps that layout read-only, as a `.git` would be.
  const rootGitDir = scan.gitDirs.has('') ? gitPartsIn(scan, '') : [];
  const wanted = [...[...scan.entries.values(), ...rootGitDir].filter((e) => e.kind === 'dir' || e.kind === 'file').map((e) => e.rel), ...scan.pointedTo];
  for (const rel of wanted.slice(0, DEFAULTS.protectedScan.maxBinds)) {
    const handle = await openNoFollow(root, rel);
    if (!handle) continue;
    extraFds.push(handle);
    readOnlyInWorkspace.push({ rel, childFd: 2 + extraFds.length });
  }
  return { readOnlyInWorkspace, guard: { scan, heldEmpty: await placeholdersFor(root, policy, scan) } };
}

function runCommand(
  launch: Launch,
  timeoutMs: number,
  signal: AbortSignal,
  processes: ProcessRegistry | undefined,
  onData: (chunk: string) => void,
): Promise<Outcome> {
  return new Promise<Outcome>((resolve, reject) => {
    // detached: the child leads a new process group, so kill(-pid) reaches its children too.
    // With bwrap the group is bwrap itself: killing it kills its PID namespace (--die-with-parent),
    // and with it everything inside, including processes that left the group with setsid.
    const child = spawn(launch.file, launch.args, {
      cwd: launch.cwd,
      env: launch.env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe', ...launch.extraFds.map((h) => h.fd)],
    });
    const pgid = child.pid;
    // Registered at once, so the main thread can kill the group if this thread dies first.
    if (pgid !== undefined) processes?.started(pgid);
    let timedOut = false;
    let exited: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    let settled = false;
    const timers: NodeJS.Timeout[] = [];

    const killGroup = (sig: NodeJS.Signals) => {
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, sig);
      } catch {
        // ESRCH: the group is already gone.
      }
    };
    const stop = () => {
      killGroup('SIGTERM');
      timers.push(setTimeout(() => killGroup('SIGKILL'), KILL_GRACE_MS));
    };
    const finish = (error?: Error) => {
      if (settled) return;
      settled = true;
      for (const t of timers) clearTimeout(t);
      signal.removeEventListener('abort', onAbort);
      // Reap anything the command left running in its group (e.g. `sleep 100 &`).
      killGroup('SIGKILL');
      if (pgid !== undefined) processes?.ended(pgid);
      child.stdout?.destroy();
      child.stderr?.destroy();
      if (error) reject(error);
      else if (signal.aborted) reject(new AbortError(signal.reason));
      else resolve({ code: exited?.code ?? null, signal: exited?.signal ?? null, timedOut });
    };
    const onAbort = () => stop();

    child.stdout?.setEncoding('utf8').on('data', onData);
    child.stderr?.setEncoding('utf8').on('data', onData);
    child.on('error', (error) => finish(new ToolError('TOOL_FAILED', NAME, `could not run ${launch.file}: ${error.message}`, { cause: error })));
    child.on('exit', (code, sig) => {
      exited = { code, signal: sig };
      timers.push(setTimeout(() => finish(), CLOSE_GRACE_MS));
    });
    child.on('close', () => finish());
    timers.push(
      setTimeout(() => {
        timedOut = true;
        stop();
      }, timeoutMs),
    );
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
