/**
 * The durable ledger on node:sqlite: WAL, a schema version in `PRAGMA user_version` with a
 * migration step, a ledger written by the old better-sqlite3 store (test/fixtures/ledger-v1.db:
 * a `forkpool fanout --ledger` of two tasks and a `forkpool run --ledger` session, written by
 * forkpool before this change) opened and resumed, a newer schema refused, and Node 22's
 * "SQLite is experimental" warning silenced without silencing any other warning.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SqliteDatabase } from '../../../src/main/ledger/sqlite-driver.js';
import { openSqliteLedger } from '../../../src/main/ledger/sqlite-store.js';
import { ConfigError } from '../../../src/shared/errors.js';
import { REPO_ROOT, runCli, tempWorkspace, useCleanup, ledgerFile } from '../../helpers/index.js';

const OLD_LEDGER = path.join(REPO_ROOT, 'test', 'fixtures', 'ledger-v1.db');
const TASKS = '{"task":"Where is X?","label":"first"}\n{"task":"How does Y work?","label":"second"}\n';

function pragma(file: string, name: string): unknown {
  const db = new SqliteDatabase(file);
  try {
    return db.pragma(name, { simple: true });
  } finally {
    db.close();
  }
}

describe('the durable ledger on node:sqlite', () => {
  const cleanup = useCleanup();

  it('opens a ledger written by the old store: migrated to schema 6 (user_version), its session and its jobs read back, its fan-out resumed without running again', async () => {
    const dir = tempWorkspace({}, cleanup);
    const file = path.join(dir, 'old.db');
    copyFileSync(OLD_LEDGER, file);
    expect(pragma(file, 'user_version')).toBe(0);
    const store = openSqliteLedger(file);
    try {
      const sessions = store.sessions();
      expect(sessions).toHaveLength(1);
      const session = store.loadSession(sessions[0]?.id as string);
      expect(session?.turns).toBeGreaterThanOrEqual(1);
      const fanout = store.jobs('fanout').load();
      expect(fanout.invalid).toEqual([]);
      expect(fanout.jobs.map((j) => [j.record.label, j.record.state])).toEqual([
        ['first', 'ended'],
        ['second', 'ended'],
      ]);
      // Its jobs ran before transcripts were kept: none, and reading one is no error.
      const first = fanout.jobs[0]?.record.id as string;
      expect(store.jobs('fanout').transcript(first)).toBeUndefined();
      // Ids are unique within a scope only: this file's session has a job of the same id.
      expect(store.scopesOf(first)).toContain('fanout');
    } finally {
      store.close();
    }
    expect(pragma(file, 'user_version')).toBe(6);
    expect(pragma(file, 'journal_mode')).toBe('wal');
    // The old store's version row says 5 now: a forkpool of schema 1 refuses the file.
    const db = new SqliteDatabase(file);
    expect(db.prepare("SELECT value FROM meta WHERE key = 'schema'").get()).toEqual({ value: '6' });
    db.close();

    const workspace = path.join(dir, 'ws');
    mkdirSync(workspace);
    writeFileSync(path.join(dir, 'tasks.jsonl'), TASKS);
    const resumed = await runCli(['fanout', path.join(dir, 'tasks.jsonl'), '--ledger', file, '--resume', '--json', '--no-progress', '--workspace', workspace]);
    expect(resumed.code, resumed.stderr).toBe(0);
    const lines = resumed.stdout
      .split('\n')
      .filter((l) => l.startsWith('{"type":"result"'))
      .map((l) => JSON.parse(l) as { line: number; label: string; attempts: number });
    expect(lines.map((l) => [l.line, l.label, l.attempts])).toEqual([
      [1, 'first', 1],
      [2, 'second', 1],
    ]);
  });

  it('a new ledger: WAL, user_version 6; reopened, it stays 6', () => {
    const file = ledgerFile(cleanup, 'new.db');
    openSqliteLedger(file).close();
    expect(pragma(file, 'user_version')).toBe(6);
    expect(pragma(file, 'journal_mode')).toBe('wal');
    openSqliteLedger(file).close();
    expect(pragma(file, 'user_version')).toBe(6);
  });

  it('refuses a ledger of a newer schema with a ConfigError naming ledger.path', () => {
    const file = ledgerFile(cleanup, 'future.db');
    openSqliteLedger(file).close();
    const db = new SqliteDatabase(file);
    db.exec('PRAGMA user_version = 7');
    db.close();
    expect(() => openSqliteLedger(file)).toThrow(ConfigError);
    expect(() => openSqliteLedger(file)).toThrow(/ledger\.path.*of schema 7 \(written by a newer forkpool\)/s);
  });

  it('prints no SQLite ExperimentalWarning, and every other warning still', () => {
    const dir = tempWorkspace({}, cleanup);
    const script = `
      const { openSqliteLedger } = await import(${JSON.stringify(path.join(REPO_ROOT, 'dist', 'main', 'ledger', 'sqlite-store.js'))});
      openSqliteLedger(${JSON.stringify(path.join(dir, 'w.db'))}).close();
      process.emitWarning('another experimental thing', 'ExperimentalWarning');
      process.emitWarning('a plain warning');`;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: '' } });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).not.toMatch(/SQLite/);
    expect(r.stderr).toContain('ExperimentalWarning: another experimental thing');
    expect(r.stderr).toContain('Warning: a plain warning');
  });
});

describe('closing the durable ledger', () => {
  const cleanup = useCleanup();

  it('checkpoints the WAL: a copy of the .db file alone holds what was written, while another connection keeps the file open', () => {
    const dir = tempWorkspace({}, cleanup);
    const file = path.join(dir, 'ledger.db');
    const store = openSqliteLedger(file);
    // Another process's connection: SQLite's own checkpoint at the last close does not happen.
    const other = new SqliteDatabase(file);
    other.prepare('SELECT count(*) FROM sqlite_master').get();
    try {
      store.saveSession({
        id: 's-kept',
        turns: 1,
        messages: [{ role: 'user', content: 'hello' }],
        usage: {},
        folded: '',
        foldedTurns: 0,
        userInputs: ['hello'],
      });
      store.close();
      const copy = path.join(dir, 'copy.db');
      copyFileSync(file, copy);
      const reopened = openSqliteLedger(copy);
      try {
        expect(reopened.loadSession('s-kept')?.userInputs).toEqual(['hello']);
      } finally {
        reopened.close();
      }
    } finally {
      other.close();
    }
  });
});
