/**
 * Messages to background jobs survive a kill -9 (issue: they were kept in memory only, so the
 * re-run after `--resume` never got them). A session on a durable ledger sends three messages
 * to two jobs, is SIGKILLed, and is resumed: the running job's re-run, which starts again from
 * its task, is given both of its messages (the one its dead run had taken and the one it had
 * not) exactly once each, the queued job its one message, and the records say all were received.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { AgentSession } from '../../../src/main/session/agent-session.js';
import { BackgroundManager } from '../../../src/main/jobs/manager.js';
import { ScopeLeases } from '../../../src/main/ledger/ledger-lease.js';
import { SqliteDatabase } from '../../../src/main/ledger/sqlite-driver.js';
import { openSqliteLedger, SqliteLedgerStore } from '../../../src/main/ledger/sqlite-store.js';
import { DEFAULTS } from '../../../src/shared/defaults.js';
import {
  REPO_ROOT,
  ended,
  ledgerFile,
  makeConfig,
  makeWorkspace,
  messagesOf,
  requireBuiltCli,
  startHoldingProxy,
  startSim,
  testConfig,
  useCleanup,
  waitFor,
  watchManager,
} from '../../helpers/index.js';

requireBuiltCli();
const CHILD = path.join(REPO_ROOT, 'test', 'fixtures', 'durable-steering-child.mjs');
const M1 = 'M1: sent before it started, so received before the kill.';
const M2 = 'M2: sent while its first model call was held, never received before the kill.';
const M3 = 'M3: sent while it waited in the queue.';
const M4 = 'M4: sent after the restart.';

/** How many times `text` occurs in the user messages of a request. */
function occurrences(body: unknown, text: string): number {
  return messagesOf({ body } as never)
    .filter((m) => m.role === 'user')
    .reduce((n, m) => n + String(m.content).split(text).length - 1, 0);
}

