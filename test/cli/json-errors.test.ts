/**
 * Under `--json` every error is also one JSON line on stdout (`{"type":"error","code","message",
 * "exitCode"}`, a config error with its issues), for the script that reads stdout; stderr keeps
 * the line a person reads. Without `--json` stdout stays empty.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { useCleanup } from '../helpers/cleanup.js';
import { describeResult, parseJsonLines, runCli } from '../helpers/cli.js';
import { makeWorkspace } from '../helpers/config.js';

const cleanup = useCleanup();

describe('errors under --json', () => {
  it.each([
    { args: ['run', '--json', '--resume', 's-nope', 'hi'], code: 'SESSION_UNKNOWN', message: /no session "s-nope"/ },
    { args: ['fanout', '--json', '--executor', 'nope', 'tasks.jsonl'], code: 'USAGE', message: /--executor <kind>' argument 'nope' is invalid/ },
    { args: ['fanout', '--json', '--resume', 'tasks.jsonl'], code: 'USAGE', message: /^fanout: --resume continues the fan-out kept in a ledger/ },
    { args: ['fanout', '--json', 'missing.jsonl'], code: 'USAGE', message: /^input file "missing\.jsonl" does not exist$/ },
    { args: ['run', '--json', '--no-such-flag', 'hi'], code: 'USAGE', message: /unknown option '--no-such-flag'/ },
  ])(
    '$args.0 $args.2: one error line on stdout, code $code, exit 2',
    async ({ args, code, message }) => {
      const ws = await makeWorkspace(cleanup);
      writeFileSync(path.join(ws, 'tasks.jsonl'), '{"task":"a"}\n');
      const r = await runCli(args, { cwd: ws, timeoutMs: 60_000 });
      expect(r.code, describeResult(r)).toBe(2);
      // Events may come first (the simulator's address); the error is the one error line, the last.
      const lines = parseJsonLines(r.stdout);
      expect(
        lines.filter((line) => line.type === 'error'),
        r.stdout,
      ).toHaveLength(1);
      expect(lines.at(-1)).toMatchObject({ type: 'error', code, exitCode: 2, message: expect.stringMatching(message) });
      // stderr keeps the line a person reads.
      expect(r.stderr.trim()).not.toBe('');
    },
    90_000,
  );

  it('a bad config file: its issues, each naming the field', async () => {
    const ws = await makeWorkspace(cleanup);
    writeFileSync(path.join(ws, 'forkpool.config.json'), JSON.stringify({ maxRetries: -1 }));
    const r = await runCli(['run', '--json', 'hi'], { cwd: ws, timeoutMs: 60_000 });
    expect(r.code, describeResult(r)).toBe(2);
    const [line] = parseJsonLines(r.stdout);
    expect(line).toMatchObject({ type: 'error', code: 'CONFIG_INVALID', issues: [expect.objectContaining({ field: 'maxRetries', received: '-1' })] });
    // Without --json: the same error on stderr only.
    const plain = await runCli(['run', 'hi'], { cwd: ws, timeoutMs: 60_000 });
    expect(plain.code).toBe(2);
    expect(plain.stdout).toBe('');
    expect(plain.stderr).toContain('invalid configuration');
  }, 90_000);
});
