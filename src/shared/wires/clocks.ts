/**
 * The two clocks of one attempt on a wire of our own (Responses, Anthropic), as wires/chat.ts
 * runs them for Chat Completions: a deadline `requestTimeoutMs` after sending (headers to last
 * byte, streamed or not), and for a stream an idle watchdog that fires after
 * `streamIdleTimeoutMs` without an event. Either aborts the attempt's own signal; `timeout()`
 * then says which one did (a read may end quietly on an abort, so callers ask after it).
 */
import { linkedAbort } from '../abort.js';
import { AbortError, ForkpoolError, TimeoutError } from '../errors.js';
import { readEventStream } from '../sse-reader.js';
import type { HttpReply } from './http.js';
import { maxEventChars, responseTooLarge } from '../stream-assembler.js';

export function deadlineError(timeoutMs: number): TimeoutError {
  return new TimeoutError('MODEL_REQUEST_FAILED', `request timed out after ${timeoutMs} ms (headers to last byte)`, timeoutMs);
}

function stallError(idleMs: number): TimeoutError {
  return new TimeoutError('MODEL_STREAM_STALLED', `stream sent nothing for ${idleMs} ms`, idleMs);
}

export class AttemptClocks {
  readonly #local;
  readonly #deadline: NodeJS.Timeout;
  readonly #requestTimeoutMs: number;
  readonly #idleMs: number;
  #idleTimer: NodeJS.Timeout | undefined;
  #fired: TimeoutError | undefined;

  constructor(signal: AbortSignal, timing: { requestTimeoutMs: number; streamIdleTimeoutMs: number }) {
    this.#local = linkedAbort(signal);
    this.#requestTimeoutMs = timing.requestTimeoutMs;
    this.#idleMs = timing.streamIdleTimeoutMs;
    this.#deadline = setTimeout(() => this.#fire(deadlineError(this.#requestTimeoutMs)), this.#requestTimeoutMs);
  }

  /** Aborted by the caller's signal or by either clock. */
  get signal(): AbortSignal {
    return this.#local.signal;
  }

  /** Starts or pushes back the idle watchdog (one timer, refreshed per event). */
  armWatchdog(): void {
    if (this.#idleTimer) return void this.#idleTimer.refresh();
    this.#idleTimer = setTimeout(() => this.#fire(stallError(this.#idleMs)), this.#idleMs);
  }

  /**
   * Reads a streamed response's server-sent events into `add` under both clocks (each event pushes
   * the watchdog back; an event longer than `limit` allows fails the attempt as too large). Ends by
   * throwing the clock that fired, or the caller's abort, since the read itself may end quietly.
   */
  async readStream(response: HttpReply, limit: number, add: (event: unknown) => void): Promise<void> {
    this.armWatchdog();
    if (!response.body) throw new ForkpoolError('MODEL_REQUEST_FAILED', 'streamed response has no body');
    await readEventStream(
      response.body,
      response.headers,
      (event) => {
        this.armWatchdog();
        add(event);
      },
      { chars: maxEventChars(limit), error: () => responseTooLarge(limit) },
    );
    const fired = this.timeout();
    if (fired) throw fired;
    if (this.signal.aborted) throw new AbortError(this.signal.reason);
  }

  /** The clock that ended the attempt, if one did. */
  timeout(): TimeoutError | undefined {
    return this.#fired;
  }

  dispose(): void {
    clearTimeout(this.#deadline);
    clearTimeout(this.#idleTimer);
    this.#local.dispose();
  }

  #fire(error: TimeoutError): void {
    this.#fired ??= error;
    this.#local.controller.abort(error);
  }
}
