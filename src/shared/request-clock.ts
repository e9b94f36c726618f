/**
 * The clocks of one model request (the Chat Completions wire, wires/chat.ts): the wait for the response's first byte, then
 * the whole response from that byte to its last. Time a request waits inside a busy server
 * (a local model behind other jobs) counts against the first, never the second.
 */
import { DEFAULTS } from './defaults.js';
import { TimeoutError } from './errors.js';

/** The whole-request deadline's error: `requestTimeoutMs` covers the response's headers (its first byte) to its last byte. */
export function deadlineError(timeoutMs: number): TimeoutError {
  return new TimeoutError('MODEL_REQUEST_FAILED', `request timed out after ${timeoutMs} ms (headers to last byte)`, timeoutMs);
}

/** No response headers within `firstByteTimeoutMs`: a server that queues the request too long, or never answers. */
export function firstByteError(timeoutMs: number): TimeoutError {
  return new TimeoutError('MODEL_REQUEST_FAILED', `no response within ${timeoutMs} ms of sending (firstByteTimeoutMs)`, timeoutMs);
}

/**
 * A request's two clocks, one after the other: the wait for the response's first byte (its
 * headers; time queued inside the server counts here, `firstByteTimeoutMs`), then the whole
 * response from that byte to its last (`requestTimeoutMs`). Either aborts `controller`.
 */
export class RequestClock {
  #timer: NodeJS.Timeout;
  #expired: TimeoutError | undefined;
  readonly #controller: AbortController;
  readonly #requestTimeoutMs: number;

  constructor(controller: AbortController, config: { requestTimeoutMs: number; firstByteTimeoutMs?: number | undefined }) {
    this.#controller = controller;
    this.#requestTimeoutMs = config.requestTimeoutMs;
    this.#timer = this.#arm(config.firstByteTimeoutMs ?? DEFAULTS.firstByteTimeoutMs, firstByteError);
  }

  /** The headers came: from now on the whole-response deadline runs. */
  firstByte(): void {
    clearTimeout(this.#timer);
    this.#timer = this.#arm(this.#requestTimeoutMs, deadlineError);
  }

  /** The clock that ran out, if one did. */
  get expired(): TimeoutError | undefined {
    return this.#expired;
  }

  dispose(): void {
    clearTimeout(this.#timer);
  }

  // The error is made when the clock runs out: made up front, its stack cost ~25 µs on every request (issue 40).
  #arm(timeoutMs: number, expiry: (timeoutMs: number) => TimeoutError): NodeJS.Timeout {
    return setTimeout(() => {
      const error = expiry(timeoutMs);
      this.#expired = error;
      this.#controller.abort(error);
    }, timeoutMs);
  }
}
