/**
 * Retention's forget on a durable ledger deletes every row of the forgotten job: its record,
 * its state transitions, alerts, source (a fan-out line), transcript and messages. Those tables
 * used to keep every job's rows forever. The real in-memory ledger over the real SQLite store;
 * the rows are counted in the file itself.
 */
import { describe, expect, it } from 'vitest';
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
});
