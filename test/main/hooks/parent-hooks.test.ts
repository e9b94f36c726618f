/**
 * The parent's hooks (docs/tools.md "Hooks"): UserPromptSubmit before a person's prompt reaches
 * the model, Stop when the parent would end its turn, and its own tool calls' PreToolUse, with
 * real `sh` hook scripts and library functions, on a scripted sim.
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { AgentSession } from '../../../src/main/session/agent-session.js';
import type { FunctionHooks } from '../../../src/main/hooks/hook-runner.js';
import type { ForkpoolConfigInput } from '../../../src/shared/config.js';
import type { HookInput } from '../../../src/shared/hooks.js';
import type { ScriptStep } from '../../../src/sim/index.js';
import { makeConfig, makeWorkspace, messagesOf, startSim, toolMessagesOf, useCleanup, watchManager } from '../../helpers/index.js';

const cleanups = useCleanup();

function script(body: string): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'fp-parent-hooks-'));
  cleanups.add(() => rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'hook.sh');
  writeFileSync(file, `#!/bin/sh\n${body}\n`);
  chmodSync(file, 0o755);
  return file;
}

async function session(steps: ScriptStep[], hooks: ForkpoolConfigInput['hooks'], functions?: FunctionHooks) {
  const root = await makeWorkspace(cleanups);
  const sim = await startSim(cleanups, { script: steps });
  const config = makeConfig(sim, root, {}, { sandbox: 'none', hooks, background: { maxDepth: 0 } });
  const s = new AgentSession({ config, closeExecutor: true, ...(functions ? { hooks: functions } : {}) });
  watchManager(s.manager);
  cleanups.add(() => s.close({ timeoutMs: 2_000 }));
  return { sim, s };
}

describe('parent hooks', () => {
  it('UserPromptSubmit exit 2 blocks the prompt: no model call, the turn says why', async () => {
    const hook = script('grep -q "rm -rf" && { echo "destructive requests are refused" >&2; exit 2; }; exit 0');
    const { sim, s } = await session([{ content: 'fine' }], { UserPromptSubmit: [{ command: hook }] });
    const blocked = await s.submit('please rm -rf the build');
    expect(blocked.stopReason).toBe('aborted');
    expect(blocked.error?.code).toBe('HOOK_BLOCKED');
    expect(blocked.answer).toContain('destructive requests are refused');
    expect(sim.requests).toHaveLength(0);
    // The next prompt goes through, and the blocked one is not in its history.
    const ok = await s.submit('say hello');
    expect(ok.answer).toBe('fine');
    expect(JSON.stringify(messagesOf(sim.requests[0]!))).not.toContain('rm -rf');
  });

  it('UserPromptSubmit text on stdout is added to the prompt as context', async () => {
    const hook = script('cat > /dev/null; echo "ticket: FP-42"');
    const { sim, s } = await session([{ content: 'noted' }], { UserPromptSubmit: [{ command: hook }] });
    await s.submit('what is the ticket?');
    expect(String(messagesOf(sim.requests[0]!).at(-1)?.content)).toMatch(/what is the ticket\?[\s\S]*\[UserPromptSubmit hook\] ticket: FP-42/);
  });

  it('Stop sends the answer back once: one more run of the loop, then the turn ends', async () => {
    const seen: HookInput[] = [];
    const functions: FunctionHooks = {
      Stop: [
        (input) => {
          seen.push(input);
          return { decision: 'block', reason: 'run the tests before you stop' };
        },
      ],
    };
    const { sim, s } = await session([{ content: 'all done' }, { content: 'tests pass, done' }], {}, functions);
    const result = await s.submit('fix it');
    sim.assertScriptDone();
    expect(result.answer).toBe('tests pass, done');
    expect(String(messagesOf(sim.requests[1]!).at(-1)?.content)).toContain('run the tests before you stop');
    expect(seen.map((i) => [i.hook_event_name, i.stop_hook_active, i.last_assistant_message])).toEqual([
      ['Stop', false, 'all done'],
      ['Stop', true, 'tests pass, done'],
    ]);
  });

  it("the parent's own tool call goes through PreToolUse (a command hook)", async () => {
    const hook = script('cat > /dev/null; echo "no files for the parent" >&2; exit 2');
    const call = { name: 'read_file', arguments: JSON.stringify({ path: 'README.md' }), id: 'p1' };
    const { sim, s } = await session([{ toolCalls: [call] }, { content: 'ok' }], { PreToolUse: [{ matcher: 'read_file', command: hook }] });
    await s.submit('read the readme');
    expect(toolMessagesOf(sim.requests[1]?.body)).toEqual(['Error: blocked by a PreToolUse hook: no files for the parent']);
  });
});
