/**
 * `forkpool run` exits 1 when the parent's turn ends without a whole answer (docs/cli.md "Exit
 * codes"): a reply cut at the token limit (`truncated`), the turn's iteration cap
 * (`budget_exceeded`, ITERATION_LIMIT), as it does for a failed turn; stderr says which and why.
 * The built CLI in a child process (build first), on a scripted simulator.
 */
import { describe, expect, it } from 'vitest';
import { cleanupOf } from '../helpers/cleanup.js';
import { describeResult, runCli } from '../helpers/cli.js';
import { makeWorkspace } from '../helpers/config.js';
import { startSim } from '../helpers/sim.js';

const CLI_TIMEOUT_MS = 90_000;

describe.concurrent('run: a turn without a whole answer', () => {
  it(
    'a reply cut at the token limit twice: the cut answer is printed, stderr says the turn was truncated, exit 1',
    async (context) => {
      const cleanup = cleanupOf(context);
      const sim = await startSim(cleanup, {
        script: [
          { content: 'The start of a long answer', finishReason: 'length' },
          { content: ' that was cut again', finishReason: 'length' },
        ],
      });
      const r = await runCli(['run', '--base-url', sim.url, 'hello'], { cwd: await makeWorkspace(cleanup), timeoutMs: 60_000 });
      expect(r.code, describeResult(r)).toBe(1);
      expect(r.stdout).toContain('The start of a long answer that was cut again');
      expect(r.stderr).toContain("turn 1 ended with truncated: the model's reply was cut at the token limit");
    },
    CLI_TIMEOUT_MS,
  );

  it(
    'the iteration cap reached (--max-iterations 1, the reply a tool call): stderr names the cap, exit 1',
    async (context) => {
      const cleanup = cleanupOf(context);
      const sim = await startSim(cleanup, { script: [{ toolCalls: [{ name: 'list_dir', arguments: { path: '.' } }] }] });
      const r = await runCli(['run', '--base-url', sim.url, '--max-iterations', '1', 'hello'], { cwd: await makeWorkspace(cleanup), timeoutMs: 60_000 });
      expect(r.code, describeResult(r)).toBe(1);
      expect(r.stderr).toContain('turn 1 ended with budget_exceeded: iteration cap of 1 model calls reached');
      expect(sim.requests).toHaveLength(1);
    },
    CLI_TIMEOUT_MS,
  );

  it(
    'a whole answer exits 0 and says nothing of its turn',
    async (context) => {
      const cleanup = cleanupOf(context);
      const sim = await startSim(cleanup, { script: [{ content: 'All done.' }] });
      const r = await runCli(['run', '--base-url', sim.url, 'hello'], { cwd: await makeWorkspace(cleanup), timeoutMs: 60_000 });
      expect(r.code, describeResult(r)).toBe(0);
      expect(r.stdout).toContain('All done.');
      expect(r.stderr).not.toContain('turn 1 ended');
    },
    CLI_TIMEOUT_MS,
  );
});
