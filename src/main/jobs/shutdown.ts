import { settlesWithin } from '../../shared/abort.js';
import { TIMINGS } from '../../shared/fixed-limits.js';
import { JobError } from '../../shared/errors.js';
import type { Attempt } from '../executors/attempt.js';
import type { CloseReport } from './manager-api.js';

/** `drain`: running jobs may finish; `cancel`: they are asked to stop; `hard`: they are stopped now. */
export type CloseHow = 'drain' | 'cancel' | 'hard';

/** What shutting down needs of the manager. */
export interface ShutdownHost {
  /** Jobs not running: queued, or parents waiting for their children. */
  waiting(): string[];
  /** The attempts running now (read afresh at each step). */
  live(): Attempt[];
  /** Cancels one job (at once when queued, in two phases when running). */
  stop(id: string): void;
  onIdle(): Promise<void>;
  /** Closes the executor when the manager owns it. */
  closeExecutor(): Promise<void>;
}

/**
 * The manager's close(): cancels what waits, stops (or drains) what runs, waits up to
 * `timeoutMs`, hard-stops stragglers, closes the executor it owns, and ends any job whose
 * ending never arrived, so none is lost and no thread of its own is left.
 */
export async function shutDown(how: CloseHow, timeoutMs: number, host: ShutdownHost): Promise<CloseReport> {
  const report: CloseReport = { cancelled: [], stragglers: [] };
  for (const id of host.waiting()) {
    host.stop(id);
    report.cancelled.push(id);
  }
  const deadline = settlesWithin(host.onIdle(), timeoutMs);
  for (const attempt of how === 'drain' ? [] : host.live()) {
    if (how === 'hard') {
      attempt.stopRequest ??= 'close';
      attempt.hardStop();
    } else host.stop(attempt.jobId);
    report.cancelled.push(attempt.jobId);
  }
  if (!(await deadline)) {
    for (const attempt of host.live()) {
      report.stragglers.push(attempt.jobId);
      attempt.stopRequest ??= 'close';
      attempt.hardStop();
    }
    await settlesWithin(host.onIdle(), TIMINGS.stragglerEndWaitMs);
  }
  await host.closeExecutor();
  const left = host.live();
  for (const attempt of left) {
    attempt.stopRequest ??= 'close';
    attempt.abandon(new JobError('ABORTED', attempt.jobId, 'its thread was ended by close() before it reported a result'));
  }
  await Promise.all(left.map((attempt) => attempt.ended));
  // The endings' callbacks (the manager's books) run before close() resolves.
  await Promise.resolve();
  return report;
}
