/**
 * Hooks in Claude Code's contract for background jobs in real worker threads, on a scripted
 * sim, with real `sh` hook scripts: a job's PreToolUse/PostToolUse/SubagentStart/SubagentStop
 * cross its thread's link and run on the main thread (docs/tools.md "Hooks").
 */
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { BackgroundManager } from '../../../src/main/jobs/manager.js';
import type { FunctionHooks } from '../../../src/main/hooks/hook-runner.js';
import type { CommandHook, HookInput } from '../../../src/shared/hooks.js';
import type { LoopEvent } from '../../../src/shared/loop-events.js';
import type { ScriptStep } from '../../../src/sim/index.js';
import { ended, makeConfig, makeWorkspace, messagesOf, startSim, toolMessagesOf, useCleanup, watchManager } from '../../helpers/index.js';

const cleanups = useCleanup();
const call = (name: string, args: Record<string, unknown>, id: string) => ({ name, arguments: JSON.stringify(args), id });
const READ_README = [{ toolCalls: [call('read_file', { path: 'README.md' }, 'r1')] }, { content: 'done reading' }];

/** A folder outside the workspace for hook scripts and their logs. */
function hookDir(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'fp-hooks-'));
  cleanups.add(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** An executable `sh` script in `dir`. */
function script(dir: string, name: string, body: string): string {
  const file = path.join(dir, name);
  writeFileSync(file, `#!/bin/sh\n${body}\n`);
  chmodSync(file, 0o755);
  return file;
}

/** Each JSON line a logging hook wrote (its stdin, one event a line). */
function logged(file: string): HookInput[] {
  return existsSync(file)
    ? readFileSync(file, 'utf8')
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as HookInput)
    : [];
}

/** The process is gone, or a zombie waiting for its reaper (killed either way). */
function isGone(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.startsWith('Z') === true;
  } catch {
    return true;
  }
}

async function setUp(
  script: ScriptStep[],
  hooks: Partial<Record<string, Array<Partial<CommandHook>>>>,
  options: { sandbox?: 'none' | 'bwrap'; functions?: FunctionHooks } = {},
) {
  const root = await makeWorkspace(cleanups);
  const sim = await startSim(cleanups, { script });
  const config = makeConfig(sim, root, { maxConcurrent: 1 }, { tools: ['read_file'], sandbox: options.sandbox ?? 'none', hooks: hooks });
  const manager = watchManager(new BackgroundManager({ config, ...(options.functions ? { hooks: options.functions } : {}) }));
  cleanups.add(() => manager.close({ timeoutMs: 2_000 }));
  const events: LoopEvent[] = [];
  manager.on('progress', ({ event }) => events.push(event));
  return { sim, manager, root, events };
}

