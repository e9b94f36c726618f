/**
 * Issue 38 (A36): the parent's role on the CLI — `--role primary|escalation` on run, chat and
 * serve, and `role` in the config. The role names the usage buckets: the parent's own `<role>`,
 * its jobs' `<role>:subagent`, and every job record's `role`.
 */
import { describe, expect, it } from 'vitest';
import { useCleanup } from '../helpers/cleanup.js';
import { describeResult, parseJsonLines, runCli, requireBuiltCli } from '../helpers/cli.js';
import { tempWorkspace } from '../helpers/config.js';

const cleanup = useCleanup();
const TWO_QUESTIONS = 'Answer these:\n1. Where is the tool loop implemented?\n2. How are API keys redacted?';

requireBuiltCli();

const workspace = (files?: Record<string, string>) => tempWorkspace(files, cleanup);

/** The `usage` event's buckets and the spawned jobs' roles of one `run --json`. */
async function runRoles(args: string[], files?: Record<string, string>) {
  const r = await runCli(['run', '--json', '--sim-latency', '0', ...args, TWO_QUESTIONS], { cwd: workspace(files), cleanup });
  expect(r.code, describeResult(r)).toBe(0);
  const events = parseJsonLines(r.stdout);
  const usage = events.find((e) => e.type === 'usage') as { byBucket: Record<string, unknown> } | undefined;
  return Object.keys(usage?.byBucket ?? {}).sort();
}

describe('--role and config role (A36)', () => {
  it('run --role escalation books the parent under escalation and its jobs under escalation:subagent', async () => {
    expect(await runRoles(['--role', 'escalation'])).toEqual(['escalation', 'escalation:subagent']);
  });

  it('run without --role keeps primary', async () => {
    expect(await runRoles([])).toEqual(['primary', 'primary:subagent']);
  });

  it('"role" in the config file sets it, and --role wins over the file', async () => {
    const file = { 'forkpool.config.json': JSON.stringify({ role: 'escalation' }) };
    expect(await runRoles([], file)).toEqual(['escalation', 'escalation:subagent']);
    expect(await runRoles(['--role', 'primary'], file)).toEqual(['primary', 'primary:subagent']);
  });

  it('a bad role exits 2 naming the flag or the config field', async () => {
    const flag = await runCli(['run', '--role', 'boss', 'hi'], { cwd: workspace(), cleanup });
    expect(flag.code, describeResult(flag)).toBe(2);
    expect(flag.stderr).toMatch(/--role/);
    const file = await runCli(['run', 'hi'], { cwd: workspace({ 'forkpool.config.json': JSON.stringify({ role: 'boss' }) }), cleanup });
    expect(file.code, describeResult(file)).toBe(2);
    expect(file.stderr).toMatch(/role/);
    expect(file.stderr).toContain('boss');
  });

  it('chat and serve take --role', async () => {
    for (const command of ['chat', 'serve']) {
      const r = await runCli([command, '--role', 'boss'], { cwd: workspace(), cleanup });
      expect(r.code, describeResult(r)).toBe(2);
      expect(r.stderr).toMatch(/--role.*boss|boss.*--role/s);
    }
  });
});
