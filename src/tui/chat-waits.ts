/**
 * The chat's `/bg wait`s that run now: each has a signal that Esc (cancelTurn) and quit abort,
 * and an end that line mode waits for (the command returns before the wait does).
 */
export class ChatWaits {
  readonly #running = new Set<AbortController>();
  readonly #changed: () => void;
  /** The end of the wait the command being run began, if it began one. */
  #begun: Promise<void> | undefined;
  #closing = false;

  constructor(changed: () => void) {
    this.#changed = changed;
  }

  /** A `/bg wait` runs (Esc stops it). */
  get any(): boolean {
    return this.#running.size > 0;
  }

  /** For `/bg wait` (commands.ts): its signal, aborted by Esc or quit, and its end. */
  begin(): { signal: AbortSignal; done(): void } {
    const controller = new AbortController();
    if (this.#closing) controller.abort('closing');
    this.#running.add(controller);
    let ended = () => {};
    this.#begun = new Promise((resolve) => (ended = resolve));
    this.#changed();
    return {
      signal: controller.signal,
      done: () => {
        this.#running.delete(controller);
        ended();
        this.#changed();
      },
    };
  }

  /** Runs a command and returns the end of the wait it began, if it began one. */
  during(run: () => void): Promise<void> | undefined {
    this.#begun = undefined;
    run();
    const begun = this.#begun;
    this.#begun = undefined;
    return begun;
  }

  /** Aborts every wait (`closing`: and any begun later); true if one ran. */
  stop(reason: string, closing = false): boolean {
    if (closing) this.#closing = true;
    const any = this.#running.size > 0;
    for (const wait of this.#running) wait.abort(reason);
    return any;
  }
}
