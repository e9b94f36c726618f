import { EventEmitter } from 'node:events';

/** A listener that threw: which event, and what it threw. */
export interface ListenerFailure {
  event: string;
  error: unknown;
}

/** How many listener failures are kept for inspection (all are counted). */
const KEPT_FAILURES = 100;

/** Any event's listener (each takes its event's arguments), as the key of its wrappers. */
type AnyListener = (...args: never) => unknown;

/**
 * A typed event emitter. A listener that throws never breaks the emitter's caller (the manager
 * must keep its books straight whatever subscribers do), but its error never vanishes either:
 * it is counted, the last ones are kept in {@link listenerFailures}, and it is reported through
 * `onListenerError` — by default a process warning, so it shows on stderr even with no logger.
 */
export class TypedEmitter<Events extends Record<string, unknown[]>> {
  readonly #emitter = new EventEmitter();
  readonly #onListenerError: (error: unknown, event: string) => void;
  readonly #failures: ListenerFailure[] = [];
  /** Each listener's guarded wrapper, so off(event, listener) finds it (Node's convention). */
  readonly #wrappers = new Map<string, Map<AnyListener, Array<(...args: unknown[]) => void>>>();
  #failureCount = 0;

  constructor(onListenerError?: (error: unknown, event: string) => void) {
    this.#onListenerError = onListenerError ?? warnListenerError;
    // Fan-out programs subscribe per job; the default cap of 10 would only warn.
    this.#emitter.setMaxListeners(0);
  }

  /** Subscribes; returns the function that unsubscribes (`off(event, listener)` works too). */
  on<K extends keyof Events & string>(event: K, listener: (...args: Events[K]) => void): () => void {
    return this.#subscribe(event, listener, false);
  }

  /** Subscribes for the next event only; returns the function that unsubscribes. */
  once<K extends keyof Events & string>(event: K, listener: (...args: Events[K]) => void): () => void {
    return this.#subscribe(event, listener, true);
  }

  /** Unsubscribes a listener given to on() or once(); so `events.once(manager, 'done')` works. */
  off<K extends keyof Events & string>(event: K, listener: (...args: Events[K]) => void): void {
    const wrappers = this.#wrappers.get(event)?.get(listener);
    const wrapper = wrappers?.pop();
    if (wrapper) this.#unsubscribe(event, listener, wrapper);
  }

  /** Node's name for off(). */
  removeListener<K extends keyof Events & string>(event: K, listener: (...args: Events[K]) => void): void {
    this.off(event, listener);
  }

  listenerCount<K extends keyof Events & string>(event: K): number {
    return this.#emitter.listenerCount(event);
  }

  /** Resolves with the next event's arguments. */
  next<K extends keyof Events & string>(event: K): Promise<Events[K]> {
    return new Promise((resolve) => this.once(event, (...args) => resolve(args)));
  }

  /** Listener errors so far (all of them, including those no longer kept). */
  get listenerErrorCount(): number {
    return this.#failureCount;
  }

  /** The last listener errors (up to 100), oldest first. */
  get listenerFailures(): readonly ListenerFailure[] {
    return this.#failures;
  }

  /** Fires an event. Meant for the emitter itself; subclasses keep it from their public API. */
  protected emit<K extends keyof Events & string>(event: K, ...args: Events[K]): void {
    this.#emitter.emit(event, ...args);
  }

  #subscribe<K extends keyof Events & string>(event: K, listener: (...args: Events[K]) => void, once: boolean): () => void {
    const guarded = this.#guard(event, listener);
    const wrapper = once
      ? (...args: unknown[]) => {
          this.#unsubscribe(event, listener, wrapper);
          guarded(...args);
        }
      : guarded;
    let byListener = this.#wrappers.get(event);
    if (!byListener) this.#wrappers.set(event, (byListener = new Map<AnyListener, Array<(...args: unknown[]) => void>>()));
    byListener.set(listener, [...(byListener.get(listener) ?? []), wrapper]);
    this.#emitter.on(event, wrapper);
    return () => this.#unsubscribe(event, listener, wrapper);
  }

  #unsubscribe(event: string, listener: AnyListener, wrapper: (...args: unknown[]) => void): void {
    this.#emitter.off(event, wrapper);
    const byListener = this.#wrappers.get(event);
    const left = byListener?.get(listener)?.filter((w) => w !== wrapper) ?? [];
    if (left.length > 0) byListener?.set(listener, left);
    else byListener?.delete(listener);
  }

  #guard<K extends keyof Events & string>(event: K, listener: (...args: Events[K]) => void) {
    return (...args: unknown[]) => {
      try {
        listener(...(args as Events[K]));
      } catch (error) {
        this.#failureCount++;
        this.#failures.push({ event, error });
        if (this.#failures.length > KEPT_FAILURES) this.#failures.shift();
        try {
          this.#onListenerError(error, event);
        } catch {
          // A reporter that throws must not take the emitter's caller down either.
        }
      }
    };
  }
}

function warnListenerError(error: unknown, event: string): void {
  const detail = error instanceof Error ? (error.stack ?? error.message) : String(error);
  process.emitWarning(`a "${event}" listener threw: ${detail}`, { code: 'FORKPOOL_LISTENER_ERROR' });
}
