/**
 * `--resume` with a session id the ledger does not hold: one line naming it and exit 2 (a usage
 * error the person fixes by picking another id or ledger), for `run` and `chat`, with a durable
 * ledger and without one; nothing waits on the simulator it started.
 */
import { describe, expect, it } from 'vitest';
import { useCleanup } from '../helpers/cleanup.js';
import { describeResult, runCli } from '../helpers/cli.js';
import { makeWorkspace } from '../helpers/config.js';
import { ledgerFile } from '../helpers/ledger.js';

const cleanup = useCleanup();

describe.each(['run', 'chat'])('forkpool %s --resume UNKNOWN', (command) => {
  it.each([false, true])(
    'says which session is unknown and exits 2 (durable ledger: %s)',
    async (durable) => {
      const ws = await makeWorkspace(cleanup);
      const ledger = durable ? ['--ledger', ledgerFile(cleanup, 'resume-unknown.db')] : [];
      const args = [command, ...ledger, '--resume', 's-does-not-exist', ...(command === 'run' ? ['hello'] : [])];
      const r = await runCli(args, { cwd: ws, input: '', timeoutMs: 60_000 });
      expect(r.code, describeResult(r)).toBe(2);
      expect(r.stderr).toMatch(/no session "s-does-not-exist" in .*\[SESSION_UNKNOWN\]/);
    },
    90_000,
  );
});
