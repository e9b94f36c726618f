/**
 * Names of a session's jobs: a name is held by one live (queued or running) job at a time and
 * is free again once that job ends; the newest job that had a name is still found by it.
 */
export class JobNames {
  readonly #live = new Map<string, string>();
  readonly #nameOf = new Map<string, string>();
  /** The last job that held each name; bounded by the number of distinct names used. */
  readonly #last = new Map<string, string>();

  /** The live job holding `name`, if any. */
  holder(name: string): string | undefined {
    return this.#live.get(name);
  }

  lastHolder(name: string): string | undefined {
    return this.#last.get(name);
  }

  claim(name: string, id: string): void {
    this.#live.set(name, id);
    this.#nameOf.set(id, name);
    this.#last.set(name, id);
  }

  /** The job ended: its name is free for a new job. */
  release(id: string): void {
    const name = this.#nameOf.get(id);
    if (name === undefined) return;
    this.#nameOf.delete(id);
    if (this.#live.get(name) === id) this.#live.delete(name);
  }
}
