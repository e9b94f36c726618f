import { ConfigError } from '../../shared/errors.js';
import type { SqliteDatabase as Database } from './sqlite-driver.js';
import { MESSAGES_MIGRATION } from './sqlite-messages.js';

/** The durable ledger's tables (sqlite-store.ts) and the steps that bring an older file to them. */

/**
 * The schema's version, kept in `PRAGMA user_version`. 1: the better-sqlite3 store, which kept
 * it in the `meta` table (its user_version is 0). Each step in MIGRATIONS takes a file from the
 * version before it; a file of a newer version is refused.
 */
const SCHEMA_VERSION = 6;

export const SCHEMA = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS scopes (scope TEXT PRIMARY KEY, next_id INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS jobs (
  scope TEXT NOT NULL, id TEXT NOT NULL, position INTEGER NOT NULL, state TEXT NOT NULL,
  delivered_turn INTEGER, updated_at INTEGER NOT NULL, record TEXT NOT NULL, spec TEXT,
  PRIMARY KEY (scope, id)
);
CREATE INDEX IF NOT EXISTS jobs_by_state ON jobs (scope, state, delivered_turn);
CREATE INDEX IF NOT EXISTS jobs_by_position ON jobs (scope, position);
CREATE TABLE IF NOT EXISTS transitions (
  scope TEXT NOT NULL, id TEXT NOT NULL, at INTEGER NOT NULL, state TEXT NOT NULL, attempts INTEGER NOT NULL, delivered_turn INTEGER
);
CREATE INDEX IF NOT EXISTS transitions_by_job ON transitions (scope, id);
CREATE TABLE IF NOT EXISTS alerts (
  scope TEXT NOT NULL, job_id TEXT NOT NULL, number INTEGER NOT NULL, severity TEXT NOT NULL, message TEXT NOT NULL, at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS job_sources (scope TEXT NOT NULL, id TEXT NOT NULL, source TEXT NOT NULL, PRIMARY KEY (scope, id));
CREATE TABLE IF NOT EXISTS sessions (
  id TEXT PRIMARY KEY, turns INTEGER NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, data TEXT NOT NULL
);
`;

/** Steps from one schema version to the next, each run in one transaction with the bump of user_version. */
const MIGRATIONS: ReadonlyArray<{ to: number; up(db: Database): void }> = [
  // 0 → 1: a new file (SCHEMA above created its tables).
  { to: 1, up: () => undefined },
  // 1 → 2: the version moves from the meta table to user_version; the meta row says 2 as well,
  // so a forkpool of schema 1 refuses the file ("written by a newer forkpool") instead of using it.
  { to: 2, up: (db) => void db.prepare("INSERT INTO meta (key, value) VALUES ('schema', '2') ON CONFLICT (key) DO UPDATE SET value = '2'").run() },
  // 2 → 3: an ended job's conversation, kept for resume_background_agent (a column of its row, so
  // retention's forget drops it too). Rows of schema 2 have none: those jobs cannot be resumed.
  // The meta row moves too, so a forkpool of schema 1 still refuses the file.
  {
    to: 3,
    up: (db) => {
      db.exec('ALTER TABLE jobs ADD COLUMN conversation TEXT');
      db.prepare("UPDATE meta SET value = '3' WHERE key = 'schema'").run();
    },
  },
  // 3 → 4: each job's transcript (its steps, one JSON row; see transcript.ts). Jobs of schema 3
  // have none. Retention drops a row with its job's result, and forget with the job.
  {
    to: 4,
    up: (db) => {
      db.exec('CREATE TABLE IF NOT EXISTS transcripts (scope TEXT NOT NULL, id TEXT NOT NULL, data TEXT NOT NULL, PRIMARY KEY (scope, id))');
      db.prepare("UPDATE meta SET value = '4' WHERE key = 'schema'").run();
    },
  },
  // 4 → 5: the messages sent to jobs, whole (sqlite-messages.ts). Jobs of schema 4 have none kept.
  MESSAGES_MIGRATION,
  // 5 → 6: each transition names its job's branch (issue 38, B20: the agent tree as an audit trail).
  // Rows of schema 5 have none (NULL).
  {
    to: 6,
    up: (db) => {
      // A file taken back to an older version by hand may have it already.
      const columns = db.prepare('PRAGMA table_info(transitions)').all() as Array<{ name: string }>;
      if (!columns.some((c) => c.name === 'branch')) db.exec('ALTER TABLE transitions ADD COLUMN branch TEXT');
      db.prepare("UPDATE meta SET value = '6' WHERE key = 'schema'").run();
    },
  },
];

/** The file's schema version: user_version, or for a file of the better-sqlite3 store, its meta row. */
function schemaVersion(db: Database): number {
  const version = Number(db.pragma('user_version', { simple: true }));
  if (version > 0) return version;
  const meta = db.prepare("SELECT value FROM meta WHERE key = 'schema'").get() as { value: string } | undefined;
  return meta === undefined ? 0 : Number(meta.value);
}

/** Brings a file to SCHEMA_VERSION (a ConfigError naming `ledger.path` for a newer one). */
export function migrate(db: Database, file: string): void {
  const version = schemaVersion(db);
  if (version > SCHEMA_VERSION) {
    throw new ConfigError([
      {
        field: 'ledger.path',
        expected: `a ledger of schema ${SCHEMA_VERSION} or older`,
        received: `${JSON.stringify(file)} of schema ${version} (written by a newer forkpool)`,
      },
    ]);
  }
  for (const step of MIGRATIONS) {
    if (step.to <= version) continue;
    db.transaction(() => {
      step.up(db);
      db.exec(`PRAGMA user_version = ${step.to}`);
    }).immediate();
  }
}
