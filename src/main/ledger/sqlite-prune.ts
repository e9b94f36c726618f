/**
 * What retention's forget deletes from a durable ledger: a job's row and every row that belongs
 * to it (its state transitions, alerts, source, transcript, messages), in one statement each
 * and inside the forget's one write. Without it those tables only grew: a server that ran a
 * million jobs kept a million jobs' transitions and alerts long after it forgot the jobs.
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
