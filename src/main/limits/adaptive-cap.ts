/**
 * Additive-increase / multiplicative-decrease of the number of model requests one endpoint
 * gets at once. Pure arithmetic, no clock and no I/O: the request gate (request-gate.ts) feeds
 * it each request's outcome, so a test can drive it with a fixed sequence.
 *
 * - A success that was sent while the gate was full (the limit was what held requests back)
 *   adds `increaseStep / limit`: one more slot per limit's worth of such successes. A success
 *   while the gate had room says nothing about a bigger limit and changes nothing.
 * - A 429 or 503 multiplies the limit by `decreaseFactor`, once per "epoch": the requests that
 *   were already in flight when the limit dropped fail together, and that is one signal, not
 *   twenty (TCP reacts once per window for the same reason).
 * - Latency: when the short-term average latency rises past `latencyTolerance` times the
 *   long-term one, that counts as congestion too (a server that queues instead of refusing).
 *   Two averages, not a best-ever minimum: steady noise moves both alike and never triggers it.
 * The limit always stays within [floor, ceiling].
 */
export interface AimdOptions {
  /** Fewest requests in flight, whatever the endpoint says. At least 1. */
  floor: number;
  /** Most requests in flight. */
  ceiling: number;
  /** Where the limit starts. Default: `floor`. */
  initial?: number;
  /** Slots added per limit's worth of successes at the limit. Default 1. */
  increaseStep?: number;
  /** The limit is multiplied by this on an overload (0 < factor < 1). Default 0.7. */
  decreaseFactor?: number;
  /** Short-term latency above this multiple of the long-term one is congestion; 0 turns it off. Default 3. */
  latencyTolerance?: number;
}

/** What became of one request, as the controller needs it. */
export type AimdSignal =
  /** `atLimit`: when it was admitted, the gate was full (so the limit was binding). */
  | { kind: 'success'; latencyMs: number; epoch: number; atLimit: boolean }
  /** A 429 or 503 from the endpoint. */
  | { kind: 'overload'; epoch: number };

export type AimdChange = { limit: number; reason: 'increase' | 'overload' | 'latency' } | undefined;

export const AIMD_DEFAULTS = { increaseStep: 1, decreaseFactor: 0.7, latencyTolerance: 3 } as const;

/** How fast the short-term and the long-term latency averages follow new samples. */
const SHORT_TERM = 0.2;
const LONG_TERM = 0.02;

export class AimdController {
  readonly #floor: number;
  readonly #ceiling: number;
  readonly #step: number;
  readonly #factor: number;
  readonly #tolerance: number;
  /** The real-valued window; {@link limit} is its floor. */
  #window: number;
  #epoch = 0;
  #longMs: number | undefined;
  #shortMs: number | undefined;

  constructor(options: AimdOptions) {
    const { floor, ceiling } = options;
    if (!Number.isInteger(floor) || floor < 1) throw new RangeError(`adaptive floor: expected an integer >= 1, received ${floor}`);
    if (!Number.isInteger(ceiling) || ceiling < floor) throw new RangeError(`adaptive ceiling: expected an integer >= floor (${floor}), received ${ceiling}`);
    const factor = options.decreaseFactor ?? AIMD_DEFAULTS.decreaseFactor;
    if (!(factor > 0 && factor < 1)) throw new RangeError(`adaptive decreaseFactor: expected a number between 0 and 1 (exclusive), received ${factor}`);
    this.#floor = floor;
    this.#ceiling = ceiling;
    this.#step = options.increaseStep ?? AIMD_DEFAULTS.increaseStep;
    this.#factor = factor;
    this.#tolerance = options.latencyTolerance ?? AIMD_DEFAULTS.latencyTolerance;
    this.#window = clamp(options.initial ?? floor, floor, ceiling);
  }

  /** Requests allowed in flight now. */
  get limit(): number {
    return Math.floor(this.#window);
  }

  get floor(): number {
    return this.#floor;
  }

  get ceiling(): number {
    return this.#ceiling;
  }

  /** Bumped by every decrease; a request remembers the epoch it was admitted in. */
  get epoch(): number {
    return this.#epoch;
  }

  /** Applies one outcome; returns the new limit and why when it changed. */
  record(signal: AimdSignal): AimdChange {
    if (signal.kind === 'overload') return this.#decrease(signal.epoch, 'overload');
    const latency = signal.latencyMs;
    this.#longMs = this.#longMs === undefined ? latency : this.#longMs + LONG_TERM * (latency - this.#longMs);
    this.#shortMs = this.#shortMs === undefined ? latency : this.#shortMs + SHORT_TERM * (latency - this.#shortMs);
    if (this.#tolerance > 0 && this.#shortMs > this.#tolerance * this.#longMs) return this.#decrease(signal.epoch, 'latency');
    if (!signal.atLimit) return undefined;
    const before = this.limit;
    this.#window = Math.min(this.#ceiling, this.#window + this.#step / Math.max(1, this.#window));
    return this.limit !== before ? { limit: this.limit, reason: 'increase' } : undefined;
  }

  #decrease(epoch: number, reason: 'overload' | 'latency'): AimdChange {
    // Sent before the last decrease: that decrease already answered this congestion.
    if (epoch < this.#epoch) return undefined;
    this.#epoch++;
    this.#window = Math.max(this.#floor, this.#window * this.#factor);
    // The short-term average restarts from the long-term one, so one slow spell is one decrease.
    if (reason === 'latency') this.#shortMs = this.#longMs;
    // Reported even at the floor: every decrease opens a new epoch, and watchers count them.
    return { limit: this.limit, reason };
  }
}

function clamp(value: number, low: number, high: number): number {
  return Math.min(high, Math.max(low, value));
}
