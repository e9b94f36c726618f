/**
 * The fan-out's failures, watched as jobs end: counted by cause (a line on stderr the first
 * time a cause is seen, and at 10, 100, 1,000… of it), and a circuit breaker that trips after
 * `maxConsecutive` failures in a row of a kind every job shares — the endpoint refuses
 * connections, its name does not resolve, its certificate is refused, the key is refused — so a
 * fan-out against a dead or misconfigured endpoint stops early instead of failing every line.
 * Pure bookkeeping: the fan-out decides what to do when it trips.
 */
import type { SerializedError } from '../shared/errors.js';
import type { JobStatus } from '../main/ledger/ledger.js';
import { oneLine } from '../main/views/terminal-lines.js';
import { FANOUT_MAX_CONSECUTIVE_FAILURES } from '../shared/defaults.js';

/** Failures in a row of one shared kind before `fanout` stops starting jobs (`--max-consecutive-failures`). */
export const DEFAULT_MAX_CONSECUTIVE_FAILURES = FANOUT_MAX_CONSECUTIVE_FAILURES;

/** A failure every job against the same endpoint would meet: no point in starting more. */
export type SharedFailureKind = 'connection' | 'auth';

/** What `record` saw of one job's ending. */
export interface JobEndingSeen {
  status?: JobStatus | undefined;
  error?: Pick<SerializedError, 'code' | 'message'> | undefined;
}

/** Endings counted as failures (`error` is the job's own answer, not a failure). */
const FAILURE_STATUSES: ReadonlySet<JobStatus> = new Set(['failed', 'cancelled', 'timed_out']);

/** The retry count changes from job to job; the cause after it does not. */
const ATTEMPTS_PREFIX = /^model request failed after \d+ attempt\(s\):\s*/;

const CONNECTION = /ECONNREFUSED|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH|connection error|certificate|CERT_|\bTLS\b|\bSSL\b|self[- ]signed/i;
const AUTH = /\bHTTP 40[13]\b|\b40[13]\b.*(?:unauthori[sz]ed|forbidden|api key)|invalid api key|incorrect api key/i;

/**
 * A failed job's cause in one line: its error's first line, without the retry count, and its
 * code (`connection error: ECONNREFUSED 127.0.0.1:9 [MODEL_REQUEST_FAILED]`). Undefined when
 * the ending is not a failure.
 */
export function failureCause(job: JobEndingSeen): string | undefined {
  if (job.status === undefined || !FAILURE_STATUSES.has(job.status)) return undefined;
  if (!job.error) return job.status;
  const firstLine = job.error.message.split('\n', 1)[0] ?? '';
  return `${oneLine(firstLine.replace(ATTEMPTS_PREFIX, ''), 200)} [${job.error.code}]`;
}

/** Whether a cause is one every job against this endpoint shares (see {@link SharedFailureKind}). */
export function sharedKind(cause: string): SharedFailureKind | undefined {
  if (!cause.includes('[MODEL_REQUEST_FAILED]')) return undefined;
  if (AUTH.test(cause)) return 'auth';
  if (CONNECTION.test(cause)) return 'connection';
  return undefined;
}

/** What to check, per kind, said with the breaker's line. */
const ADVICE: Record<SharedFailureKind, string> = {
  connection: 'check --base-url (or OPENAI_BASE_URL) and that the model server is up',
  auth: 'check the API key (OPENAI_API_KEY or the config) and that it may use this model',
};

/** The counts shown as they happen: the first of a cause, then each power of ten. */
function isMilestone(count: number): boolean {
  return count === 1 || (count >= 10 && /^10*$/.test(String(count)));
}

export class FailureWatch {
  readonly #maxConsecutive: number;
  readonly #byCause = new Map<string, number>();
  #streak: { kind: SharedFailureKind; cause: string; count: number } | undefined;
  #tripped: string | undefined;

  /** `maxConsecutive`: 0 switches the breaker off (failures are still counted by cause). */
  constructor(maxConsecutive: number) {
    this.#maxConsecutive = maxConsecutive;
  }

  /**
   * One job ended, in the order they end. Returns the line to print now, if any: a cause's
   * running count, or (once) the breaker's reason for stopping.
   */
  record(job: JobEndingSeen): { note?: string; tripped?: string } {
    const cause = failureCause(job);
    if (cause === undefined) {
      // Anything that got through (an answer, even an `error` one): the endpoint works.
      this.#streak = undefined;
      return {};
    }
    const count = (this.#byCause.get(cause) ?? 0) + 1;
    this.#byCause.set(cause, count);
    const note = isMilestone(count) ? `${count} failed: ${cause}` : undefined;
    const kind = sharedKind(cause);
    this.#streak = kind === undefined ? undefined : { kind, cause, count: this.#streak?.kind === kind ? this.#streak.count + 1 : 1 };
    if (this.#tripped === undefined && this.#maxConsecutive > 0 && this.#streak && this.#streak.count >= this.#maxConsecutive) {
      this.#tripped = `${this.#streak.count} jobs in a row failed with ${this.#streak.cause}: ${ADVICE[this.#streak.kind]}`;
      return { ...(note !== undefined ? { note } : {}), tripped: this.#tripped };
    }
    return note !== undefined ? { note } : {};
  }

  /** The breaker's reason, once it tripped. */
  get tripped(): string | undefined {
    return this.#tripped;
  }

  /** Failures by cause, most frequent first. */
  causes(): Array<{ cause: string; count: number }> {
    return [...this.#byCause].map(([cause, count]) => ({ cause, count })).sort((a, b) => b.count - a.count);
  }
}
