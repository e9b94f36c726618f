import { z } from 'zod';
import { AbortError, JobError } from '../../shared/errors.js';
import { WAIT_LIMITS } from '../../shared/fixed-limits.js';
import type { JobRecord } from '../ledger/ledger.js';

export const WAIT_MODES = ['all', 'any'] as const;
/** `all`: until every job named has ended; `any`: until the first of them has. */
export type WaitMode = (typeof WAIT_MODES)[number];

/** How ParentControls.wait waits. */
export interface WaitOptions {
  /** The longest wait, in ms: 0 looks without waiting; at most {@link WAIT_LIMITS}.maxTimeoutMs (one hour). */
  timeoutMs: number;
  /** Default `all`. */
  mode?: WaitMode;
  /** Aborting it ends the wait at once: the promise rejects with `ABORTED` (its reason as the cause). */
  signal?: AbortSignal;
}

/** What a wait found when it ended. */
export interface WaitOutcome {
  /** The jobs waited for that have ended, in the order they were named, as their records now. */
  ended: Readonly<JobRecord>[];
  /** Those that had not ended (queued, running, or waiting for their children). */
  running: Readonly<JobRecord>[];
  /** The timeout passed before the mode was satisfied. */
  timedOut: boolean;
  /** How long it waited, in ms. */
  waitedMs: number;
}

/** What a wait needs of the manager: ids by id or name, records, and each job's end. */
export interface WaitHost {
  /** The id of the job with this id or name, if there is one. */
  idOf(idOrName: string): string | undefined;
  get(id: string): Readonly<JobRecord> | undefined;
  /** Subscribes to every job's end; returns the unsubscribe. */
  onDone(listener: (record: Readonly<JobRecord>) => void): () => void;
}

const waitSchema = z.strictObject({
  jobs: z.array(z.string().trim().min(1).max(100)).min(1, 'name at least one job').max(WAIT_LIMITS.maxJobs),
  timeoutMs: z.number().int().min(0).max(WAIT_LIMITS.maxTimeoutMs),
  mode: z.enum(WAIT_MODES).optional(),
});

/**
 * Waits until the jobs named (ids or names) have ended — all of them, or the first with `any` —
 * or the timeout passes, or the signal aborts. Checked before anything waits: a bad option is
 * `TOOL_ARGUMENTS_INVALID` (naming it), an unknown job `JOB_UNKNOWN` (naming it). The wait
 * reads the ledger when it ends (never its own list), so a job that ended before the call
 * counts as ended. Delivering what ended is the caller's (see src/main/delivery/waited-results.ts).
 */
export async function waitForJobs(host: WaitHost, jobs: readonly string[], options: WaitOptions): Promise<WaitOutcome> {
  const parsed = waitSchema.safeParse({ jobs, timeoutMs: options.timeoutMs, mode: options.mode });
  if (!parsed.success) throw new JobError('TOOL_ARGUMENTS_INVALID', '-', `invalid wait: ${z.prettifyError(parsed.error)}`);
  const ids: string[] = [];
  for (const name of parsed.data.jobs) {
    const id = host.idOf(name);
    if (id === undefined) throw new JobError('JOB_UNKNOWN', name, `no background job with id or name "${name}"; nothing was waited for`);
    if (!ids.includes(id)) ids.push(id);
  }
  const { signal } = options;
  if (signal?.aborted) throw new AbortError(signal.reason);
  const mode = parsed.data.mode ?? 'all';
  const startedAt = performance.now();
  const hasEnded = (id: string) => (host.get(id)?.state ?? 'ended') === 'ended';
  const satisfied = () => (mode === 'any' ? ids.some(hasEnded) : ids.every(hasEnded));

  let timedOut = false;
  if (!satisfied()) {
    let timer: NodeJS.Timeout | undefined;
    let offDone = () => {};
    let onAbort = () => {};
    try {
      timedOut = await new Promise<boolean>((resolve, reject) => {
        // Subscribed before the timer: an ending in between is seen, never missed.
        offDone = host.onDone((record) => {
          if (ids.includes(record.id) && satisfied()) resolve(false);
        });
        timer = setTimeout(() => resolve(true), parsed.data.timeoutMs);
        onAbort = () => reject(new AbortError(signal?.reason));
        signal?.addEventListener('abort', onAbort, { once: true });
      });
    } finally {
      clearTimeout(timer);
      offDone();
      signal?.removeEventListener('abort', onAbort);
    }
  }
  const records = ids.flatMap((id) => host.get(id) ?? []);
  const elapsedMs = performance.now() - startedAt;
  return {
    ended: records.filter((r) => r.state === 'ended'),
    running: records.filter((r) => r.state !== 'ended'),
    timedOut,
    // A timer can fire up to a millisecond before its delay by this clock (libuv's loop time is
    // whole milliseconds): a wait the timeout ended says it waited the timeout, never less.
    waitedMs: Math.round(timedOut ? Math.max(elapsedMs, parsed.data.timeoutMs) : elapsedMs),
  };
}
