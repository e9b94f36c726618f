/**
 * The fan-out's closing words: the summary line on stderr (counts, failures by cause, why it
 * stopped early), and with `--json` the same as one `{"type":"summary"}` record, the last line
 * on stdout. Every stdout line under `--json` carries a `type`: `result` (a job's ending),
 * `refused` (a line the manager refused), `retry` (a job's model call waits to try again), `summary`.
 */
import type { JobStatus } from '../main/ledger/ledger.js';

/** Every `type` a `fanout --json` stdout line may have. */
export const FANOUT_LINE_TYPES = ['result', 'refused', 'retry', 'summary'] as const;
export type FanoutLineType = (typeof FANOUT_LINE_TYPES)[number];

export const SUMMARY_STATUSES: readonly JobStatus[] = ['ok', 'partial', 'error', 'failed', 'cancelled', 'timed_out', 'deferred'];

/** Endings that make `fanout` exit 1 (with refused or invalid lines). `error` is the job's own answer. */
const FAILED_STATUSES: ReadonlySet<JobStatus> = new Set(['failed', 'cancelled', 'timed_out']);

/** Jobs that ended failed, cancelled or timed out. */
export function countFailed(tally: Record<JobStatus, number>): number {
  let n = 0;
  for (const status of FAILED_STATUSES) n += tally[status];
  return n;
}

export interface FanoutSummary {
  tally: Record<JobStatus, number>;
  refused: number;
  invalid: number;
  /** Jobs that posted `started` in this run. */
  started: number;
  seconds: number;
  hardStopped: number;
  ledgerProblems: number;
  /** Stopped by this stop before they ended: `--resume` runs them. */
  interrupted: number;
  causes: Array<{ cause: string; count: number }>;
  /** The circuit breaker's reason, when it stopped the fan-out. */
  stoppedEarly?: string | undefined;
  /** Queued jobs the breaker kept from starting. */
  notStarted: number;
  /** The last input line a job was made for (the breaker stops there). */
  lastLine: number;
  /** Whether a ledger keeps the fan-out (`--resume` can continue it). */
  resumable: boolean;
  exitCode: number;
}

/** The human lines on stderr: why it stopped early (if so), the counts, then failures by cause. */
export function summaryText(s: FanoutSummary): string[] {
  const lines: string[] = [];
  if (s.stoppedEarly !== undefined) {
    const next = s.resumable ? 'run the same command with --resume to continue with the jobs not run' : 'give --ledger FILE next time to be able to --resume';
    lines.push(
      `forkpool fanout: stopped early: ${s.stoppedEarly}; ${s.started} job(s) started, ${s.notStarted} queued job(s) not started, input read up to line ${s.lastLine}; ${next}`,
    );
  }
  // `deferred` (a job's exit_on_defer scheduler) only when some job ended so: the line stays as it was otherwise.
  const counts = SUMMARY_STATUSES.filter((status) => status !== 'deferred' || s.tally[status] > 0)
    .map((status) => `${s.tally[status]} ${status}`)
    .join(', ');
  lines.push(
    `fanout: ${counts}, ${s.refused} refused, ${s.invalid} invalid line(s), ${s.seconds.toFixed(1)}s` +
      `${s.hardStopped ? `, ${s.hardStopped} hard-stopped` : ''}${s.ledgerProblems ? `, ${s.ledgerProblems} ledger problem(s)` : ''}` +
      `${s.interrupted ? `, ${s.interrupted} interrupted (--resume runs them)` : ''}`,
  );
  // Below the one summary line, as `tokens:` is: what the failures were, most frequent first.
  if (s.causes.length > 0) lines.push('failures by cause:', ...s.causes.map(({ cause, count }) => `  ${count} failed: ${cause}`));
  return lines;
}

/** The closing `--json` record. */
export function summaryRecord(s: FanoutSummary): Record<string, unknown> {
  return {
    type: 'summary' satisfies FanoutLineType,
    ...s.tally,
    refused: s.refused,
    invalid: s.invalid,
    interrupted: s.interrupted,
    started: s.started,
    notStarted: s.notStarted,
    hardStopped: s.hardStopped,
    ledgerProblems: s.ledgerProblems,
    failuresByCause: s.causes,
    stoppedEarly: s.stoppedEarly ?? null,
    seconds: Number(s.seconds.toFixed(3)),
    exitCode: s.exitCode,
  };
}
