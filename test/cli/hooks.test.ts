/**
 * Hooks (docs/tools.md "Hooks") from the built CLI as a user runs it: `forkpool run --config F`
 * and `forkpool fanout` with `hooks` in the config, real `sh` hook scripts, the loopback sim
 * answering as a plausible agent. The library and pool cases are in test/main/hooks/.
 */
import { chmodSync, existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { useCleanup } from '../helpers/cleanup.js';
import { describeResult, jsonl, parseJsonLines, requireBuiltCli, runCli } from '../helpers/cli.js';
import { tempWorkspace } from '../helpers/config.js';
import { toolMessagesOf } from '../helpers/requests.js';
import { startSim } from '../helpers/sim.js';

const cleanup = useCleanup();
requireBuiltCli();

const TWO_QUESTIONS = 'Answer these:\n1. Where is the tool loop implemented?\n2. How are API keys redacted?';
const REASON = 'tools are off for jobs here';

/** An executable `sh` script in the workspace; returns its absolute path. */
function script(cwd: string, name: string, body: string): string {
  const file = path.join(cwd, name);
  writeFileSync(file, `#!/bin/sh\n${body}\n`);
  chmodSync(file, 0o755);
  return file;
}

/**
 * Shell that keeps the event on stdin under `log`: one file per hook process (`$$`), as hooks
 * that match run at once and their appends to one file could interleave.
 */
const keep = (cwd: string, log: string) => `mkdir -p ${JSON.stringify(path.join(cwd, log))}; cat > ${JSON.stringify(path.join(cwd, log))}/$$.json`;

/** A hook that keeps the event it read under `log`. */
const logging = (cwd: string, name: string, log: string) => script(cwd, name, keep(cwd, log));

/** The events the hooks kept under `log`. */
const logged = (cwd: string, log: string) => {
  const dir = path.join(cwd, log);
  return existsSync(dir) ? readdirSync(dir).map((f) => JSON.parse(readFileSync(path.join(dir, f), 'utf8')) as Record<string, unknown>) : [];
};

/** Every tool result the model read, over all the requests the sim got. */
const toolResults = (sim: Awaited<ReturnType<typeof startSim>>) => sim.requests.flatMap((r) => toolMessagesOf(r.body as never));

describe('hooks from the CLI', () => {
  it("run --config: a job's PreToolUse exit 2 blocks its tool call (the model reads the reason), SubagentStop sees each job, the parent's UserPromptSubmit runs", async () => {
    const cwd = tempWorkspace({ 'src/loop.ts': 'export function toolLoop() {}\n' }, cleanup);
    const sim = await startSim(cleanup, {});
    // Blocks the jobs' calls only (their event carries job_id): the parent still spawns its jobs.
    const pre = script(
      cwd,
      'pre.sh',
      `input=$(cat); printf '%s' "$input" | { ${keep(cwd, 'pre.log')}; }\ncase "$input" in *'"job_id"'*) echo "${REASON}" >&2; exit 2 ;; esac\nexit 0`,
    );
    const hooks = {
      PreToolUse: [{ matcher: '*', command: pre }],
      SubagentStop: [{ command: logging(cwd, 'stop.sh', 'stop.log') }],
      UserPromptSubmit: [{ command: logging(cwd, 'prompt.sh', 'prompt.log') }],
    };
    // No sandbox: the hooks write their logs into the workspace (read-only to them under bubblewrap).
    writeFileSync(path.join(cwd, 'hooks.json'), JSON.stringify({ sandbox: 'none', hooks }));
    const r = await runCli(['run', '--json', '--config', 'hooks.json', '--base-url', sim.url, TWO_QUESTIONS], {
      cwd,
      cleanup,
      env: { OPENAI_API_KEY: 'test-key' },
    });
    expect(r.code, describeResult(r)).toBe(0);
    const jobIds = parseJsonLines(r.stdout)
      .filter((e) => e.type === 'job_done')
      .map((e) => e.id);
    expect(jobIds.length, describeResult(r)).toBeGreaterThan(0);
    // Each job's tool calls reached the hook, and its model read the block as a tool error.
    const blockedJobs = new Set(
      logged(cwd, 'pre.log')
        .filter((e) => e.job_id !== undefined)
        .map((e) => e.job_id),
    );
    expect(blockedJobs).toEqual(new Set(jobIds));
    expect(toolResults(sim)).toContainEqual(expect.stringContaining(`blocked by a PreToolUse hook: ${REASON}`));
    expect(
      new Set(
        logged(cwd, 'stop.log')
          .map((e) => [e.hook_event_name, e.job_id])
          .map(String),
      ),
    ).toEqual(new Set(jobIds.map((id) => `SubagentStop,${String(id)}`)));
    expect(logged(cwd, 'prompt.log')).toEqual([expect.objectContaining({ hook_event_name: 'UserPromptSubmit', prompt: TWO_QUESTIONS })]);
    expect(logged(cwd, 'prompt.log')[0]?.job_id).toBeUndefined();
  });

  it('fanout: a PreToolUse hook in the config applies to each job', async () => {
    const cwd = tempWorkspace({ 'a.txt': 'alpha\n' }, cleanup);
    const sim = await startSim(cleanup, {});
    const pre = script(cwd, 'pre.sh', `${keep(cwd, 'pre.log')}; echo "${REASON}" >&2; exit 2`);
    writeFileSync(path.join(cwd, 'forkpool.config.json'), JSON.stringify({ sandbox: 'none', hooks: { PreToolUse: [{ matcher: '*', command: pre }] } }));
    const tasks = [
      { task: 'find a.txt', label: 'one' },
      { task: 'find a.txt again', label: 'two' },
    ];
    const r = await runCli(['fanout', '--no-progress', '--base-url', sim.url, '-'], { cwd, input: jsonl(tasks), cleanup, env: { OPENAI_API_KEY: 'test-key' } });
    expect(r.code, describeResult(r)).toBe(0);
    const ids = parseJsonLines(r.stdout).map((line) => line.id);
    expect(ids).toHaveLength(2);
    expect(new Set(logged(cwd, 'pre.log').map((e) => e.job_id))).toEqual(new Set(ids));
    expect(toolResults(sim)).toContainEqual(expect.stringContaining(`blocked by a PreToolUse hook: ${REASON}`));
  });
});
