/**
 * A session's turns, one at a time (agent-session.ts): a person's in the order submitted, then
 * the one follow-up owed for whatever ended meanwhile. Each turn runs with its own signal, linked
 * to its caller's, that `cancelTurn` and `close` abort; a queued turn whose caller's signal aborts
 * leaves the queue (its promise rejects with `ABORTED`). What a turn does is the session's `run`.
 */
import { linkedAbort } from '../../shared/abort.js';
import { AbortError, ForkpoolError } from '../../shared/errors.js';
import type { TurnResult } from './parent-agent.js';

/** A turn waiting to run: a person's prompt, or the follow-up the session owes. */
export interface QueuedTurn {
  input: string;
  followUp: boolean;
  signal?: AbortSignal | undefined;
  resolve: (result: TurnResult) => void;
  reject: (error: unknown) => void;
}

export interface TurnQueueOptions {
  /**
   * Runs one turn to its end: its result, or undefined when it did not run (a follow-up left
   * with nothing to deliver).
   */
  run: (turn: QueuedTurn, signal: AbortSignal) => Promise<TurnResult | undefined>;
  /** A turn's run threw: told before the turn's promise rejects with the error (a follow-up has nobody to reject to). */
  onFailed: (turn: QueuedTurn, error: unknown) => void;
  /** When the owed follow-up's time comes: whether anything is left for it to deliver. */
  followUpHasWork: () => boolean;
  /** The queue ran dry: no turn runs or waits now. */
  onDrained: () => void;
}

export class TurnQueue {
  readonly #options: TurnQueueOptions;
  readonly #waiting: QueuedTurn[] = [];
  #running = false;
  #followUpOwed = false;
  /** Set as the session's close begins: queued turns are refused and no follow-up runs. */
  #closed = false;
  /** Aborts the turn that runs now (close() does; so do cancelTurn and the caller's signal). */
  #turnAbort: AbortController | undefined;

  constructor(options: TurnQueueOptions) {
    this.#options = options;
  }

  /** No turn runs or waits (a follow-up may still be owed). */
  get idle(): boolean {
    return !this.#running && this.#waiting.length === 0;
  }

  /** A turn runs or waits, or a follow-up is owed. */
  get busy(): boolean {
    return !this.idle || this.#followUpOwed;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /**
   * Runs a person's turn now, or after the turns already queued. Aborting `signal` takes a
   * queued turn off the queue (the promise rejects with `ABORTED`) and ends a running one.
   */
  submit(input: string, signal?: AbortSignal): Promise<TurnResult> {
    if (signal?.aborted) return Promise.reject(new AbortError(signal.reason));
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        const at = this.#waiting.indexOf(turn);
        if (at < 0) return;
        this.#waiting.splice(at, 1);
        reject(new AbortError(signal?.reason));
      };
      // Removed as the turn settles, however it does: a caller that passes one signal to every
      // turn of a long chat would otherwise collect one listener (and one turn) per turn.
      const settled = () => signal?.removeEventListener('abort', onAbort);
      const turn: QueuedTurn = {
        input,
        followUp: false,
        signal,
        resolve: (result) => (settled(), resolve(result)),
        reject: (error) => (settled(), reject(error)),
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#waiting.push(turn);
      void this.drain();
    });
  }

  /** One follow-up is owed: it runs after the turns queued now, at the next {@link drain}. */
  oweFollowUp(): void {
    this.#followUpOwed = true;
  }

  /** The owed follow-up will not run (the session has closed). */
  forgetFollowUp(): void {
    this.#followUpOwed = false;
  }

  /** Ends the turn that runs now with `reason`; queued turns are left alone. False when no turn runs. */
  cancelTurn(reason: unknown): boolean {
    if (!this.#turnAbort || this.#turnAbort.signal.aborted) return false;
    this.#turnAbort.abort(reason);
    return true;
  }

  /** The session closes: queued turns are rejected (`MANAGER_CLOSED`), the running one is aborted, no follow-up runs. */
  close(): void {
    this.#closed = true;
    for (const turn of this.#waiting.splice(0)) turn.reject(new ForkpoolError('MANAGER_CLOSED', 'the session was closed before this turn ran'));
    this.#turnAbort?.abort(new ForkpoolError('MANAGER_CLOSED', 'the session was closed'));
  }

  /** Runs the queued turns, then the owed follow-up, one at a time, until none is left. */
  async drain(): Promise<void> {
    if (this.#running) return;
    this.#running = true;
    try {
      for (;;) {
        const next = this.#waiting.shift() ?? this.#takeFollowUp();
        if (!next) break;
        const abort = linkedAbort(next.signal);
        this.#turnAbort = abort.controller;
        try {
          const result = await this.#options.run(next, abort.signal);
          if (result) next.resolve(result);
        } catch (error) {
          this.#options.onFailed(next, error);
          next.reject(error);
        } finally {
          abort.dispose();
          this.#turnAbort = undefined;
        }
      }
    } finally {
      this.#running = false;
      this.#options.onDrained();
    }
  }

  /** One follow-up for whatever ended meanwhile; none if a turn already delivered it all. */
  #takeFollowUp(): QueuedTurn | undefined {
    if (!this.#followUpOwed || this.#closed) return undefined;
    this.#followUpOwed = false;
    if (!this.#options.followUpHasWork()) return undefined;
    // Its input (the prompt by what it delivers) is chosen when it runs (the session's TurnInputs.prepare).
    return { input: '', followUp: true, resolve: () => {}, reject: () => {} };
  }
}