describe('job hooks (command hooks, real threads)', () => {
  it('PreToolUse exit 2 blocks the call: the model reads stderr as a tool error; the hook got the event as JSON', async () => {
    const dir = hookDir();
    const log = path.join(dir, 'pre.log');
    const hook = script(dir, 'pre.sh', `cat >> ${log}; echo >> ${log}; echo "reading is not allowed here" >&2; exit 2`);
    const { sim, manager, root } = await setUp(READ_README, { PreToolUse: [{ matcher: 'read_file|write_file', command: hook }] });
    const job = manager.spawn({ task: 'read the readme', label: 'pre' });
    const record = await ended(manager, job.id);
    sim.assertScriptDone();
    expect(record.status).toBe('ok');
    expect(toolMessagesOf(sim.requests[1]?.body)).toEqual(['Error: blocked by a PreToolUse hook: reading is not allowed here']);
    const [input] = logged(log);
    expect(input).toMatchObject({
      hook_event_name: 'PreToolUse',
      tool_name: 'read_file',
      tool_input: { path: 'README.md' },
      tool_use_id: 'r1',
      job_id: job.id,
      cwd: root,
    });
    expect(typeof input?.session_id).toBe('string');
  });

  it("PreToolUse runs before the permission check: an ungranted gated call is answered with the hook's reason", async () => {
    const dir = hookDir();
    const hook = script(dir, 'pre.sh', 'cat > /dev/null; echo "no shell for jobs" >&2; exit 2');
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups, { script: [{ toolCalls: [call('bash', { command: 'ls' }, 'b1')] }, { content: 'ok' }] });
    const config = makeConfig(sim, root, {}, { tools: ['bash'], sandbox: 'none', hooks: { PreToolUse: [{ matcher: 'bash', command: hook }] } });
    const manager = watchManager(new BackgroundManager({ config }));
    cleanups.add(() => manager.close({ timeoutMs: 2_000 }));
    await ended(manager, manager.spawn({ task: 'list files', label: 'gate' }).id);
    expect(toolMessagesOf(sim.requests[1]?.body)).toEqual(['Error: blocked by a PreToolUse hook: no shell for jobs']);
  });

  it('a matcher that does not match: the hook does not run', async () => {
    const dir = hookDir();
    const hook = script(dir, 'pre.sh', 'echo "never" >&2; exit 2');
    const { sim, manager } = await setUp(READ_README, { PreToolUse: [{ matcher: 'bash|write_.*', command: hook }] });
    await ended(manager, manager.spawn({ task: 'read the readme', label: 'miss' }).id);
    expect(toolMessagesOf(sim.requests[1]?.body)[0]).toContain('retry backoff lives in src/retry.ts');
  });

  it('PreToolUse updatedInput rewrites the call and additionalContext reaches the model', async () => {
    const dir = hookDir();
    const answer = JSON.stringify({
      hookSpecificOutput: { hookEventName: 'PreToolUse', updatedInput: { path: 'src/retry.ts' }, additionalContext: 'mind the jitter' },
    });
    const hook = script(dir, 'pre.sh', `cat > /dev/null; echo '${answer}'`);
    const { sim, manager } = await setUp(READ_README, { PreToolUse: [{ matcher: '*', command: hook }] });
    await ended(manager, manager.spawn({ task: 'read the readme', label: 'rewrite' }).id);
    const [result] = toolMessagesOf(sim.requests[1]?.body);
    expect(result).toContain('retryBackoff');
    expect(result).not.toContain('demo workspace');
    expect(result).toContain('[PreToolUse hook] mind the jitter');
  });

  it('PostToolUse sees the tool response and its context is added to it', async () => {
    const dir = hookDir();
    const log = path.join(dir, 'post.log');
    const hook = script(dir, 'post.sh', `cat >> ${log}; echo >> ${log}; echo '{"additionalContext":"checked by policy"}'`);
    const { sim, manager } = await setUp(READ_README, { PostToolUse: [{ matcher: 'read_file', command: hook }] });
    await ended(manager, manager.spawn({ task: 'read the readme', label: 'post' }).id);
    const [input] = logged(log);
    expect(input).toMatchObject({ hook_event_name: 'PostToolUse', tool_name: 'read_file', tool_input: { path: 'README.md' } });
    expect(String(input?.tool_response)).toContain('retry backoff lives in src/retry.ts');
    expect(toolMessagesOf(sim.requests[1]?.body)[0]).toMatch(/retry backoff lives[\s\S]*\[PostToolUse hook\] checked by policy$/);
  });

  it('SubagentStart adds context; SubagentStop rejects the answer once: one more turn, then it ends', async () => {
    const dir = hookDir();
    const log = path.join(dir, 'stop.log');
    const start = script(dir, 'start.sh', 'cat > /dev/null; echo "house rule: cite files"');
    const stop = script(dir, 'stop.sh', `cat >> ${log}; echo >> ${log}; echo "cite the file you used" >&2; exit 2`);
    const { sim, manager } = await setUp([{ content: 'first answer' }, { content: 'second answer, see README.md' }], {
      SubagentStart: [{ command: start }],
      SubagentStop: [{ command: stop }],
    });
    const job = manager.spawn({ task: 'say something', label: 'stop' });
    const record = await ended(manager, job.id);
    sim.assertScriptDone();
    expect(record.status).toBe('ok');
    expect(record.resultText ?? '').toContain('second answer');
    const first = messagesOf(sim.requests[0]!);
    expect(String(first.at(-1)?.content)).toContain('[SubagentStart hook] house rule: cite files');
    const second = messagesOf(sim.requests[1]!);
    expect(String(second.at(-1)?.content)).toContain('cite the file you used');
    // Asked twice: the second time it knows it already sent the job back, and cannot again.
    expect(logged(log).map((i) => [i.stop_hook_active, i.last_assistant_message, i.agent_id])).toEqual([
      [false, 'first answer', job.id],
      [true, 'second answer, see README.md', job.id],
    ]);
  });

  it('a hook that hangs is killed (its process group) at its timeout; the call goes on and the problem is reported', async () => {
    const dir = hookDir();
    const pidFile = path.join(dir, 'child.pid');
    const hook = script(dir, 'hang.sh', `sleep 300 & echo $! > ${pidFile}; wait`);
    const { sim, manager, events } = await setUp(READ_README, { PreToolUse: [{ command: hook, timeoutMs: 500 }] });
    const record = await ended(manager, manager.spawn({ task: 'read the readme', label: 'hang' }).id);
    expect(record.status).toBe('ok');
    expect(toolMessagesOf(sim.requests[1]?.body)[0]).toContain('retry backoff lives in src/retry.ts');
    expect(events.filter((e) => e.type === 'hook_error').map((e) => (e as { message: string }).message)).toEqual([
      expect.stringMatching(/timed out after 500 ms and was killed/),
    ]);
    const child = Number(readFileSync(pidFile, 'utf8'));
    expect(isGone(child)).toBe(true);
  });

  it('a hook that crashes is reported and does not stop the job', async () => {
    const dir = hookDir();
    const hook = script(dir, 'crash.sh', 'echo "segfault in policy engine" >&2; exit 139');
    const { sim, manager, events } = await setUp(READ_README, { PostToolUse: [{ command: hook }] });
    const record = await ended(manager, manager.spawn({ task: 'read the readme', label: 'crash' }).id);
    expect(record.status).toBe('ok');
    expect(toolMessagesOf(sim.requests[1]?.body)[0]).toContain('retry backoff lives in src/retry.ts');
    const problems = events.filter((e) => e.type === 'hook_error');
    expect(problems).toEqual([{ type: 'hook_error', event: 'PostToolUse', message: expect.stringMatching(/exited with code 139: segfault in policy engine/) }]);
  });

  it('in bubblewrap a hook reads the workspace but cannot write it, and sees no secret', async () => {
    const root = await makeWorkspace(cleanups);
    // In the workspace: the sandbox shows only the workspace and system folders.
    const hook = script(
      root,
      'check-hook.sh',
      [
        'cat > /dev/null',
        'if touch "$CLAUDE_PROJECT_DIR/pwned" 2>/dev/null; then w=wrote; else w=read-only; fi',
        'if grep -q retry "$CLAUDE_PROJECT_DIR/README.md"; then r=readable; else r=unreadable; fi',
        'case "$(env)" in *sk-hook-secret*) s=leaked;; *) s=clean;; esac',
        'echo "{\\"additionalContext\\":\\"$w $r $s\\"}"',
      ].join('\n'),
    );
    process.env.HOOK_TEST_API_KEY = 'sk-hook-secret-1234567';
    cleanups.add(() => void delete process.env.HOOK_TEST_API_KEY);
    const sim = await startSim(cleanups, { script: READ_README });
    const config = makeConfig(
      sim,
      root,
      {},
      { tools: ['read_file'], sandbox: 'bwrap', hooks: { PreToolUse: [{ matcher: '', command: hook, timeoutMs: 30_000 }] } },
    );
    const manager = watchManager(new BackgroundManager({ config }));
    cleanups.add(() => manager.close({ timeoutMs: 2_000 }));
    await ended(manager, manager.spawn({ task: 'read the readme', label: 'bwrap' }).id);
    expect(toolMessagesOf(sim.requests[1]?.body)[0]).toContain('[PreToolUse hook] read-only readable clean');
    expect(existsSync(path.join(root, 'pwned'))).toBe(false);
  });
});

describe('job hooks (library functions on the main thread)', () => {
  it("a job's PreToolUse reaches the function over the link; its block is the tool error", async () => {
    const seen: HookInput[] = [];
    const functions: FunctionHooks = {
      PreToolUse: [
        async (input) => {
          seen.push(input);
          return { decision: 'block', reason: 'the function says no' };
        },
      ],
      PostToolUse: [() => ({ additionalContext: 'never: the call was blocked' })],
    };
    const { sim, manager } = await setUp(READ_README, {}, { functions });
    const job = manager.spawn({ task: 'read the readme', label: 'fn' });
    await ended(manager, job.id);
    expect(toolMessagesOf(sim.requests[1]?.body)).toEqual(['Error: blocked by a PreToolUse hook: the function says no']);
    expect(seen).toEqual([
      expect.objectContaining({ hook_event_name: 'PreToolUse', tool_name: 'read_file', job_id: job.id, tool_input: { path: 'README.md' } }),
    ]);
  });
});
