import { JobError, serializeError } from '../shared/errors.js';
import type { JobOutcome } from '../shared/protocol.js';
import { parseResultTag } from '../shared/result-tag.js';
import type { JobEnding } from './ledger.js';

/** Why the manager asked a job to stop. */
export type StopRequest = 'cancel' | 'timeout' | 'close';

/**
 * The ending of a job that reported `done`: its own status (from the result tag) when it
 * finished, `timed_out`/`cancelled` when it honoured a stop, `failed` otherwise.
 */
export function endingFromOutcome(outcome: JobOutcome, stopRequest: StopRequest | undefined): JobEnding {
  const base = { usage: outcome.usage, iterations: outcome.iterations, stopReason: outcome.stopReason, error: outcome.error };
  // A job that finished before it saw the stop keeps its real result.
  if (outcome.stopReason === 'final') {
    const { text, tag } = parseResultTag(outcome.text);
    return { ...base, status: tag?.status ?? 'ok', endedBy: 'completed', resultText: text, tag };
  }
  if (stopRequest) return { ...base, status: stoppedStatus(stopRequest), endedBy: 'cooperative', resultText: outcome.text };
  return { ...base, status: 'failed', endedBy: 'completed', resultText: outcome.text };
}

/**
 * The ending of a job whose thread failed or was stopped before it reported `done`.
 * `attempts` counts the times it was handed to a thread (several after re-queues).
 */
export function endingFromLostThread(jobId: string, error: unknown, stopRequest: StopRequest | undefined, threadDied: boolean, attempts: number): JobEnding {
  const empty = { resultText: '', usage: {}, iterations: 0 };
  if (stopRequest) {
    const code = stopRequest === 'timeout' ? 'JOB_TIMEOUT' : 'JOB_CANCELLED';
    const stopError = new JobError(code, jobId, `ended by a hard stop after the cooperative ${stopRequest} was not honoured`, { cause: error });
    return { ...empty, status: stoppedStatus(stopRequest), endedBy: 'hard', error: serializeError(stopError) };
  }
  const serialized = serializeError(error);
  if (threadDied) serialized.message = `its thread died on each of ${attempts} tries, so it was given up: ${serialized.message}`;
  return { ...empty, status: 'failed', endedBy: 'crash', error: serialized };
}

function stoppedStatus(request: StopRequest): 'timed_out' | 'cancelled' {
  return request === 'timeout' ? 'timed_out' : 'cancelled';
}