describe('messages to jobs across kill -9 and resume', () => {
  const cleanup = useCleanup();

  it('the re-run is given each message once: received or not before the kill, running or queued', async () => {
    // Every answer is held: the kill lands while job "a" waits for its first one.
    const sim = await startSim(cleanup, { latencyMs: 120_000 });
    const workspace = await makeWorkspace(cleanup);
    const file = ledgerFile(cleanup);
    const child = spawn(process.execPath, [CHILD, file, sim.url, workspace], { stdio: ['ignore', 'pipe', 'inherit'] });
    cleanup.add(() => void child.kill('SIGKILL'));
    const [a, b] = await new Promise<string[]>((resolve, reject) => {
      let out = '';
      child.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        const armed = /armed (\S+) (\S+)\n/.exec(out);
        if (armed) resolve([armed[1] as string, armed[2] as string]);
      });
      child.on('exit', (code) => reject(new Error(`the child exited (${code}) before its messages were sent`)));
    });
    const exited = new Promise((resolve) => child.on('exit', resolve));
    child.kill('SIGKILL');
    await exited;
    // The sim logs a request as it answers: the dead run's held one is not in it.
    const before = sim.requests.length;

    sim.setOptions({ latencyMs: 0 });
    const session = AgentSession.resume('steer-test', {
      config: testConfig({
        baseUrl: sim.url,
        workspaceRoot: workspace,
        tools: ['read_file', 'find_files', 'grep', 'list_dir'],
        sandbox: 'none',
        ledger: { path: file },
        background: { maxConcurrent: 1 },
      }),
      background: false,
    });
    cleanup.add(() => session.close({ timeoutMs: 2_000 }));
    expect(session.manager.recovery).toMatchObject({ rerun: [a], requeued: [b] });
    // Sent after the restart, before its job starts: numbered after the kept ones (no clash on disk).
    expect(session.manager.parentControls.send(b as string, M4)).toMatchObject({ message: 2, delivery: 'kept' });
    const [first, second] = await Promise.all([session.manager.result(a as string), session.manager.result(b as string)]);

    const after = sim.requests.slice(before);
    const runOf = (marker: string) => after.filter((r) => JSON.stringify(r.body).includes(marker));
    const rerunA = runOf('STEER-A');
    const runB = runOf('STEER-B');
    expect(rerunA.length).toBeGreaterThan(0);
    expect(runB.length).toBeGreaterThan(0);
    // From its first request on, each message is in the conversation once: none lost, none doubled.
    const counts = (body: unknown) => [M1, M2, M3, M4].map((text) => occurrences(body, text));
    for (const request of rerunA) expect(counts(request.body)).toEqual([1, 1, 0, 0]);
    for (const request of runB) expect(counts(request.body)).toEqual([0, 0, 1, 1]);
    expect(first?.messages).toEqual([
      expect.objectContaining({ id: 1, text: M1, receivedAt: expect.any(Number) }),
      expect.objectContaining({ id: 2, text: M2, receivedAt: expect.any(Number) }),
    ]);
    expect(second?.messages).toEqual([
      expect.objectContaining({ id: 1, text: M3, receivedAt: expect.any(Number) }),
      expect.objectContaining({ id: 2, text: M4, receivedAt: expect.any(Number) }),
    ]);
  }, 60_000);
  it('a message the ledger cannot write is refused (LEDGER_WRITE_FAILED) and changes nothing; once writes work it is taken', async () => {
    const file = ledgerFile(cleanup);
    openSqliteLedger(file).close();
    // The store on a connection the test holds: query_only makes every write fail (SQLITE_READONLY).
    const db = new SqliteDatabase(file);
    db.exec('PRAGMA busy_timeout = 5000');
    const store = new SqliteLedgerStore(file, db, new ScopeLeases(db, file, { staleMs: DEFAULTS.ledger.leaseStaleMs }));
    cleanup.add(() => store.close());
    const sim = await startSim(cleanup, { script: [{ content: 'first' }, { content: 'second, with the message' }] });
    const proxy = await startHoldingProxy(cleanup, sim.url, (body) => body.includes('The first task.'));
    const config = makeConfig(undefined, await makeWorkspace(cleanup), { maxConcurrent: 1 }, { baseUrl: proxy.url });
    const manager = watchManager(new BackgroundManager({ config, store: store.jobs('s') }));
    cleanup.add(() => manager.close({ timeoutMs: 2_000 }));
    const failures: string[] = [];
    manager.on('ledger-error', (e) => failures.push(e.sqliteCode));
    const first = manager.spawn({ task: 'The first task.', label: 'first' });
    const second = manager.spawn({ task: 'The second task.', label: 'second' });
    await waitFor(() => proxy.held() === 1, 'the first job mid-call, the second queued');

    db.pragma('query_only = ON');
    expect(() => manager.parentControls.send(second.id, 'Lost if accepted now.')).toThrow(expect.objectContaining({ code: 'LEDGER_WRITE_FAILED' }));
    expect(manager.get(second.id)?.messages).toBeUndefined();
    expect(failures).toEqual(['SQLITE_READONLY']);
    db.pragma('query_only = OFF');
    expect(manager.parentControls.send(second.id, 'Taken once the disk works.')).toMatchObject({ message: 1, delivery: 'kept' });
    proxy.release();
    await ended(manager, first.id);
    const record = await ended(manager, second.id);
    expect(record.messages).toEqual([expect.objectContaining({ id: 1, text: 'Taken once the disk works.', receivedAt: expect.any(Number) })]);
    const request = sim.requests.find((r) => JSON.stringify(r.body).includes('The second task.'));
    expect(occurrences(request?.body, 'Taken once the disk works.')).toBe(1);
    expect(occurrences(request?.body, 'Lost if accepted now.')).toBe(0);
    // On disk, whole, for a restart: the one accepted.
    const check = new SqliteDatabase(file);
    expect(check.prepare('SELECT job_id AS job, number, text FROM job_messages').all()).toEqual([
      { job: second.id, number: 1, text: 'Taken once the disk works.' },
    ]);
    check.close();
  }, 60_000);
});
