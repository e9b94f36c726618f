import type { TypedEmitter } from '../../shared/typed-emitter.js';
import type { BackgroundManager, ParentControls } from '../jobs/manager.js';
import type { JobRecord } from '../ledger/ledger.js';
import type { ParentEvent } from './parent-agent.js';

/** A guess the parent spawned in a turn, and the words that refer to it. */
interface Guess {
  id: string;
  wave: number;
  /** Its id, and its name when it has one, each as a whole word. */
  refersTo: RegExp;
}

/**
 * How "refers to it" is decided for a speculative job the parent spawned (docs/delivery.md
 * "Speculative jobs"): from the moment the spawn has returned until its turn ends, the parent
 * refers to it when its job id or name appears as a whole word in
 *  - what the parent says (each assistant text, the final answer among them), or
 *  - the arguments of any tool call it makes (their first 200 characters, as the tool loop's
 *    `tool_call` event carries them): check, wait, send, read, restart, a spawn whose task
 *    names it, a file it writes...
 * A guess referred to is kept at once (an ordinary job: no real job preempts it any more, its
 * result is delivered as usual, once); one still unreferred when its turn ends is dropped.
 * Mentions are read from the parent's own events, so what a tool returned (the spawn's own
 * "Started bg-3" among them) never counts, and neither does the spawn call that made it.
 */
export class TurnSpeculation {
  readonly #controls: Pick<ParentControls, 'keepSpeculative' | 'dropSpeculative'>;
  readonly #guesses = new Map<string, Guess>();

  constructor(manager: Pick<BackgroundManager, 'parentControls' | 'on'>, parent: Pick<TypedEmitter<{ parent: [ParentEvent] }>, 'on'>) {
    this.#controls = manager.parentControls;
    manager.on('spawned', (record) => this.#spawned(record));
    parent.on('parent', (event) => this.#observe(event));
  }

  /** Guesses of the session's turns not yet kept or dropped (for tests and views). */
  get pending(): string[] {
    return [...this.#guesses.keys()];
  }

  #spawned(record: Readonly<JobRecord>): void {
    // Only the session's own guesses have a turn to end: a job's children and wave-less jobs (the HTTP API's) are only preempted.
    if (record.speculative !== 'pending' || record.parentJobId !== undefined || record.wave === null) return;
    const words = [record.id, ...(record.name !== undefined ? [record.name] : [])].map(escapeRegExp).join('|');
    this.#guesses.set(record.id, { id: record.id, wave: record.wave, refersTo: new RegExp(`(?<![\\w-])(?:${words})(?![\\w-])`) });
  }

  #observe(event: ParentEvent): void {
    if (event.type === 'turn_end') return this.#settle(event.turn);
    if (event.type !== 'loop') return;
    const loop = event.event;
    if (loop.type === 'assistant_text') this.#scan(loop.text);
    else if (loop.type === 'tool_call') this.#scan(loop.argsPreview);
  }

  #scan(text: string): void {
    for (const guess of this.#guesses.values()) {
      if (!guess.refersTo.test(text)) continue;
      this.#guesses.delete(guess.id);
      this.#controls.keepSpeculative(guess.id);
    }
  }

  /** The turn ended: its guesses (and any of an earlier turn that threw before it ended) not referred to are dropped. */
  #settle(turn: number): void {
    for (const guess of [...this.#guesses.values()]) {
      if (guess.wave > turn) continue;
      this.#guesses.delete(guess.id);
      try {
        this.#controls.dropSpeculative(guess.id, `speculative, not referred to by the end of turn ${guess.wave}`);
      } catch {
        // Forgotten meanwhile (retention): nothing is left to drop.
      }
    }
  }
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
