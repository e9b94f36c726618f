/**
 * `fanout --resume` checks the ledger it reads (issue 18): a deleted row, an edited row, a row
 * that is not JSON or fails the record check, a job tied to no line, an input line that changed:
 * each is said on stderr with what was found, the line runs again (or, for a changed input, is
 * reported), and the run never exits 0 over it. Real CLI, real SQLite file edited on disk.
 */
import { describe, expect, it } from 'vitest';
import { AgentSession } from '../../../src/main/session/agent-session.js';
import { DeliveryLedger } from '../../../src/main/ledger/ledger.js';
import { openSqliteLedger } from '../../../src/main/ledger/sqlite-store.js';
import {
  describeResult,
  makeConfig,
  makeWorkspace,
  parseJsonLines,
  runCli,
  startSim,
  useCleanup,
  runsOf,
  ledgerFile,
  RawDatabase,
} from '../../helpers/index.js';

const task = (i: number) => `Where is the tool loop? (checked ${i}.)`;

describe('fanout --resume checks what it reads', () => {
  it('a deleted, edited, non-JSON or invalid row and a job tied to no line are reported with what was found and run again, exit 1; the next resume finds a clean ledger; a changed input line is reported', async () => {
    const cleanup = useCleanup();
    const sim = await startSim(cleanup, { latencyMs: 5 });
    const workspace = await makeWorkspace(cleanup);
    const file = ledgerFile(cleanup, 'run.db');
    const input = [1, 2, 3, 4, 5, 6].map((i) => JSON.stringify({ task: task(i) })).join('\n');
    const args = ['fanout', '-', '--base-url', sim.url, '--workspace', workspace, '--concurrency', '2', '--ledger', file, '--no-progress'];
    const first = await runCli(args, { input, cleanup });
    expect(first.code, describeResult(first)).toBe(0);

    const db = new RawDatabase(file);
    const idOf = new Map(
      (db.prepare('SELECT id, source FROM job_sources').all() as Array<{ id: string; source: string }>).map((r) => [Number(r.source.split(':')[1]), r.id]),
    );
    db.prepare('DELETE FROM jobs WHERE id = ?').run(idOf.get(2));
    db.prepare("UPDATE jobs SET record = json_set(record, '$.task', 'a forged task') WHERE id = ?").run(idOf.get(3));
    db.prepare('UPDATE jobs SET record = \'{"id": broken\' WHERE id = ?').run(idOf.get(4));
    db.prepare("UPDATE jobs SET record = json_set(record, '$.state', 'bogus') WHERE id = ?").run(idOf.get(5));
    db.prepare('DELETE FROM job_sources WHERE id = ?').run(idOf.get(6));
    db.close();

    const resumed = await runCli([...args, '--resume'], { input, cleanup });
    expect(resumed.code, describeResult(resumed)).toBe(1);
    const notes = resumed.stderr.split('\n').filter((l) => l.startsWith('forkpool fanout: ledger: '));
    expect(notes).toEqual([
      `forkpool fanout: ledger: line 2: job ${idOf.get(2)} is missing from the ledger (its row was deleted); not trusted: dropped, and its input line runs again`,
      `forkpool fanout: ledger: line 3: job ${idOf.get(3)} does not match the task stored with its line (its row was edited); not trusted: dropped, and its input line runs again`,
      expect.stringMatching(
        new RegExp(
          `^forkpool fanout: ledger: line 4: job ${idOf.get(4)} failed its check: its record is not JSON: found "\\{\\\\"id\\\\": broken"; not trusted`,
        ),
      ),
      expect.stringMatching(
        new RegExp(`^forkpool fanout: ledger: line 5: job ${idOf.get(5)} failed its check: field "state": .*; found "\\\\"bogus\\\\""; not trusted`),
      ),
      `forkpool fanout: ledger: job ${idOf.get(6)} is tied to no input line (its line row was deleted); not trusted: dropped, and its input line runs again`,
    ]);
    expect(resumed.stderr).toMatch(/^fanout: .*, 5 ledger problem\(s\)$/m);
    const out = parseJsonLines(resumed.stdout) as Array<{ line: number; status: string; fromLedger?: boolean }>;
    expect(out.map((r) => r.line).sort()).toEqual([1, 2, 3, 4, 5, 6]);
    expect(out.filter((r) => r.fromLedger).map((r) => r.line)).toEqual([1]);
    expect(out.every((r) => r.status === 'ok' || r.status === 'partial')).toBe(true);
    expect([1, 2, 3, 4, 5, 6].map((i) => runsOf(sim, task(i)))).toEqual([1, 2, 2, 2, 2, 2]);

    const clean = await runCli([...args, '--resume'], { input, cleanup });
    expect(clean.code, describeResult(clean)).toBe(0);
    expect(clean.stderr).not.toContain('ledger: ');
    expect((parseJsonLines(clean.stdout) as Array<{ fromLedger?: boolean }>).every((r) => r.fromLedger)).toBe(true);

    const changed = input.replace(task(1), 'Where is the retry backoff? (changed 1.)');
    const againstChanged = await runCli([...args, '--resume'], { input: changed, cleanup });
    expect(againstChanged.code, describeResult(againstChanged)).toBe(1);
    expect(againstChanged.stderr).toContain(
      "forkpool fanout: ledger: line 1: the input line is not the task the ledger ran for it (changed since?); the ledger's result is kept and the line is not run again",
    );
  }, 120_000);

  it('a resumed session does not trust (or die on) a broken row: recovery.invalid names it with what was found; the other jobs recover', async () => {
    const cleanup = useCleanup();
    const sim = await startSim(cleanup);
    const file = ledgerFile(cleanup);
    const config = makeConfig(sim, await makeWorkspace(cleanup), { maxConcurrent: 1 }, { tools: ['read_file', 'grep'], ledger: { path: file } });
    const first = new AgentSession({ config, sessionId: 's-rows', background: false });
    await first.close();
    const store = openSqliteLedger(file);
    const ledger = new DeliveryLedger({}, store.jobs('s-rows'));
    const add = (label: string) => ledger.add({ id: ledger.newId(), label, task: task(label.length), role: 'user', wave: null }).id;
    const [kept, broken] = [add('kept'), add('broken!')] as [string, string];
    store.close();
    const db = new RawDatabase(file);
    db.prepare("UPDATE jobs SET record = json_set(record, '$.attempts', 'many') WHERE id = ?").run(broken);
    db.close();
    const resumed = AgentSession.resume('s-rows', { config, background: false });
    cleanup.add(() => resumed.close());
    expect(resumed.manager.recovery?.requeued).toEqual([kept]);
    expect(resumed.manager.recovery?.invalid).toEqual([{ id: broken, problem: expect.stringMatching(/^field "attempts": .*; found "\\"many\\""$/) }]);
    expect(resumed.manager.get(broken)).toBeUndefined();
  });
});
