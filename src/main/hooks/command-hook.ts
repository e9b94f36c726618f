import { spawn } from 'node:child_process';
import { errorMessage } from '../../shared/errors.js';
import { verdictOf, type CommandHook, type HookAnswer, type HookInput, type HookVerdict } from '../../shared/hooks.js';
import { bwrapArgs, probeBwrap, sandboxEnv, unsandboxedEnv } from '../../shared/tools/bwrap.js';
import { scrubEnv } from '../../shared/tools/secrets.js';
import type { ToolPolicy } from '../../shared/tools/types.js';

/** Bytes kept of a hook's stdout and of its stderr (the rest is dropped: a reason is a few lines). */
const OUTPUT_MAX_BYTES = 64 * 1024;

export interface CommandHookPlace {
  workspaceRoot: string;
  policy: ToolPolicy;
  /** The host's environment; the hook gets it without secrets (as bash does). */
  env: NodeJS.ProcessEnv;
}

/**
 * Runs one command hook as Claude Code does: `sh -c command` in the workspace, the event's JSON
 * on stdin. Exit 0: stdout's JSON is the answer (plain text is context for UserPromptSubmit and
 * SubagentStart); exit 2: a block, stderr the reason the model reads; anything else (another
 * code, a crash, its timeout) is a problem reported, never a block. In bubblewrap when the
 * sandbox is on, with the workspace read-only. Never rejects.
 */
export async function runCommandHook(hook: CommandHook, input: HookInput, place: CommandHookPlace, signal: AbortSignal): Promise<HookVerdict> {
  const name = `hook ${JSON.stringify(hook.command.slice(0, 80))} (${input.hook_event_name})`;
  let launch: { file: string; args: string[]; env: Record<string, string> };
  try {
    launch = await launchOf(hook.command, place);
  } catch (error) {
    return { problems: [`${name} could not start: ${errorMessage(error)}`] };
  }
  const ran = await runProcess(launch, JSON.stringify(input), place.workspaceRoot, hook.timeoutMs, signal);
  if (ran.error !== undefined) return { problems: [`${name} could not start: ${ran.error}`] };
  if (ran.timedOut) return { problems: [`${name} timed out after ${hook.timeoutMs} ms and was killed`] };
  if (ran.code === 2) return { block: ran.stderr.trim() || `blocked by ${name} (exit 2)` };
  if (ran.code !== 0) {
    const how = ran.code === null ? `was ended by ${ran.signal ?? 'a signal'}` : `exited with code ${ran.code}`;
    return { problems: [`${name} ${how}${ran.stderr.trim() ? `: ${ran.stderr.trim().slice(0, 500)}` : ''}`] };
  }
  const out = ran.stdout.trim();
  if (out.startsWith('{')) {
    try {
      return verdictOf(JSON.parse(out) as HookAnswer);
    } catch {
      return { problems: [`${name} printed JSON that does not parse: ${out.slice(0, 200)}`] };
    }
  }
  const textIsContext = input.hook_event_name === 'UserPromptSubmit' || input.hook_event_name === 'SubagentStart';
  return textIsContext && out !== '' ? { additionalContext: out } : {};
}

async function launchOf(command: string, place: CommandHookPlace): Promise<{ file: string; args: string[]; env: Record<string, string> }> {
  const { policy, workspaceRoot } = place;
  const env = { ...scrubEnv(place.env), CLAUDE_PROJECT_DIR: workspaceRoot, FORKPOOL_PROJECT_DIR: workspaceRoot };
  const sandboxed = policy.sandbox === 'bwrap' || (policy.sandbox === 'auto' && (await probeBwrap(policy.bwrapPath)).ok);
  if (!sandboxed) return { file: 'sh', args: ['-c', command], env: { ...unsandboxedEnv(env), CLAUDE_PROJECT_DIR: workspaceRoot } };
  const args = bwrapArgs({ workspaceRoot, argv: ['sh', '-c', command], policy, readOnlyInWorkspace: [] });
  // A hook reads the workspace and writes none of it: its bind is read-only.
  const bind = args.findIndex((arg, i) => arg === '--bind' && args[i + 1] === workspaceRoot && args[i + 2] === workspaceRoot);
  if (bind < 0) throw new Error('the sandbox arguments have no workspace bind to make read-only');
  args[bind] = '--ro-bind';
  return { file: policy.bwrapPath, args, env: { ...sandboxEnv(env), CLAUDE_PROJECT_DIR: workspaceRoot } };
}

interface Ran {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  error?: string;
}

function runProcess(
  launch: { file: string; args: string[]; env: Record<string, string> },
  stdin: string,
  cwd: string,
  timeoutMs: number,
  signal: AbortSignal,
): Promise<Ran> {
  return new Promise((resolve) => {
    // Its own process group: a timeout or an abort ends the hook and everything it started.
    const child = spawn(launch.file, launch.args, { cwd, env: launch.env, detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    const keep = (into: Buffer[]) => (chunk: Buffer) => {
      if (into.reduce((n, b) => n + b.length, 0) < OUTPUT_MAX_BYTES) into.push(chunk);
    };
    child.stdout.on('data', keep(out));
    child.stderr.on('data', keep(err));
    let timedOut = false;
    const killGroup = () => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    };
    // Settled at once, not at the pipes' close: a grandchild that left the group may hold them open.
    const timer = setTimeout(() => {
      timedOut = true;
      settle({ code: null, signal: 'SIGKILL' });
    }, timeoutMs);
    const onAbort = () => settle({ code: null, signal: 'SIGKILL' });
    signal.addEventListener('abort', onAbort, { once: true });
    const settle = (ran: Omit<Ran, 'stdout' | 'stderr' | 'timedOut'>) => {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      // The group may outlive its leader (a backgrounded child): it ends with the hook.
      killGroup();
      resolve({ ...ran, timedOut, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') });
    };
    child.on('error', (error) => settle({ code: null, signal: null, error: errorMessage(error) }));
    child.on('close', (code, sig) => settle({ code, signal: sig }));
    // A hook that does not read its stdin closes the pipe: that is not a failure.
    child.stdin.on('error', () => {});
    child.stdin.end(stdin);
  });
}
