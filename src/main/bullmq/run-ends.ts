import type { AttemptEnd } from '../executors/attempt.js';
import { JobError, serializeError } from '../../shared/errors.js';
import type { StopRequest } from '../../shared/protocol.js';
import type { RemoteEnd } from './wire.js';

// How a run's end is reported back to the main process: its RemoteEnd, or the outcome of a run that never started.

/**
 * `stopRequest`: why this worker stopped the run, if it did. A run it stopped for its own
 * timeout says so, or the main process (whose timer started later) would call it a failure.
 */
export function remoteEnd(end: AttemptEnd, stopRequest: StopRequest | undefined): RemoteEnd {
  if (end.kind === 'done') {
    const stopped = stopRequest !== undefined && end.outcome.stopReason !== 'final';
    return { kind: 'done', outcome: stopped ? { ...end.outcome, stoppedBy: stopRequest } : end.outcome };
  }
  if (end.kind === 'lost') return { kind: 'lost', error: serializeError(end.error) };
  if (end.kind === 'protocol') return { kind: 'protocol', error: serializeError(end.error) };
  // Asleep: the main process keeps the sleep and queues the job again at its time (docs/scale-out.md).
  if (end.kind === 'sleeping') return { kind: 'sleeping', state: end.state, at: end.at, reason: end.reason };
  const what = end.kind === 'suspended' ? 'waited for children' : 'paused for approvals';
  return {
    kind: 'protocol',
    error: serializeError(new JobError('PROTOCOL_INVALID', '-', `the job ${what}, which the bullmq executor does not run`)),
  };
}

export function refused(error: unknown) {
  return { stopReason: 'error' as const, text: '', usage: {}, iterations: 0, error: serializeError(error) };
}

export function cancelledBeforeStart(jobId: string) {
  const error = serializeError(new JobError('JOB_CANCELLED', jobId, 'cancelled before a worker started it'));
  return { stopReason: 'aborted' as const, text: '', usage: {}, iterations: 0, error };
}
