import { ForkpoolError } from '../shared/errors.js';
import type { SteeringMessage } from '../shared/protocol.js';

/**
 * A job's side of `send_to_background_agent`: the messages sent to it, held until its next model
 * call (where they go in as one user message, as its children's results do, see children.ts),
 * and the interrupt: a message sent with `interrupt` cancels the model call in flight, and the
 * tool loop asks again with the message (see `interruptCall` in tool-loop.ts).
 *
 * Each message is taken once per run; taking one is reported (`onTaken`) so the main thread
 * knows which reached the conversation and gives the others to the next run (a resume, a re-queue).
 */
export class SteeringInbox {
  #pending: SteeringMessage[];
  /** The model call in flight's own cancel (the tool loop's), while it is in flight. */
  #call: ((reason: unknown) => void) | undefined;
  readonly #onTaken: (ids: number[]) => void;

  /** `initial`: messages the main thread kept for this run (sent while it was queued or waiting). */
  constructor(initial: readonly SteeringMessage[], onTaken: (ids: number[]) => void) {
    this.#pending = [...initial];
    this.#onTaken = onTaken;
  }

  /** A message from the main thread; with `interrupt`, the model call in flight (if any) is cancelled. */
  receive(message: SteeringMessage, interrupt: boolean): void {
    this.#pending.push(message);
    if (interrupt) this.#call?.(new ForkpoolError('ABORTED', `model call interrupted by message ${message.id}`));
  }

  /** Messages not yet given to the model. */
  get hasPending(): boolean {
    return this.#pending.length > 0;
  }

  /** Messages that arrived since the last call, as one user message for the next model call. */
  take(): string | undefined {
    if (this.#pending.length === 0) return undefined;
    const taken = this.#pending;
    this.#pending = [];
    this.#onTaken(taken.map((m) => m.id));
    const body = taken.map((m) => m.text).join('\n\n');
    return `${taken.length === 1 ? 'A message' : `${taken.length} messages`} for you arrived while you were working (from whoever started you). Take it into account and carry on with your task:\n\n${body}`;
  }

  /** The model call now in flight: an interrupting message cancels it, and only it. Returns what forgets it. */
  duringCall(interrupt: (reason: unknown) => void): () => void {
    this.#call = interrupt;
    return () => {
      if (this.#call === interrupt) this.#call = undefined;
    };
  }
}

/** Text for the next model call from several sources (children's results, messages), or undefined. */
export function joinInjections(...parts: Array<string | undefined>): string | undefined {
  const present = parts.filter((part): part is string => part !== undefined);
  return present.length > 0 ? present.join('\n\n') : undefined;
}
