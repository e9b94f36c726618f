import { EventEmitter } from 'node:events';

/**
 * A typed event emitter. A listener that throws is reported through `onListenerError` and
 * never breaks the emitter's caller (the manager must keep its books straight whatever
 * subscribers do).
 */
export class TypedEmitter<Events extends Record<string, unknown[]>> {
  readonly #emitter = new EventEmitter();
  readonly #onListenerError: (error: unknown, event: string) => void;

  constructor(onListenerError: (error: unknown, event: string) => void = () => {}) {
    this.#onListenerError = onListenerError;
    // Fan-out programs subscribe per job; the default cap of 10 would only warn.
    this.#emitter.setMaxListeners(0);
  }

  on<K extends keyof Events & string>(event: K, listener: (...args: Events[K]) => void): () => void {
    const safe = (...args: unknown[]) => {
      try {
        listener(...(args as Events[K]));
      } catch (error) {
        this.#onListenerError(error, event);
      }
    };
    this.#emitter.on(event, safe);
    return () => this.#emitter.off(event, safe);
  }

  emit<K extends keyof Events & string>(event: K, ...args: Events[K]): void {
    this.#emitter.emit(event, ...args);
  }
}
