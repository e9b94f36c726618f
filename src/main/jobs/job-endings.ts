import { JobError, deserializeError, serializeError, type ForkpoolError, type SerializedError } from '../../shared/errors.js';
import type { JobOutcome } from '../../shared/protocol.js';
import { parseResultTag } from '../../shared/result-tag.js';
import type { UsageByModel } from '../../shared/usage.js';
import type { JobEnding } from '../ledger/ledger.js';
export type { StopRequest } from '../../shared/protocol.js';

import type { StopRequest } from '../../shared/protocol.js';

/** What an ending needs to know of the attempt that ran the job. */
export interface AttemptFacts {
  number: number;
  stopRequest: StopRequest | undefined;
  /** Usage the job reported before it ended (kept when its thread died). */
  usage: UsageByModel;
  iterations: number;
  /** The last text the job reported (kept as a partial result when a budget stop kills its thread). */
  lastText?: string | undefined;
}

/**
 * The ending of a job that reported `done`: its own status (from the result tag) when it
 * finished, `timed_out`/`cancelled` when it honoured a stop, `failed` otherwise. Each ending
 * that is not a plain answer carries an error whose code says why (see ERROR_CODES).
 */
/** A job that ended before it ran (cancelled while queued, refused by the session budget): no text, no usage. */
export function endingFromQueue(error: SerializedError): JobEnding {
  return { status: 'cancelled', endedBy: 'queue', resultText: '', usage: {}, iterations: 0, error };
}

export function endingFromOutcome(outcome: JobOutcome, stopRequest: StopRequest | undefined): JobEnding {
  const base = {
    usage: outcome.usage,
    iterations: outcome.iterations,
    stopReason: outcome.stopReason,
    ...(outcome.reads?.length ? { reads: outcome.reads } : {}),
  };
  // A typed job's value stands beside its text, which is the value's JSON (no result tag to parse).
  if (outcome.stopReason === 'final' && outcome.data !== undefined) {
    return { ...base, status: 'ok', endedBy: 'completed', resultText: outcome.text, data: outcome.data, error: outcome.error };
  }
  // A job that finished before it saw the stop keeps its real result.
  if (outcome.stopReason === 'final' && outcome.deferred) {
    // exit_on_defer: its answer is a status line; an orchestrator runs it again at that time.
    return { ...base, status: 'deferred', endedBy: 'completed', resultText: outcome.text, deferred: outcome.deferred };
  }
  if (outcome.stopReason === 'final') {
    const { text, tag } = parseResultTag(outcome.text);
    return { ...base, status: tag?.status ?? 'ok', endedBy: 'completed', resultText: text, tag, error: outcome.error };
  }
  // The reply was cut at the token limit: what it wrote is kept, marked incomplete (the error says why).
  if (outcome.stopReason === 'truncated') {
    const { text, tag } = parseResultTag(outcome.text);
    return { ...base, status: 'partial', endedBy: 'completed', resultText: text, tag, error: outcome.error };
  }
  // A budget ran out: the job ends `partial` with what it had, and the record names the budget.
  if (outcome.budgetExceeded) {
    return { ...base, status: 'partial', endedBy: 'completed', resultText: outcome.text, error: outcome.error, budgetExceeded: outcome.budgetExceeded };
  }
  if (stopRequest === 'budget') {
    const error = stopError(stopRequest, 'it stopped when asked', outcome.error);
    return { ...base, status: 'partial', endedBy: 'cooperative', resultText: outcome.text, error, budgetExceeded: 'maxWallclockMinutes' };
  }
  if (stopRequest) {
    const error = stopError(stopRequest, 'it stopped when asked', outcome.error);
    return { ...base, status: stoppedStatus(stopRequest), endedBy: 'cooperative', resultText: outcome.text, error, ...byClose(stopRequest) };
  }
  return { ...base, status: 'failed', endedBy: 'completed', resultText: outcome.text, error: outcome.error };
}

/**
 * The ending of a job whose thread failed or was stopped before it reported `done`. A job
 * whose thread died on every try says how many tries it had.
 */
export function endingFromLostThread(jobId: string, error: unknown, attempt: AttemptFacts, threadDied: boolean): JobEnding {
  const kept = { resultText: '', usage: attempt.usage, iterations: attempt.iterations };
  if (attempt.stopRequest) {
    const serialized = stopError(
      attempt.stopRequest,
      `ended by a hard stop after the cooperative ${attempt.stopRequest} was not honoured`,
      serializeError(error),
    );
    if (attempt.stopRequest === 'budget') {
      return { ...kept, resultText: attempt.lastText ?? '', status: 'partial', endedBy: 'hard', error: serialized, budgetExceeded: 'maxWallclockMinutes' };
    }
    return { ...kept, status: stoppedStatus(attempt.stopRequest), endedBy: 'hard', error: serialized, ...byClose(attempt.stopRequest) };
  }
  const serialized = serializeError(error);
  serialized.jobId ??= jobId;
  if (threadDied) serialized.message = `its thread died on each of ${attempt.number} tries, so it was given up: ${serialized.message}`;
  return { ...kept, status: 'failed', endedBy: 'crash', error: serialized };
}

/** The ending of a job whose worker broke the port protocol (its thread was stopped). */
export function endingFromProtocol(error: JobError, attempt: AttemptFacts): JobEnding {
  return { resultText: '', usage: attempt.usage, iterations: attempt.iterations, status: 'failed', endedBy: 'crash', error: serializeError(error) };
}

function stopError(request: StopRequest, how: string, cause: ReturnType<typeof serializeError> | undefined) {
  const code = request === 'timeout' ? 'JOB_TIMEOUT' : request === 'budget' ? 'BUDGET_EXCEEDED' : 'JOB_CANCELLED';
  const what =
    request === 'timeout'
      ? 'timed out'
      : request === 'close'
        ? 'cancelled by close()'
        : request === 'budget'
          ? 'budget maxWallclockMinutes exhausted'
          : 'cancelled';
  const serialized = serializeError(new JobError(code, '-', `${what}: ${how}`));
  delete serialized.stack;
  delete serialized.jobId;
  if (cause) serialized.cause = cause;
  return serialized;
}

function byClose(request: StopRequest): { byClose?: true } {
  return request === 'close' ? { byClose: true } : {};
}

function stoppedStatus(request: StopRequest): 'timed_out' | 'cancelled' {
  return request === 'timeout' ? 'timed_out' : 'cancelled';
}

/**
 * The typed error of an ended job (a `JobError`, `ToolError`, `TimeoutError`… with its code and
 * cause chain), rebuilt from the plain shape its record carries; undefined when it has none.
 */
export function jobError(record: { error?: SerializedError | undefined }): ForkpoolError | undefined {
  return record.error ? deserializeError(record.error) : undefined;
}
