/**
 * SQLite for the durable ledger: Node's built-in `node:sqlite` (`DatabaseSync`), behind the
 * small synchronous API the store and the lease use (prepare/run/get/all, exec, pragma,
 * transactions). Nothing is compiled or downloaded at install, and nothing is rebuilt per Node
 * ABI. Loaded on first use (`createRequire`), so a process that keeps its ledger in memory
 * never loads it, and only Node 22's "SQLite is an experimental feature" warning is silenced
 * (Node 24 and 26 print none).
 */
import { createRequire } from 'node:module';
import type { DatabaseSync, StatementSync } from 'node:sqlite';

type SqliteModule = typeof import('node:sqlite');
/** One bound parameter: a value, or a record of named ones. */
type Params = unknown;

let loaded: SqliteModule | undefined;

/** True for the one warning Node 22 emits when `node:sqlite` loads. */
function isSqliteExperimentalWarning(warning: string | Error, rest: unknown[]): boolean {
  const message = typeof warning === 'string' ? warning : warning.message;
  const type = typeof warning === 'string' ? (typeof rest[0] === 'string' ? rest[0] : (rest[0] as { type?: unknown } | undefined)?.type) : warning.name;
  return type === 'ExperimentalWarning' && /\bSQLite\b/.test(message);
}

function sqlite(): SqliteModule {
  if (loaded) return loaded;
  // eslint-disable-next-line @typescript-eslint/unbound-method -- kept to be put back below, and called with .call(this, …)
  const emitWarning = process.emitWarning;
  // Node emits the warning synchronously while the module loads: only that one is dropped.
  process.emitWarning = function (this: NodeJS.Process, warning: string | Error, ...rest: unknown[]) {
    if (isSqliteExperimentalWarning(warning, rest)) return;
    return (emitWarning as (...args: unknown[]) => void).call(this, warning, ...rest);
  };
  try {
    loaded = createRequire(import.meta.url)('node:sqlite') as SqliteModule;
  } finally {
    process.emitWarning = emitWarning;
  }
  return loaded;
}

/** SQLite's primary result codes by number (the low byte of an extended code). */
const PRIMARY_CODES: Record<number, string> = {
  1: 'SQLITE_ERROR',
  2: 'SQLITE_INTERNAL',
  3: 'SQLITE_PERM',
  4: 'SQLITE_ABORT',
  5: 'SQLITE_BUSY',
  6: 'SQLITE_LOCKED',
  7: 'SQLITE_NOMEM',
  8: 'SQLITE_READONLY',
  9: 'SQLITE_INTERRUPT',
  10: 'SQLITE_IOERR',
  11: 'SQLITE_CORRUPT',
  12: 'SQLITE_NOTFOUND',
  13: 'SQLITE_FULL',
  14: 'SQLITE_CANTOPEN',
  15: 'SQLITE_PROTOCOL',
  16: 'SQLITE_EMPTY',
  17: 'SQLITE_SCHEMA',
  18: 'SQLITE_TOOBIG',
  19: 'SQLITE_CONSTRAINT',
  20: 'SQLITE_MISMATCH',
  21: 'SQLITE_MISUSE',
  22: 'SQLITE_NOLFS',
  23: 'SQLITE_AUTH',
  24: 'SQLITE_FORMAT',
  25: 'SQLITE_RANGE',
  26: 'SQLITE_NOTADB',
};
/** The extended codes forkpool's tests and reports name. */
const EXTENDED_CODES: Record<number, string> = {
  1811: 'SQLITE_CONSTRAINT_TRIGGER',
  1555: 'SQLITE_CONSTRAINT_PRIMARYKEY',
  2067: 'SQLITE_CONSTRAINT_UNIQUE',
  778: 'SQLITE_IOERR_WRITE',
  266: 'SQLITE_IOERR_READ',
};

/** An error of SQLite's with its result code as `code` (`SQLITE_FULL`, …), as the store reports it. */
export class SqliteError extends Error {
  readonly code: string;
  constructor(message: string, code: string, options: { cause: unknown }) {
    super(message, options);
    this.name = 'SqliteError';
    this.code = code;
  }
}

