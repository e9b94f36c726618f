/**
 * The durable ledger on SQLite (Node's built-in node:sqlite, WAL). Records are JSON blobs beside a few
 * indexed columns (scope, id, state, delivered turn, position), so a new plain-data field of
 * JobRecord persists without a schema change. Writes are synchronous: when a method returns,
 * the row is committed (to the WAL: it survives a killed process; `synchronous: full` also a
 * power cut).
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { DEFAULTS } from '../../shared/defaults.js';
import { LEDGER_PRUNING } from '../../shared/fixed-limits.js';
import { ConfigError } from '../../shared/errors.js';
import { guardRead, guardWrite, unreadable } from './sqlite-guards.js';
import { ScopeLeases } from './ledger-lease.js';
import { isInvalidRow, parseJobRow, type InvalidRow } from './ledger-rows.js';
import type { JobRecord } from './job-record.js';
import { isStoredTranscript, type StoredTranscript } from './transcript.js';
import type { JobStore, LedgerStore, SessionSnapshot, SessionSummary, StoredAlert, StoredJob, StoredMessage, StoredSpec } from './ledger-store.js';

import { SqliteDatabase, type SqliteStatement } from './sqlite-driver.js';
import { SCHEMA, migrate } from './sqlite-schema.js';
import { SqliteMessages } from './sqlite-messages.js';
import { JobRowPruner, PRUNE_INDEXES, hasSessionsPast, pruneSessions } from './sqlite-prune.js';

type Database = SqliteDatabase;
type Statement = SqliteStatement;

export interface SqliteStoreOptions {
  synchronous?: 'normal' | 'full';
  /** A scope's lease is taken over once its heartbeat is this old; default `DEFAULTS.ledger.leaseStaleMs`. */
  leaseStaleMs?: number;
  /** Sessions kept (sqlite-prune.ts); default `LEDGER_PRUNING.keepSessions`. */
  keepSessions?: number;
}

/** Opens (creating if needed) a ledger file. Throws a ConfigError naming `ledger.path` when it cannot. */
export function openSqliteLedger(file: string, options: SqliteStoreOptions = {}): SqliteLedgerStore {
  const resolved = path.resolve(file);
  let db: Database;
  try {
    mkdirSync(path.dirname(resolved), { recursive: true });
    db = new SqliteDatabase(resolved);
    // A second process on the same file waits up to this long for a write lock instead of failing at once.
    db.exec('PRAGMA busy_timeout = 5000');
    db.pragma('journal_mode = WAL');
    db.pragma(`synchronous = ${options.synchronous === 'full' ? 'FULL' : 'NORMAL'}`);
    db.exec(SCHEMA);
  } catch (error) {
    throw new ConfigError([
      { field: 'ledger.path', expected: 'a SQLite file forkpool can open and write', received: `${JSON.stringify(file)} (${(error as Error).message})` },
    ]);
  }
  try {
    // Inside the guard too: a file with a valid first page and garbage after it fails here.
    migrate(db, file);
    db.exec(PRUNE_INDEXES);
  } catch (error) {
    db.close();
    throw error instanceof ConfigError ? error : unreadable(file, error);
  }
  const staleMs = options.leaseStaleMs ?? DEFAULTS.ledger.leaseStaleMs;
  const pruning = { keepSessions: options.keepSessions ?? LEDGER_PRUNING.keepSessions, leaseStaleMs: staleMs };
  return new SqliteLedgerStore(resolved, db, new ScopeLeases(db, resolved, { staleMs }), pruning);
}

export class SqliteLedgerStore implements LedgerStore {
  readonly path: string;
  readonly #db: Database;
  readonly #scopes = new Map<string, SqliteJobStore>();
  readonly #saveSession: Statement;
  readonly #loadSession: Statement;
  readonly #listSessions: Statement;
  readonly #leases: ScopeLeases;
  readonly #pruning: { keepSessions: number; leaseStaleMs: number };
  #closed = false;

