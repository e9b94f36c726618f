import { abortableSleep } from './abort.js';
import type { PauseGate } from './model-call.js';

/**
 * A 429 back-off gate shared by every thread of an executor through one SharedArrayBuffer:
 * a single 64-bit "paused until" timestamp, updated with compare-and-swap so the latest
 * deadline wins. When one job sees Retry-After, every job waits, not only that one.
 */
export class SharedRateGate implements PauseGate {
  readonly #until: BigInt64Array;

  constructor(buffer: SharedArrayBuffer = SharedRateGate.createBuffer()) {
    this.#until = new BigInt64Array(buffer, 0, 1);
  }

  static createBuffer(): SharedArrayBuffer {
    return new SharedArrayBuffer(8);
  }

  get pausedUntil(): number {
    return Number(Atomics.load(this.#until, 0));
  }

  pauseFor(ms: number): void {
    const target = BigInt(Date.now() + Math.ceil(ms));
    for (;;) {
      const current = Atomics.load(this.#until, 0);
      if (current >= target) return;
      if (Atomics.compareExchange(this.#until, 0, current, target) === current) return;
    }
  }

  async wait(signal: AbortSignal): Promise<void> {
    // Loop: another job may push the deadline further while we sleep.
    for (let remaining = this.pausedUntil - Date.now(); remaining > 0; remaining = this.pausedUntil - Date.now()) {
      await abortableSleep(remaining, signal);
    }
  }
}
