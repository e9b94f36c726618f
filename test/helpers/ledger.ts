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