/** node:sqlite throws `ERR_SQLITE_ERROR` with a numeric `errcode`: rethrown with SQLite's code name. */
function translate(error: unknown): unknown {
  const raw = error as { code?: unknown; errcode?: unknown; message?: unknown } | null;
  if (raw?.code !== 'ERR_SQLITE_ERROR' || typeof raw.errcode !== 'number') return error;
  const code = EXTENDED_CODES[raw.errcode] ?? PRIMARY_CODES[raw.errcode & 0xff] ?? `SQLITE_${raw.errcode}`;
  return new SqliteError(String(raw.message), code, { cause: error });
}

function guarded<T>(fn: () => T): T {
  try {
    return fn();
  } catch (error) {
    throw translate(error);
  }
}

/** Rows as plain objects (node:sqlite's have a null prototype). */
function plain(row: unknown): unknown {
  return row === undefined || row === null ? row : { ...row };
}

function bind(params: readonly Params[]): unknown[] {
  return params as unknown[];
}

export class SqliteStatement {
  readonly #statement: StatementSync;
  constructor(statement: StatementSync) {
    this.#statement = statement;
  }
  run(...params: Params[]): { changes: number; lastInsertRowid: number } {
    return guarded(() => {
      const result = (this.#statement.run as (...p: unknown[]) => { changes: number | bigint; lastInsertRowid: number | bigint })(...bind(params));
      return { changes: Number(result.changes), lastInsertRowid: Number(result.lastInsertRowid) };
    });
  }
  get(...params: Params[]): unknown {
    return guarded(() => plain((this.#statement.get as (...p: unknown[]) => unknown)(...bind(params))));
  }
  all(...params: Params[]): unknown[] {
    return guarded(() => (this.#statement.all as (...p: unknown[]) => unknown[])(...bind(params)).map(plain));
  }
}

/** One connection to a SQLite file, with better-sqlite3-style transactions (nested ones as savepoints). */
export class SqliteDatabase {
  readonly #db: DatabaseSync;
  #depth = 0;

  constructor(file: string) {
    const { DatabaseSync } = sqlite();
    this.#db = guarded(() => new DatabaseSync(file));
  }

  get inTransaction(): boolean {
    return this.#depth > 0;
  }

  exec(source: string): void {
    guarded(() => this.#db.exec(source));
  }

  prepare(source: string): SqliteStatement {
    return new SqliteStatement(guarded(() => this.#db.prepare(source)));
  }

  /** `PRAGMA source`, its rows; `simple`: the first column of the first row. */
  pragma(source: string, options: { simple?: boolean } = {}): unknown {
    const rows = this.prepare(`PRAGMA ${source}`).all() as Record<string, unknown>[];
    return options.simple ? Object.values(rows[0] ?? {})[0] : rows;
  }

  /** `fn` in a transaction (`BEGIN`, or `BEGIN IMMEDIATE` with `.immediate()`): committed when it returns, rolled back when it throws. */
  transaction<T>(fn: () => T): (() => T) & { immediate(): T } {
    const run = (begin: string) => (): T => {
      const savepoint = this.#depth > 0 ? `forkpool_${this.#depth}` : undefined;
      this.exec(savepoint ? `SAVEPOINT ${savepoint}` : begin);
      this.#depth += 1;
      try {
        const result = fn();
        this.exec(savepoint ? `RELEASE ${savepoint}` : 'COMMIT');
        return result;
      } catch (error) {
        // A failed COMMIT (a full disk) leaves the transaction open: roll it back too.
        try {
          this.exec(savepoint ? `ROLLBACK TO ${savepoint}; RELEASE ${savepoint}` : 'ROLLBACK');
        } catch {
          // SQLite already rolled it back (some errors do); nothing is left open.
        }
        throw error;
      } finally {
        this.#depth -= 1;
      }
    };
    return Object.assign(run('BEGIN'), { immediate: run('BEGIN IMMEDIATE') });
  }

  close(): void {
    guarded(() => this.#db.close());
  }
}
