/**
 * Issue 18, "the host must not die", through the built CLI (build first): a configuration
 * error found only after the built-in simulator started (here: a `--ledger` file that is not a
 * ledger) ends `run`, `fanout` and `serve` with exit 2 and the field named, instead of
 * printing "invalid configuration" and waiting forever on the simulator's socket.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { openSqliteLedger } from '../../src/main/ledger/sqlite-store.js';
import { useCleanup } from '../helpers/cleanup.js';
import { describeResult, runCli, requireBuiltCli } from '../helpers/cli.js';
import { tempWorkspace } from '../helpers/config.js';

const cleanup = useCleanup();

requireBuiltCli();

/** Garbage bytes: SQLite refuses the file at open ("file is not a database"). */
function garbageLedger(dir: string): string {
  const file = path.join(dir, 'garbage.db');
  writeFileSync(file, randomBytes(8192));
  return file;
}

/** A real ledger whose first page is intact and the rest garbage: open passes, the first read fails (SQLITE_CORRUPT). */
function corruptLedger(dir: string): string {
  const file = path.join(dir, 'corrupt.db');
  const store = openSqliteLedger(file);
  const jobs = store.jobs('fanout');
  for (let i = 1; i <= 20; i++) jobs.putSource(`bg-${i}`, `line:${i}: ${'x'.repeat(400)}`);
  store.close();
  const bytes = readFileSync(file);
  expect(statSync(file).size).toBeGreaterThan(8192);
  randomBytes(bytes.length - 4096).copy(bytes, 4096);
  writeFileSync(file, bytes);
  return file;
}

const COMMANDS: Array<[string, (tasks: string) => string[]]> = [
  ['run', () => ['run', 'hello']],
  ['fanout', (tasks) => ['fanout', tasks]],
  ['serve', () => ['serve', '--port', '0']],
];

describe('a config error after the simulator started', () => {
  it.each(COMMANDS.flatMap(([name, args]) => [['garbage bytes', name, args] as const, ['a corrupt page', name, args] as const]))(
    '%s as --ledger: `%s` exits 2 naming ledger.path, the simulator stopped (no hang)',
    async (kind, _name, args) => {
      const cwd = tempWorkspace({ 'a.txt': 'alpha\n', 'tasks.jsonl': '{"task":"find a.txt"}\n' }, cleanup);
      const ledgers = tempWorkspace({}, cleanup);
      const ledger = kind === 'garbage bytes' ? garbageLedger(ledgers) : corruptLedger(ledgers);
      // The safety net is the hang this test is about: a run that needs it fails on `timedOut`.
      const r = await runCli([...args(path.join(cwd, 'tasks.jsonl')), '--ledger', ledger], { cwd, cleanup, timeoutMs: 20_000 });
      expect(r.timedOut, describeResult(r)).toBe(false);
      expect(r.code, describeResult(r)).toBe(2);
      expect(r.stderr).toContain('built-in simulated model');
      expect(r.stderr).toContain('invalid configuration');
      expect(r.stderr).toContain('"ledger.path"');
      // One clear line, not a stack trace.
      expect(r.stderr).not.toMatch(/\n\s+at /);
    },
  );
});
