/**
 * The messages sent to jobs (`send_to_background_agent`), kept whole in a table of their own so
 * a restart hands each to the job's re-run (see src/main/jobs/steering.ts). A job's record lists
 * them too, but cut to 2,000 characters and rewritten on every change of the record; a row here
 * is written once, as the message is sent, and goes when the job's row goes (sqlite-prune.ts).
 */
import { STEERING_MAX_CHARS } from '../../shared/protocol.js';
import type { StoredMessage } from './ledger-store.js';
import type { SqliteDatabase, SqliteStatement } from './sqlite-driver.js';

/** Schema step 4 → 5 (sqlite-store.ts's MIGRATIONS): the table, and the meta row an old forkpool reads. */
export const MESSAGES_MIGRATION = {
  to: 5,
  up(db: SqliteDatabase): void {
    db.exec(
      `CREATE TABLE IF NOT EXISTS job_messages (
        scope TEXT NOT NULL, job_id TEXT NOT NULL, number INTEGER NOT NULL, text TEXT NOT NULL, interrupt INTEGER NOT NULL, at INTEGER NOT NULL,
        PRIMARY KEY (scope, job_id, number)
      )`,
    );
    db.prepare("UPDATE meta SET value = '5' WHERE key = 'schema'").run();
  },
};

interface MessageRow {
  job_id: string;
  number: number;
  text: string;
  interrupt: number;
  at: number;
}

/** One scope's messages. Its callers guard each call (sqlite-guards.ts): a failing write throws LEDGER_WRITE_FAILED. */
export class SqliteMessages {
  readonly #scope: string;
  readonly #put: SqliteStatement;
  readonly #load: SqliteStatement;

  constructor(db: SqliteDatabase, scope: string) {
    this.#scope = scope;
    this.#put = db.prepare('INSERT INTO job_messages (scope, job_id, number, text, interrupt, at) VALUES (?, ?, ?, ?, ?, ?)');
    this.#load = db.prepare('SELECT job_id, number, text, interrupt, at FROM job_messages WHERE scope = ? ORDER BY job_id, number');
  }

  put(jobId: string, message: StoredMessage): void {
    this.#put.run(this.#scope, jobId, message.id, message.text, message.interrupt ? 1 : 0, message.at);
  }

  /** Every job's messages, by job id, in order. A row edited into nonsense is left out (checked, not trusted, as a job row is). */
  load(): Map<string, StoredMessage[]> {
    const byJob = new Map<string, StoredMessage[]>();
    for (const row of this.#load.all(this.#scope) as unknown as MessageRow[]) {
      const valid = Number.isInteger(row.number) && row.number >= 1 && typeof row.text === 'string' && row.text.length > 0;
      if (!valid || row.text.length > STEERING_MAX_CHARS) continue;
      const message: StoredMessage = { id: row.number, text: row.text, at: Number(row.at), ...(row.interrupt ? { interrupt: true as const } : {}) };
      let messages = byJob.get(row.job_id);
      if (!messages) byJob.set(row.job_id, (messages = []));
      messages.push(message);
    }
    return byJob;
  }
}
