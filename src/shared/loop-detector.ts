/**
 * Catches a model that repeats the same tool call with the same arguments. The first repeats
 * get a warning appended to the tool result; past `stopAfter` the run ends with
 * `loop_detected`. Arguments are compared in a canonical form (sorted keys).
 */
export type LoopVerdict = 'ok' | 'warn' | 'stop';

export class LoopDetector {
  readonly #warnAfter: number;
  readonly #stopAfter: number;
  #lastKey = '';
  #repeats = 0;

  constructor(warnAfter: number, stopAfter: number) {
    this.#warnAfter = warnAfter;
    this.#stopAfter = stopAfter;
  }

  /** Records one call and says what to do about it. */
  observe(toolName: string, args: unknown): LoopVerdict {
    const key = `${toolName}\u0000${canonicalJson(args)}`;
    this.#repeats = key === this.#lastKey ? this.#repeats + 1 : 1;
    this.#lastKey = key;
    if (this.#repeats >= this.#stopAfter) return 'stop';
    if (this.#repeats >= this.#warnAfter) return 'warn';
    return 'ok';
  }

  get repeats(): number {
    return this.#repeats;
  }
}

export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'undefined';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}
