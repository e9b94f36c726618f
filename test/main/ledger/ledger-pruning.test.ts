/**
 * Retention's forget on a durable ledger deletes every row of the forgotten job: its record,
 * its state transitions, alerts, source (a fan-out line), transcript and messages. Sessions past
 * `keepSessions` go with all their jobs' rows once nothing of theirs waits and no process holds
 * them. Those tables used to keep every row forever. The real in-memory ledger over the real
 * SQLite store; the rows are counted in the file itself.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { DeliveryLedger } from '../../../src/main/ledger/ledger.js';
import { openSqliteLedger } from '../../../src/main/ledger/sqlite-store.js';
import { RawDatabase, ledgerFile, okEnding, useCleanup } from '../../helpers/index.js';

const TABLES = [
  ['jobs', 'id'],
  ['transitions', 'id'],
  ['alerts', 'job_id'],
  ['job_sources', 'id'],
  ['transcripts', 'id'],
  ['job_messages', 'job_id'],
] as const;

describe('pruning a durable ledger', () => {
  const cleanup = useCleanup();

  it("forgetting a delivered job deletes its rows from every table, and leaves the kept jobs' rows alone", () => {
    const file = ledgerFile(cleanup);
    const store = openSqliteLedger(file);
    cleanup.add(() => store.close());
    const jobs = store.jobs('s');
    // Keep one delivered record: delivering the third forgets the first two.
    const ledger = new DeliveryLedger({ keepRecords: 1, keepResults: 1 }, jobs);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const id = ledger.newId();
      ledger.add({ id, label: `job ${i}`, task: `task ${i}`, role: 'user', wave: null });
      ledger.markRunning(id, 1);
      jobs.putAlert({ jobId: id, number: 1, severity: 'info', message: `alert of ${id}`, at: 1 });
      jobs.putSource(id, `line:${i + 1}`);
      jobs.putTranscript(id, { steps: [], total: 0 });
      jobs.putMessage(id, { id: 1, text: `message to ${id}`, at: 1 });
      ledger.markEnded(id, okEnding(`answer ${i}`));
      ids.push(id);
    }
    const rowsOf = (id: string) => {
      const db = new RawDatabase(file);
      try {
        return TABLES.map(
          ([table, column]) => (db.prepare(`SELECT count(*) AS n FROM ${table} WHERE scope = 's' AND ${column} = ?`).all(id)[0] as { n: number }).n,
        );
      } finally {
        db.close();
      }
    };
    // Before any delivery every job has rows in every table (transitions: queued, running, ended).
    for (const id of ids) expect(rowsOf(id), id).toEqual([1, 3, 1, 1, 1, 1]);

    ids.forEach((id, turn) => ledger.markDelivered(id, turn + 1));
    expect(ledger.stats().forgotten).toBe(2);
    expect(rowsOf(ids[0] as string)).toEqual([0, 0, 0, 0, 0, 0]);
    expect(rowsOf(ids[1] as string)).toEqual([0, 0, 0, 0, 0, 0]);
    // The kept one keeps all of its rows (a fourth transition: delivered).
    expect(rowsOf(ids[2] as string)).toEqual([1, 4, 1, 1, 1, 1]);
  });
  afterEach(() => void vi.useRealTimers());

  it('keeps the newest keepSessions sessions; an older one goes with its jobs once none waits and no process holds it', () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const file = ledgerFile(cleanup);
    const store = openSqliteLedger(file, { keepSessions: 2 });
    cleanup.add(() => store.close());
    const save = (id: string, at: number) => {
      vi.setSystemTime(at);
      store.saveSession({ id, turns: 1, messages: [], usage: {}, folded: '', foldedTurns: 0, userInputs: [] });
    };
    /** One job in the session's scope, ended; delivered unless `undelivered`. */
    const job = (scope: string, undelivered = false) => {
      const jobs = store.jobs(scope);
      const ledger = new DeliveryLedger({}, jobs);
      const id = ledger.newId();
      ledger.add({ id, label: 'x', task: 'x', role: 'user', wave: null });
      ledger.markRunning(id, 1);
      jobs.putAlert({ jobId: id, number: 1, severity: 'info', message: 'a', at: 1 });
      ledger.markEnded(id, okEnding('done'));
      if (!undelivered) ledger.markDelivered(id, 1);
      return ledger;
    };
    const rowsOfScope = (scope: string) => {
      const db = new RawDatabase(file);
      try {
        return ['jobs', 'transitions', 'alerts', 'scopes'].map(
          (t) => (db.prepare(`SELECT count(*) AS n FROM ${t} WHERE scope = ?`).all(scope)[0] as { n: number }).n,
        );
      } finally {
        db.close();
      }
    };
    job('old-done');
    expect(rowsOfScope('old-done')).toEqual([1, 4, 1, 1]);
    const waiting = job('old-waiting', true);
    job('old-held');
    store.jobs('old-held').claim();
    save('old-done', 1_000);
    save('old-waiting', 2_000);
    save('old-held', 3_000);
    save('new-1', 4_000);
    save('new-2', 5_000);
    // Past the newest two: the one with nothing waiting goes, with every row of its jobs.
    expect(store.sessions().map((x) => x.id)).toEqual(['new-2', 'new-1', 'old-held', 'old-waiting']);
    expect(store.loadSession('old-done')).toBeUndefined();
    expect(rowsOfScope('old-done')).toEqual([0, 0, 0, 0]);
    expect(rowsOfScope('old-waiting')[0]).toBe(1);

    // Its result delivered, its holder gone: both go at the next save.
    waiting.drain(2);
    store.jobs('old-held').release();
    save('new-2', 6_000);
    expect(store.sessions().map((x) => x.id)).toEqual(['new-2', 'new-1']);
    expect(rowsOfScope('old-waiting')).toEqual([0, 0, 0, 0]);
    expect(rowsOfScope('old-held')).toEqual([0, 0, 0, 0]);
  });
});
