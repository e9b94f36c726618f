/**
 * How the SQLite ledger's reads and writes fail: a read SQLite cannot do is a ConfigError naming
 * `ledger.path` (as at open), a failed write a typed LedgerWriteError with SQLite's error as its
 * cause. Anything else is rethrown as it is.
 */
import { ConfigError, LedgerWriteError, errorMessage } from '../../shared/errors.js';

/** A ledger file SQLite cannot read (garbage bytes, a corrupt page): a ConfigError naming `ledger.path`, as at open. */
export function unreadable(file: string, error: unknown): ConfigError {
  const code = sqliteCode(error);
  return new ConfigError([
    {
      field: 'ledger.path',
      expected: 'a forkpool ledger SQLite can read',
      received: `${JSON.stringify(file)} (${errorMessage(error)}${code ? ` [${code}]` : ''})`,
    },
  ]);
}

export function sqliteCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE_') ? code : undefined;
}

/** Runs a read; SQLite's failure becomes {@link unreadable}. */
export function guardRead<T>(file: string, read: () => T): T {
  try {
    return read();
  } catch (error) {
    if (sqliteCode(error) === undefined && !(error instanceof SyntaxError)) throw error;
    throw unreadable(file, error);
  }
}

/**
 * Runs a write; SQLite's failure (disk full, I/O error, read-only) becomes a typed
 * {@link LedgerWriteError} with SQLite's error as its cause. Anything else is rethrown as it is.
 */
export function guardWrite<T>(operation: string, write: () => T): T {
  try {
    return write();
  } catch (error) {
    if (error instanceof LedgerWriteError || sqliteCode(error) === undefined) throw error;
    throw new LedgerWriteError(operation, error);
  }
}
