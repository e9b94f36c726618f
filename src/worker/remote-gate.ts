import type { MessagePort } from 'node:worker_threads';
import { withTimeout } from '../shared/abort.js';
import { AbortError } from '../shared/errors.js';
import type { AdmissionGate, GateTicket, RequestOutcome } from '../shared/model-call.js';
import type { WorkerMessage } from '../shared/protocol.js';

/** What a job's gate needs of its port: its `close` (the main thread ended the job). */
type ClosablePort = Pick<MessagePort, 'once' | 'off'>;

/**
 * A job's model requests under adaptive concurrency: each one asks its endpoint's gate on the
 * main thread for a slot (`gate-admit`), waits for `gate-admitted`, and gives the slot back with
 * its outcome (`gate-settle`), all over the job's own port. Tickets are numbered here, so a
 * request given up while still waiting can be withdrawn by its number.
 */
export class RemoteRateGate implements AdmissionGate {
  readonly #jobId: string;
  readonly #post: (message: WorkerMessage) => void;
  readonly #port: ClosablePort;
  readonly #waiting = new Map<number, () => void>();
  #next = 1;

  constructor(jobId: string, post: (message: WorkerMessage) => void, port: ClosablePort) {
    this.#jobId = jobId;
    this.#post = post;
    this.#port = port;
  }

  /** The main thread's `gate-admitted`: that request may go. An unknown ticket (given up already) is ignored. */
  admitted(ticket: number): void {
    const admit = this.#waiting.get(ticket);
    this.#waiting.delete(ticket);
    admit?.();
  }

  async admit(signal: AbortSignal): Promise<GateTicket> {
    if (signal.aborted) throw new AbortError(signal.reason);
    const ticket = this.#next++;
    // Fire and forget: nothing answers a settle, and a closed port drops it (the main thread
    // frees what the attempt still holds when it ends).
    const settle = (outcome: RequestOutcome) => this.#send({ type: 'gate-settle', jobId: this.#jobId, ticket, outcome });
    let cleanup = () => {};
    // A closed port (the main thread ended this job, or it died) or an abort ends the wait: an
    // answer that can no longer come is never waited for.
    const how = await new Promise<'admitted' | 'closed' | 'aborted'>((resolve) => {
      const onClose = () => resolve('closed');
      const onAbort = () => resolve('aborted');
      this.#waiting.set(ticket, () => resolve('admitted'));
      this.#port.once('close', onClose);
      signal.addEventListener('abort', onAbort, { once: true });
      cleanup = () => {
        this.#waiting.delete(ticket);
        this.#port.off('close', onClose);
        signal.removeEventListener('abort', onAbort);
      };
      this.#send({ type: 'gate-admit', jobId: this.#jobId, ticket });
    }).finally(() => cleanup());
    if (how === 'aborted') {
      settle({ kind: 'abandoned' });
      throw new AbortError(signal.reason);
    }
    return { settle };
  }

  #send(message: WorkerMessage): void {
    try {
      this.#post(message);
    } catch {
      // A closed port: its `close` ends the wait.
    }
  }
}

/**
 * An answer from the main thread over the job's port, or `fallback` when the port closes, the
 * time runs out or `signal` aborts first: a question whose answer cannot come never hangs the job.
 */
export async function answerOrFallback<T>(call: Promise<T>, port: ClosablePort, timeoutMs: number, fallback: T, signal?: AbortSignal): Promise<T> {
  let onClose: (() => void) | undefined;
  const closed = new Promise<T>((resolve) => {
    onClose = () => resolve(fallback);
    port.once('close', onClose);
  });
  try {
    return await withTimeout(
      () => Promise.race([call, closed]),
      timeoutMs,
      signal ?? new AbortController().signal,
      () => new Error('no answer in time'),
    );
  } catch {
    return fallback;
  } finally {
    if (onClose) port.off('close', onClose);
  }
}
