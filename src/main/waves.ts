/**
 * The jobs an agent spawned in one turn form a wave. A wave can only end once its turn is
 * over (sealed): jobs of one message are spawned one after another, and the first may end
 * before the last is spawned. Each wave ends once.
 */
export class WaveTracker {
  readonly #waves = new Map<number, { members: Set<string>; sealed: boolean }>();

  add(wave: number, jobId: string): void {
    this.#entry(wave).members.add(jobId);
  }

  seal(wave: number): boolean {
    const entry = this.#waves.get(wave);
    if (entry) entry.sealed = true;
    return entry !== undefined;
  }

  /** The wave's members when it has just ended (sealed, all ended, not reported yet); else undefined. */
  takeIfEnded(wave: number, isEnded: (jobId: string) => boolean): string[] | undefined {
    const entry = this.#waves.get(wave);
    if (!entry || !entry.sealed) return undefined;
    const members = [...entry.members];
    if (!members.every(isEnded)) return undefined;
    // Fired waves are forgotten: a long session has one per parent turn.
    this.#waves.delete(wave);
    return members;
  }

  #entry(wave: number) {
    let entry = this.#waves.get(wave);
    if (!entry) {
      entry = { members: new Set(), sealed: false };
      this.#waves.set(wave, entry);
    }
    return entry;
  }
}
