/**
 * The main side's rule for remote completions: one per job, and only from the run that holds
 * the job. Keyed by job id and the run's lock token. A completion is claimed synchronously (the
 * events stream and the poll may report the same one at once), then checked against the job's
 * record in Redis (see BullmqExecutor); a claim that fails the check is released.
 */
export class CompletionGate {
  /** BullMQ job id (job id + launch) → the token whose completion was accepted (or is being checked). */
  readonly #claimed = new Map<string, string>();
  /** Tokens of runs that lost their lock or were superseded by a re-run: never accepted. */
  readonly #stale = new Set<string>();
  /** Completions refused, for tests and the log: duplicates and stale runs. */
  readonly rejected: Array<{ bullId: string; token: string; why: 'duplicate' | 'stale' | 'unconfirmed' }> = [];

  /** A run lost its lock, or another run of the job started after it. */
  markStale(token: string): void {
    this.#stale.add(token);
  }

  isStale(token: string): boolean {
    return this.#stale.has(token);
  }

  /** True when this completion may go on to be checked and delivered; false: refused (and recorded). */
  claim(bullId: string, token: string): boolean {
    if (this.#claimed.has(bullId)) return this.#refuse(bullId, token, 'duplicate');
    if (this.#stale.has(token)) return this.#refuse(bullId, token, 'stale');
    this.#claimed.set(bullId, token);
    return true;
  }

  /** The claimed completion was not confirmed by Redis: refuse it, and let a real one through. */
  release(bullId: string, token: string): void {
    if (this.#claimed.get(bullId) !== token) return;
    this.#claimed.delete(bullId);
    this.#refuse(bullId, token, 'unconfirmed');
  }

  /** True when this very run's completion is the one accepted: a second report of it, not a rival. */
  isRepeat(bullId: string, token: string): boolean {
    return this.#claimed.get(bullId) === token;
  }

  /** A completion of this launch was accepted (or is being checked). */
  wasAccepted(bullId: string): boolean {
    return this.#claimed.has(bullId);
  }

  /** Forgets a launch whose BullMQ job was removed (its id may be used again). */
  forget(bullId: string): void {
    this.#claimed.delete(bullId);
  }

  #refuse(bullId: string, token: string, why: 'duplicate' | 'stale' | 'unconfirmed'): false {
    this.rejected.push({ bullId, token, why });
    if (this.rejected.length > 1_000) this.rejected.shift();
    return false;
  }
}
