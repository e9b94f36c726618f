/**
 * Helpers for the ledger tests: a temp ledger file, an `ok` ending, and the raw SQLite handle
 * the tests use to read or damage a ledger file behind the ledger's back.
 *
 *   const file = ledgerFile(cleanup);                 // <temp dir>/forkpool.db, removed after the test
 *   ledger.markEnded(id, okEnding('found it'));
 *   const db = new RawDatabase(file); db.prepare('DELETE FROM jobs WHERE id = ?').run(id); db.close();
 */
import path from 'node:path';
import type { JobEnding } from '../../src/main/ledger/ledger.js';
import { SqliteDatabase } from '../../src/main/ledger/sqlite-driver.js';
import { openSqliteLedger, SqliteLedgerStore } from '../../src/main/ledger/sqlite-store.js';
import { ScopeLeases } from '../../src/main/ledger/ledger-lease.js';
import { DEFAULTS } from '../../src/shared/defaults.js';
import type { Cleanup } from './cleanup.js';
import { tempWorkspace } from './config.js';

/** A path for a ledger file in a fresh temp directory (removed after the test); the file is not created. */
export function ledgerFile(cleanup: Cleanup, name = 'forkpool.db'): string {
  return path.join(tempWorkspace({}, cleanup), name);
}

/** The ending of a job that completed with `text`: status ok, one iteration, no usage. */
export const okEnding = (text: string): JobEnding => ({ status: 'ok', endedBy: 'completed', resultText: text, usage: {}, iterations: 1 });

export interface RawDb {
  prepare(sql: string): { run(...params: unknown[]): unknown; all(...params: unknown[]): unknown[] };
  close(): void;
}

/** The SQLite driver the ledger uses, opened on a file directly (no schema, no checks). */
export const RawDatabase = SqliteDatabase as new (file: string) => RawDb;

/**
 * A ledger file whose store runs on a connection the test holds, to make every write fail
 * (SQLITE_READONLY) and work again; `db` is that connection (e.g. to add a trigger that fails one write).
 */
export function failableLedger(cleanup: Cleanup): { file: string; store: SqliteLedgerStore; db: SqliteDatabase; failWrites: (on: boolean) => void } {
  const file = ledgerFile(cleanup, 'ledger.db');
  openSqliteLedger(file).close();
  const db = new SqliteDatabase(file);
  db.exec('PRAGMA busy_timeout = 5000');
  db.pragma('journal_mode = WAL');
  const store = new SqliteLedgerStore(file, db, new ScopeLeases(db, file, { staleMs: DEFAULTS.ledger.leaseStaleMs }));
  cleanup.add(() => store.close());
  return { file, store, db, failWrites: (on) => void db.pragma(`query_only = ${on ? 'ON' : 'OFF'}`) };
}
