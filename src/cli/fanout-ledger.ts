/**
 * `fanout --ledger FILE [--resume]`: the fan-out's jobs in a durable ledger, each tied to its
 * input line, so a fan-out killed at any point (SIGKILL included) is continued: tasks that
 * finished are printed from the ledger, not run again, and only the rest run.
 */
import type { ForkpoolConfig } from '../shared/config.js';
import type { JobStore, LedgerStore } from '../main/ledger-store.js';
import { openSqliteLedger } from '../main/sqlite-store.js';

/** The ledger scope a fan-out writes (one fan-out per ledger file). */
export const FANOUT_SCOPE = 'fanout';

export interface FanoutLedger {
  store: LedgerStore;
  jobs: JobStore;
  /** The input line of a job in the ledger. */
  lineOf(id: string): number | undefined;
  /** Input lines that already have a job in the ledger: not spawned again. */
  hasLine(line: number): boolean;
  /** Books `spawn` and the job's input line in one transaction: a job is never in the ledger without its line. */
  spawnForLine<T extends { id: string }>(line: number, spawn: () => T): T;
  close(): void;
}

/** Opens the fan-out's ledger, or returns the usage problem (an existing fan-out without `--resume`). */
export function openFanoutLedger(config: ForkpoolConfig, resume: boolean): FanoutLedger | { problem: string } {
  const file = config.ledger.path as string;
  const store = openSqliteLedger(file, { synchronous: config.ledger.synchronous, leaseStaleMs: config.ledger.leaseStaleMs });
  const jobs = store.jobs(FANOUT_SCOPE);
  try {
    // Before anything is read: a second fan-out on this ledger is refused (LEDGER_BUSY), never run beside this one.
    jobs.claim();
  } catch (error) {
    store.close();
    throw error;
  }
  const lines = new Map<string, number>();
  for (const [id, source] of jobs.sources()) lines.set(id, Number(source.replace(/^line:/, '')));
  if (!resume && lines.size > 0) {
    store.close();
    return { problem: `the ledger ${JSON.stringify(file)} already holds a fan-out (${lines.size} task(s)); pass --resume to continue it, or give another --ledger file` };
  }
  const recorded = new Set(lines.values());
  return {
    store,
    jobs,
    lineOf: (id) => lines.get(id),
    hasLine: (line) => recorded.has(line),
    spawnForLine: (line, spawn) =>
      jobs.transaction(() => {
        const handle = spawn();
        jobs.putSource(handle.id, `line:${line}`);
        lines.set(handle.id, line);
        recorded.add(line);
        return handle;
      }),
    close: () => store.close(),
  };
}
