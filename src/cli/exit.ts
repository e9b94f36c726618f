/**
 * What the CLI's entry (index.ts) needs before any command runs: exit codes, flag parsers and the
 * error report. Kept apart from common.ts, which loads the config, logger and simulator, so that
 * `forkpool --version` or `--help` loads none of them (test/package/light-import.test.ts).
 */
import { InvalidArgumentError } from 'commander';
import { ConfigError, ForkpoolError } from '../shared/errors.js';

/** Exit codes: 2 for bad usage or config (and a ledger scope another process holds), 130/143 for SIGINT/SIGTERM. */
export const EXIT = { ok: 0, failure: 1, usage: 2, sigint: 130, sigterm: 143 } as const;

/** Bad usage the person can fix (a missing input file, a workspace that is not a folder): exit 2, one line. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

export function parseIntFlag(name: string, min = 0, max = Number.MAX_SAFE_INTEGER) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < min || n > max) {
      const range = max === Number.MAX_SAFE_INTEGER ? `>= ${min}` : `from ${min} to ${max}`;
      throw new InvalidArgumentError(`${name} expects a whole number ${range}, received "${value}"`);
    }
    return n;
  };
}

export function parsePositiveNumber(name: string) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError(`${name} expects a number > 0, received "${value}"`);
    return n;
  };
}

/** `--json` on the command line: each error is also one JSON line on stdout, for the script reading it. */
let errorsAsJson = false;

/** Set by the CLI's entry from its arguments (`--json` before any `--`). */
export function reportErrorsAsJson(on: boolean): void {
  errorsAsJson = on;
}

/** The JSON line of an error: `{"type":"error","code","message","exitCode"}` and, for a config error, its issues. */
export function errorJsonLine(code: string, message: string, exitCode: number, issues?: readonly unknown[]): void {
  if (errorsAsJson) process.stdout.write(`${JSON.stringify({ type: 'error', code, message, exitCode, ...(issues ? { issues } : {}) })}\n`);
}

/** A usage problem a command found itself: its line on stderr (and JSON line under --json); exit 2. */
export function usageProblem(command: string, message: string): number {
  process.stderr.write(`forkpool ${command}: ${message}\n`);
  errorJsonLine('USAGE', `${command}: ${message}`, EXIT.usage);
  return EXIT.usage;
}

/** Prints an error the way a person can act on it, and returns the exit code it deserves. */
export function reportError(error: unknown): number {
  if (error instanceof UsageError) {
    process.stderr.write(`forkpool: ${error.message}\n`);
    errorJsonLine('USAGE', error.message, EXIT.usage);
    return EXIT.usage;
  }
  if (error instanceof ConfigError) {
    process.stderr.write(
      `forkpool: invalid configuration\n${error.message
        .split('\n')
        .map((l) => `  ${l}`)
        .join('\n')}\n`,
    );
    errorJsonLine(error.code, error.message, EXIT.usage, error.issues);
    return EXIT.usage;
  }
  if (error instanceof ForkpoolError) {
    process.stderr.write(`forkpool: ${error.message} [${error.code}]\n`);
    // Another process owns the ledger scope, or `--resume` names a session it does not hold: like a
    // usage error, the person picks another file or id, or waits.
    const exitCode = error.code === 'LEDGER_BUSY' || error.code === 'SESSION_UNKNOWN' ? EXIT.usage : EXIT.failure;
    errorJsonLine(error.code, error.message, exitCode);
    return exitCode;
  }
  // A system call's refusal (a port not available, a file not readable) is the person's to fix, not a bug: its message, no stack.
  const system = error as NodeJS.ErrnoException;
  if (error instanceof Error && typeof system.syscall === 'string' && typeof system.code === 'string') {
    process.stderr.write(`forkpool: ${oneLineMessage(error.message)} [${system.code}]\n`);
    errorJsonLine(system.code, error.message, EXIT.failure);
    return EXIT.failure;
  }
  process.stderr.write(`forkpool: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  errorJsonLine('INTERNAL', error instanceof Error ? error.message : String(error), EXIT.failure);
  return EXIT.failure;
}

function oneLineMessage(message: string): string {
  return message.replace(/\s*\n\s*/g, ' ');
}
