/**
 * What a durable ledger deletes, so its file stays bounded for a process that lives for weeks.
 * Retention's forget: a job's row and every row that belongs to it (its state transitions,
 * alerts, source, transcript, messages), in one statement each and inside the forget's one
 * write. Without it those tables only grew: a server that ran a million jobs kept a million
 * jobs' transitions and alerts long after it forgot the jobs. And sessions past the newest
 * `keepSessions` (each holds a whole conversation), with every row of their jobs, once none of
 * those jobs waits for anything and no live process holds the session (see {@link pruneSessions}).
 */
import type { SqliteDatabase, SqliteStatement } from './sqlite-driver.js';

/** Each table with a job's rows, and its column naming the job. The job's own row goes last. */
const JOB_TABLES: ReadonlyArray<{ table: string; job: string }> = [
  { table: 'transitions', job: 'id' },
  { table: 'alerts', job: 'job_id' },
  { table: 'job_sources', job: 'id' },
  { table: 'transcripts', job: 'id' },
  { table: 'job_messages', job: 'job_id' },
  { table: 'jobs', job: 'id' },
];

/**
 * Indexes the deletes use (`alerts` had none by job: each forget scanned the whole table).
 * In the schema run at every open (IF NOT EXISTS), so a ledger of any version gets them.
 */
export const PRUNE_INDEXES = 'CREATE INDEX IF NOT EXISTS alerts_by_job ON alerts (scope, job_id);';

/** One scope's job rows, deleted by job. Its caller guards the call (a failure throws LEDGER_WRITE_FAILED). */
export class JobRowPruner {
  readonly #scope: string;
  readonly #deletes: SqliteStatement[];

  constructor(db: SqliteDatabase, scope: string) {
    this.#scope = scope;
    this.#deletes = JOB_TABLES.map(({ table, job }) => db.prepare(`DELETE FROM ${table} WHERE scope = ? AND ${job} = ?`));
  }

  forget(id: string): void {
    for (const statement of this.#deletes) statement.run(this.#scope, id);
  }
}

/** Every table keyed by scope, for a whole session's rows (its jobs and the scope's own rows). */
const SCOPE_TABLES = [...JOB_TABLES.map(({ table }) => table), 'scopes', 'leases'];

/** More than `keep` sessions in the file: {@link pruneSessions} may have work. */
export function hasSessionsPast(db: SqliteDatabase, keep: number): boolean {
  return db.prepare('SELECT 1 FROM sessions LIMIT 1 OFFSET ?').get(keep) !== undefined;
}

/**
 * Deletes the sessions past the newest `keep` (by last activity), each with every row of its job
 * scope, and returns their ids. A session is kept, however old, while one of its jobs is not
 * ended and delivered (a resume would still run or deliver it) or while a process holds its
 * scope's lease with a fresh heartbeat (it is in use). Its caller runs it in one transaction.
 */
export function pruneSessions(db: SqliteDatabase, keep: number, leaseStaleMs: number, now = Date.now()): string[] {
  const old = db.prepare('SELECT id FROM sessions ORDER BY updated_at DESC, id LIMIT -1 OFFSET ?').all(keep) as Array<{ id: string }>;
  if (old.length === 0) return [];
  const waiting = db.prepare("SELECT 1 FROM jobs WHERE scope = ? AND (state != 'ended' OR delivered_turn IS NULL) LIMIT 1");
  const lease = db.prepare('SELECT heartbeat_at AS heartbeatAt FROM leases WHERE scope = ?');
  const deletes = SCOPE_TABLES.map((table) => db.prepare(`DELETE FROM ${table} WHERE scope = ?`));
  const deleteSession = db.prepare('DELETE FROM sessions WHERE id = ?');
  const pruned: string[] = [];
  for (const { id } of old) {
    if (waiting.get(id) !== undefined) continue;
    const held = lease.get(id) as { heartbeatAt: number } | undefined;
    if (held && now - held.heartbeatAt <= leaseStaleMs) continue;
    for (const statement of deletes) statement.run(id);
    deleteSession.run(id);
    pruned.push(id);
  }
  return pruned;
}
