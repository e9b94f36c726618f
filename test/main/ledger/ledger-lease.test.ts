/**
 * One writer per durable ledger scope (issue 18): a second process on a fan-out or a session is
 * refused with LEDGER_BUSY while the first lives; the lease is released on close, taken over at
 * once from an owner on this machine that was SIGKILLed, and from one elsewhere once its
 * heartbeat is older than `ledger.leaseStaleMs`. Real CLI processes, real SQLite files.
 */
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { AgentSession } from '../../../src/main/session/agent-session.js';
import { BackgroundManager } from '../../../src/main/jobs/manager.js';
import { openSqliteLedger } from '../../../src/main/ledger/sqlite-store.js';
import {
  describeResult,
  makeConfig,
  makeWorkspace,
  parseJsonLines,
  runCli,
  spawnCli,
  startSim,
  tempWorkspace,
  useCleanup,
  ledgerFile,
  RawDatabase,
} from '../../helpers/index.js';

function leaseRows(file: string): Array<{ scope: string; pid: number }> {
  const db = new RawDatabase(file);
  try {
    return db.prepare('SELECT scope, pid FROM leases ORDER BY scope').all() as Array<{ scope: string; pid: number }>;
  } finally {
    db.close();
  }
}

describe('one writer per ledger scope', () => {
  it('a second fan-out on a ledger another process runs is refused with LEDGER_BUSY (scope, pid, host, since), exit 2, runs nothing; once the holder is SIGKILLed, --resume takes over at once', async () => {
    const cleanup = useCleanup();
    const sim = await startSim(cleanup, { latencyMs: 150 });
    const workspace = await makeWorkspace(cleanup);
    const dir = tempWorkspace({}, cleanup);
    const file = path.join(dir, 'run.db');
    // A staleness bound of an hour: the takeover below can only come from seeing the holder's process gone.
    const configFile = path.join(dir, 'forkpool.config.json');
    writeFileSync(configFile, JSON.stringify({ ledger: { leaseStaleMs: 3_600_000 } }));
    const tasks = Array.from({ length: 8 }, (_, i) => JSON.stringify({ task: `Where is the tool loop? (lease ${i + 1}.)` })).join('\n');
    const args = [
      'fanout',
      '-',
      '--config',
      configFile,
      '--base-url',
      sim.url,
      '--workspace',
      workspace,
      '--concurrency',
      '1',
      '--ledger',
      file,
      '--no-progress',
    ];
    const first = spawnCli(args, { input: tasks, cleanup });
    await first.waitForStdout((out) => parseJsonLines(out).length >= 1);

    const second = await runCli([...args, '--resume'], { input: tasks, cleanup });
    expect(second.code, describeResult(second)).toBe(2);
    expect(second.stdout).toBe('');
    expect(second.stderr).toContain('[LEDGER_BUSY]');
    expect(second.stderr).toContain(`the ledger scope "fanout" of ${file} is held by pid ${first.child.pid} on host ${os.hostname()} since 20`);
    expect(second.stderr).not.toMatch(/\n\s+at /);

    first.child.kill('SIGKILL');
    expect((await first.exited).signal).toBe('SIGKILL');
    expect(leaseRows(file)).toEqual([{ scope: 'fanout', pid: first.child.pid }]);
    const third = await runCli([...args, '--resume'], { input: tasks, cleanup });
    expect(third.code, describeResult(third)).toBe(0);
    const lines = (parseJsonLines(third.stdout) as Array<{ line: number }>).map((r) => r.line).sort((a, b) => a - b);
    expect(lines).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    // Released on close: nothing is left for the next process to wait out.
    expect(leaseRows(file)).toEqual([]);
  }, 120_000);

  it('a second process on a session is refused with LEDGER_BUSY while the first holds it, and gets it once the first closes', async () => {
    const cleanup = useCleanup();
    const sim = await startSim(cleanup);
    const file = ledgerFile(cleanup);
    const config = makeConfig(sim, await makeWorkspace(cleanup), { maxConcurrent: 1 }, { ledger: { path: file } });
    const first = new AgentSession({ config, sessionId: 's-owned', background: false });
    cleanup.add(() => first.close());
    // Another connection on the file, as another process would open it (the same pid here is alive, so it counts as a live holder).
    expect(() => AgentSession.resume('s-owned', { config, background: false })).toThrow(
      expect.objectContaining({ code: 'LEDGER_BUSY', scope: 's-owned', holder: expect.objectContaining({ pid: process.pid }) }),
    );
    expect(() => new AgentSession({ config, sessionId: 's-owned' })).toThrow(/the ledger scope "s-owned" .* is held by pid/);
    // Other sessions share the file freely: the lease is per scope.
    const other = new AgentSession({ config, sessionId: 's-other', background: false });
    await other.close();
    await first.close();
    expect(leaseRows(file)).toEqual([]);
    const again = AgentSession.resume('s-owned', { config, background: false });
    cleanup.add(() => again.close());
    expect(again.id).toBe('s-owned');
  });

  it('a session or manager whose constructor throws after its claim (an unusable sandbox) leaves no lease held', async () => {
    const cleanup = useCleanup();
    const sim = await startSim(cleanup);
    const file = ledgerFile(cleanup);
    // sandbox "bwrap" at a path with no bubblewrap: a ConfigError, raised after the scope was claimed.
    const broken = makeConfig(
      sim,
      await makeWorkspace(cleanup),
      { maxConcurrent: 1 },
      { ledger: { path: file }, sandbox: 'bwrap', bwrapPath: '/nonexistent/bwrap', tools: ['read_file', 'bash'] },
    );
    expect(() => new AgentSession({ config: broken, sessionId: 's-broken', background: false })).toThrow(expect.objectContaining({ code: 'CONFIG_INVALID' }));
    expect(leaseRows(file)).toEqual([]);
    const ledger = openSqliteLedger(file);
    cleanup.add(() => ledger.close());
    expect(() => new BackgroundManager({ config: broken, store: ledger.jobs('lib-scope') })).toThrow(expect.objectContaining({ code: 'CONFIG_INVALID' }));
    expect(leaseRows(file)).toEqual([]);
  });

  it('a lease held elsewhere is refused while its heartbeat is fresh and taken over once it is older than leaseStaleMs; the holder that lost it is told', async () => {
    const cleanup = useCleanup();
    const file = ledgerFile(cleanup);
    const holder = openSqliteLedger(file, { leaseStaleMs: 1_000 });
    cleanup.add(() => holder.close());
    holder.jobs('mine').claim();
    const contender = openSqliteLedger(file, { leaseStaleMs: 1_000 });
    cleanup.add(() => contender.close());
    // A row as a process on another machine leaves it: its pid cannot be checked from here, only its heartbeat.
    const raw = new RawDatabase(file);
    cleanup.add(() => raw.close());
    const since = Date.now();
    raw
      .prepare("INSERT INTO leases (scope, owner, pid, host, pid_ns, since, heartbeat_at) VALUES ('fan', 'remote', 999999, 'elsewhere', '', ?, ?)")
      .run(since, since);
    expect(() => contender.jobs('fan').claim()).toThrow(
      expect.objectContaining({ code: 'LEDGER_BUSY', scope: 'fan', holder: expect.objectContaining({ host: 'elsewhere', pid: 999999, since }) }),
    );
    raw.prepare("UPDATE leases SET heartbeat_at = ? WHERE scope = 'fan'").run(Date.now() - 1_001);
    contender.jobs('fan').claim();

    const lost = new Promise<Error>((resolve) => {
      const onWarning = (warning: Error & { code?: string }) => {
        if (warning.code !== 'FORKPOOL_LEDGER_LEASE_LOST') return;
        process.off('warning', onWarning);
        resolve(warning);
      };
      process.on('warning', onWarning);
    });
    // The holder hangs past the bound (its heartbeat is set back; nothing runs between these two lines).
    raw.prepare("UPDATE leases SET heartbeat_at = ? WHERE scope = 'mine'").run(Date.now() - 1_001);
    contender.jobs('mine').claim();
    expect(leaseRows(file)).toEqual([
      { scope: 'fan', pid: process.pid },
      { scope: 'mine', pid: process.pid },
    ]);
    // The first holder's next heartbeat finds the row is no longer its own.
    expect((await lost).message).toMatch(/lost its lease on the ledger scope "mine" .* to pid \d+ on host /);
  });
});
