/**
 * `fanout --ledger FILE [--resume]`: the fan-out's jobs in a durable ledger, each tied to its
 * input line and a digest of its task text, so a fan-out killed at any point
 * (SIGKILL included) is continued: tasks that finished are printed from the ledger, not run
 * again, and only the rest run. On resume the ledger is checked before anything is trusted: a
 * line whose job row is missing, fails its check, or no longer matches its digest (an edited
 * row) is reported and run again; a job tied to no line is reported and dropped.
 */
import { createHash } from 'node:crypto';
import type { ForkpoolConfig } from '../shared/config.js';
import type { JobStore, LedgerStore } from '../main/ledger/ledger-store.js';
import { openSqliteLedger } from '../main/ledger/sqlite-store.js';

/** The ledger scope a fan-out writes (one fan-out per ledger file). */
export const FANOUT_SCOPE = 'fanout';

/** An input line's task; the digest of its text is stored with the line. */
export interface LineTask {
  line: number;
  task: string;
}

export interface FanoutLedger {
  store: LedgerStore;
  jobs: JobStore;
  /** The input line of a job in the ledger. */
  lineOf(id: string): number | undefined;
  /** Input lines that already have a checked job in the ledger: not spawned again. */
  hasLine(line: number): boolean;
  /** The problem when `task` (the input line read now) is not the task the ledger ran for its line. */
  inputMismatch(task: LineTask): string | undefined;
  /** What the resume check found in the ledger, one line each (empty: all of it checked out). */
  findings: string[];
  /** Books `spawn` and the job's input line in one transaction: a job is never in the ledger without its line. */
  spawnForLine<T extends { id: string }>(task: LineTask, spawn: () => T): T;
  close(): void;
}

/** The digest stored with a line's job: of its task text, the part a job's answer is about. */
export function taskDigest(task: string): string {
  return createHash('sha256').update(task).digest('hex');
}

/** `line:N:<sha256>` (older ledgers: `line:N`, no digest). */
function parseSource(source: string): { line: number; digest: string | undefined } | undefined {
  const match = /^line:(\d+)(?::([0-9a-f]{64}))?$/.exec(source);
  return match ? { line: Number(match[1]), digest: match[2] } : undefined;
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
  const sources = jobs.sources();
  const tied = [...sources.values()].filter((source) => source.startsWith('line:')).length;
  if (!resume && tied > 0) {
    store.close();
    return {
      problem: `the ledger ${JSON.stringify(file)} already holds a fan-out (${tied} task(s)); pass --resume to continue it, or give another --ledger file`,
    };
  }
  const { lines, digests, findings } = checkLedger(jobs, sources);
  const recorded = new Set(lines.values());
  return {
    store,
    jobs,
    findings,
    lineOf: (id) => lines.get(id),
    hasLine: (line) => recorded.has(line),
    inputMismatch: (task) => {
      const digest = digests.get(task.line);
      if (digest === undefined || digest === taskDigest(task.task)) return undefined;
      return `line ${task.line}: the input line is not the task the ledger ran for it (changed since?); the ledger's result is kept and the line is not run again`;
    },
    spawnForLine: (task, spawn) =>
      jobs.transaction(() => {
        const handle = spawn();
        const digest = taskDigest(task.task);
        jobs.putSource(handle.id, `line:${task.line}:${digest}`);
        lines.set(handle.id, task.line);
        digests.set(task.line, digest);
        recorded.add(task.line);
        return handle;
      }),
    close: () => store.close(),
  };
}

/**
 * The resume check, before a manager recovers anything: every line's job must be there, pass
 * its row check and match the digest stored with its line. One that does not is reported, its
 * row dropped and its line left to run again; so is a job (not a child job) tied to no line.
 */
function checkLedger(jobs: JobStore, sources: Map<string, string>): { lines: Map<string, number>; digests: Map<number, string>; findings: string[] } {
  const lines = new Map<string, number>();
  const digests = new Map<number, string>();
  const findings: string[] = [];
  if (sources.size === 0) return { lines, digests, findings };
  const stored = jobs.load();
  const records = new Map(stored.jobs.map((job) => [job.record.id, job.record]));
  const invalid = new Map(stored.invalid.map((row) => [row.id, row.problem]));
  const rejected: Array<{ id: string; reason: string; hasRow: boolean }> = [];
  for (const [id, source] of sources) {
    if (source.startsWith('rejected:')) continue;
    const parsed = parseSource(source);
    if (!parsed) {
      rejected.push({ id, reason: `its line is unreadable (found ${JSON.stringify(source.slice(0, 80))})`, hasRow: records.has(id) || invalid.has(id) });
      continue;
    }
    const record = records.get(id);
    const where = `line ${parsed.line}: job ${id}`;
    if (invalid.has(id)) rejected.push({ id, reason: `${where} failed its check: ${invalid.get(id)}`, hasRow: true });
    else if (!record) rejected.push({ id, reason: `${where} is missing from the ledger (its row was deleted)`, hasRow: false });
    // Retention cut the task of a long-delivered record: only what it kept can be compared, so it is not.
    else if (parsed.digest !== undefined && !record.resultDropped && taskDigest(record.task) !== parsed.digest) {
      rejected.push({ id, reason: `${where} does not match the task stored with its line (its row was edited)`, hasRow: true });
    } else {
      lines.set(id, parsed.line);
      if (parsed.digest !== undefined) digests.set(parsed.line, parsed.digest);
    }
  }
  for (const record of records.values()) {
    if (record.parentJobId === undefined && !sources.has(record.id))
      rejected.push({ id: record.id, reason: `job ${record.id} is tied to no input line (its line row was deleted)`, hasRow: true });
  }
  const rerun = rejected.map((r) => r.reason);
  if (rejected.length > 0) {
    jobs.transaction(() => {
      for (const { id, reason, hasRow } of rejected) {
        if (hasRow) jobs.forget(id);
        if (sources.has(id)) jobs.putSource(id, `rejected: ${reason}`);
      }
    });
  }
  for (const reason of rerun) findings.push(`${reason}; not trusted: dropped, and its input line runs again`);
  return { lines, digests, findings };
}