  constructor(
    file: string,
    db: Database,
    leases: ScopeLeases,
    pruning: { keepSessions: number; leaseStaleMs: number } = { keepSessions: LEDGER_PRUNING.keepSessions, leaseStaleMs: DEFAULTS.ledger.leaseStaleMs },
  ) {
    this.path = file;
    this.#db = db;
    this.#leases = leases;
    this.#pruning = pruning;
    this.#saveSession = db.prepare(
      `INSERT INTO sessions (id, turns, created_at, updated_at, data) VALUES (@id, @turns, @now, @now, @data)
       ON CONFLICT (id) DO UPDATE SET turns = excluded.turns, updated_at = excluded.updated_at, data = excluded.data`,
    );
    this.#loadSession = db.prepare('SELECT data FROM sessions WHERE id = ?');
    this.#listSessions = db.prepare('SELECT id, turns, created_at AS createdAt, updated_at AS updatedAt FROM sessions ORDER BY updated_at DESC, id');
  }

  get closed(): boolean {
    return this.#closed;
  }

  jobs(scope: string): JobStore {
    let store = this.#scopes.get(scope);
    if (!store) this.#scopes.set(scope, (store = new SqliteJobStore(this.#db, scope, this.path, this.#leases)));
    return store;
  }

  saveSession(snapshot: SessionSnapshot): void {
    guardWrite('save session', () => this.#saveSession.run({ id: snapshot.id, turns: snapshot.turns, now: Date.now(), data: JSON.stringify(snapshot) }));
    try {
      const { keepSessions, leaseStaleMs } = this.#pruning;
      // A write lock only when there is something past the bound (a read first, every turn).
      if (hasSessionsPast(this.#db, keepSessions)) this.#db.transaction(() => pruneSessions(this.#db, keepSessions, leaseStaleMs)).immediate();
    } catch {
      // The session is saved; the old ones wait for the next save to be pruned (a busy or full file).
    }
  }

  loadSession(id: string): SessionSnapshot | undefined {
    return guardRead(this.path, () => {
      const row = this.#loadSession.get(id) as { data: string } | undefined;
      return row ? (JSON.parse(row.data) as SessionSnapshot) : undefined;
    });
  }

  sessions(): SessionSummary[] {
    return guardRead(this.path, () => this.#listSessions.all() as SessionSummary[]);
  }

  scopesOf(id: string): string[] {
    const rows = guardRead(this.path, () => this.#db.prepare('SELECT scope FROM jobs WHERE id = ? ORDER BY scope').all(id) as Array<{ scope: string }>);
    return rows.map((row) => row.scope);
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#leases.releaseAll();
    // Everything committed into the .db file itself: a copy of it alone (without its -wal, as a
    // backup script may take) then holds every result. SQLite does this at the last connection's
    // close only; another process may still have the file open. Busy: the next close does it.
    try {
      this.#db.pragma('wal_checkpoint(TRUNCATE)');
    } catch {
      // A full disk or a busy file: the WAL still holds the data, and the next open replays it.
    }
    this.#db.close();
  }
}

class SqliteJobStore implements JobStore {
  readonly scope: string;
  readonly path: string;
  readonly #db: Database;
  readonly #file: string;
  readonly #put: Statement;
  readonly #putSpec: Statement;
  readonly #transition: Statement;
  readonly #nextId: Statement;
  readonly #pruner: JobRowPruner;
  readonly #alert: Statement;
  readonly #source: Statement;
  readonly #putConversation: Statement;
  readonly #messages: SqliteMessages;
  readonly #leases: ScopeLeases;
  /** Last state and delivery written per job: a transition row only when one of them changes. */
  readonly #last = new Map<string, string>();
  /** Inside a transaction: what `#last` held before each change, put back if the transaction fails. */
  #lastBefore: Map<string, string | undefined> | undefined;
  #writtenNextId = 0;

  constructor(db: Database, scope: string, file: string, leases: ScopeLeases) {
    this.scope = scope;
    this.path = file;
    this.#db = db;
    this.#file = file;
    this.#leases = leases;
    this.#put = db.prepare(
      `INSERT INTO jobs (scope, id, position, state, delivered_turn, updated_at, record) VALUES (@scope, @id, @position, @state, @delivered, @now, @record)
       ON CONFLICT (scope, id) DO UPDATE SET position = excluded.position, state = excluded.state, delivered_turn = excluded.delivered_turn,
         updated_at = excluded.updated_at, record = excluded.record`,
    );
    this.#putSpec = db.prepare('UPDATE jobs SET spec = ? WHERE scope = ? AND id = ?');
    this.#transition = db.prepare('INSERT INTO transitions (scope, id, at, state, attempts, delivered_turn, branch) VALUES (?, ?, ?, ?, ?, ?, ?)');
    this.#nextId = db.prepare('INSERT INTO scopes (scope, next_id) VALUES (?, ?) ON CONFLICT (scope) DO UPDATE SET next_id = max(next_id, excluded.next_id)');
    this.#pruner = new JobRowPruner(db, scope);
    this.#alert = db.prepare('INSERT INTO alerts (scope, job_id, number, severity, message, at) VALUES (?, ?, ?, ?, ?, ?)');
    this.#source = db.prepare('INSERT OR REPLACE INTO job_sources (scope, id, source) VALUES (?, ?, ?)');
    this.#putConversation = db.prepare('UPDATE jobs SET conversation = ? WHERE scope = ? AND id = ?');
    this.#messages = new SqliteMessages(db, scope);
  }

  putConversation(id: string, messages: readonly unknown[]): void {
    guardWrite(`job ${id}'s conversation`, () => this.#putConversation.run(JSON.stringify(messages), this.scope, id));
  }

  conversation(id: string): unknown[] | undefined {
    const row = guardRead(
      this.#file,
      () => this.#db.prepare('SELECT conversation FROM jobs WHERE scope = ? AND id = ?').get(this.scope, id) as { conversation: string | null } | undefined,
    );
    if (!row?.conversation) return undefined;
    // Checked, not trusted (as a row is): anything but an array is no conversation.
    const parsed = guardRead(this.#file, () => JSON.parse(row.conversation as string) as unknown);
    return Array.isArray(parsed) ? parsed : undefined;
  }

  putTranscript(id: string, transcript: StoredTranscript): void {
    guardWrite(`job ${id}'s transcript`, () =>
      this.#db.prepare('INSERT OR REPLACE INTO transcripts (scope, id, data) VALUES (?, ?, ?)').run(this.scope, id, JSON.stringify(transcript)),
    );
  }

  transcript(id: string): StoredTranscript | undefined {
    const row = guardRead(
      this.#file,
      () => this.#db.prepare('SELECT data FROM transcripts WHERE scope = ? AND id = ?').get(this.scope, id) as { data: string } | undefined,
    );
    if (!row) return undefined;
    const parsed = guardRead(this.#file, () => JSON.parse(row.data) as unknown);
    return isStoredTranscript(parsed) ? parsed : undefined;
  }

  dropTranscript(id: string): void {
    guardWrite(`drop job ${id}'s transcript`, () => this.#db.prepare('DELETE FROM transcripts WHERE scope = ? AND id = ?').run(this.scope, id));
  }

  claim(): void {
    this.#leases.claim(this.scope);
  }

  release(): void {
    this.#leases.release(this.scope);
  }

  putSource(id: string, source: string): void {
    guardWrite(`job ${id}'s source`, () => this.#source.run(this.scope, id, source));
  }

  sources(): Map<string, string> {
    const rows = guardRead(
      this.#file,
      () => this.#db.prepare('SELECT id, source FROM job_sources WHERE scope = ?').all(this.scope) as Array<{ id: string; source: string }>,
    );
    return new Map(rows.map((row) => [row.id, row.source]));
  }

  load(): { jobs: StoredJob[]; nextId: number; invalid: InvalidRow[] } {
    return guardRead(this.#file, () => this.#load());
  }

  #load(): { jobs: StoredJob[]; nextId: number; invalid: InvalidRow[] } {
    const rows = this.#db.prepare('SELECT id, position, record, spec FROM jobs WHERE scope = ? ORDER BY position').all(this.scope) as Array<{
      id: string;
      position: number;
      record: string;
      spec: string | null;
    }>;
    const next = this.#db.prepare('SELECT next_id AS nextId FROM scopes WHERE scope = ?').get(this.scope) as { nextId: number } | undefined;
    const jobs: StoredJob[] = [];
    const invalid: InvalidRow[] = [];
    const messages = this.#messages.load();
    for (const row of rows) {
      // Checked, not trusted: a row edited or broken on disk is reported (ledger-rows.ts), never run as it reads.
      const job = parseJobRow(row);
      if (isInvalidRow(job)) {
        invalid.push(job);
        continue;
      }
      this.#last.set(job.record.id, transitionKey(job.record));
      const sent = messages.get(job.record.id);
      jobs.push(sent ? { ...job, messages: sent } : job);
    }
    this.#writtenNextId = next?.nextId ?? 0;
    return { jobs, nextId: next?.nextId ?? 1, invalid };
  }

  put(record: Readonly<JobRecord>, position: number, nextId: number): void {
    const write = () => {
      const now = Date.now();
      this.#put.run({
        scope: this.scope,
        id: record.id,
        position,
        state: record.state,
        delivered: record.deliveredInTurn ?? null,
        now,
        record: JSON.stringify(record),
      });
      const key = transitionKey(record);
      if (this.#last.get(record.id) !== key) {
        if (this.#lastBefore && !this.#lastBefore.has(record.id)) this.#lastBefore.set(record.id, this.#last.get(record.id));
        this.#last.set(record.id, key);
        this.#transition.run(this.scope, record.id, now, record.state, record.attempts, record.deliveredInTurn ?? null, record.branch ?? null);
      }
      if (nextId > this.#writtenNextId) {
        this.#writtenNextId = nextId;
        this.#nextId.run(this.scope, nextId);
      }
    };
    // Already inside a transaction (a drain): join it; else one small transaction of its own.
    if (this.#db.inTransaction) guardWrite(`job ${record.id}`, write);
    else this.transaction(write);
  }

  putSpec(spec: StoredSpec): void {
    guardWrite(`job ${spec.id}'s spec`, () => this.#putSpec.run(JSON.stringify(spec), this.scope, spec.id));
  }

  forget(id: string): void {
    guardWrite(`forget job ${id}`, () => this.#pruner.forget(id));
    this.#last.delete(id);
  }

  putMessage(id: string, message: StoredMessage): void {
    guardWrite(`job ${id}'s message ${message.id}`, () => this.#messages.put(id, message));
  }

  putAlert(alert: StoredAlert): void {
    guardWrite(`job ${alert.jobId}'s alert`, () => this.#alert.run(this.scope, alert.jobId, alert.number, alert.severity, alert.message, alert.at));
  }

  /** A failed transaction (a write in it, or its commit) changes nothing, here either: `#last` and the written next id are put back. */
  transaction<T>(fn: () => T): T {
    if (this.#db.inTransaction) return fn();
    const nextIdBefore = this.#writtenNextId;
    this.#lastBefore = new Map();
    try {
      return guardWrite('transaction', () => this.#db.transaction(fn)());
    } catch (error) {
      for (const [id, key] of this.#lastBefore) {
        if (key === undefined) this.#last.delete(id);
        else this.#last.set(id, key);
      }
      this.#writtenNextId = nextIdBefore;
      throw error;
    } finally {
      this.#lastBefore = undefined;
    }
  }
}

function transitionKey(record: Readonly<JobRecord>): string {
  return `${record.state}/${record.attempts}/${record.deliveredInTurn ?? ''}`;
}
