import { AbortError } from './errors.js';

/** A child controller that aborts when `parent` does; `dispose()` removes the listener. */
export function linkedAbort(parent: AbortSignal | undefined): { controller: AbortController; signal: AbortSignal; dispose(): void } {
  const controller = new AbortController();
  if (!parent) return { controller, signal: controller.signal, dispose() {} };
  const onAbort = () => controller.abort(parent.reason);
  if (parent.aborted) controller.abort(parent.reason);
  else parent.addEventListener('abort', onAbort, { once: true });
  return { controller, signal: controller.signal, dispose: () => parent.removeEventListener('abort', onAbort) };
}

/** Sleeps `ms`, rejecting with {@link AbortError} the moment `signal` aborts. */
export function abortableSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new AbortError(signal.reason));
    const onAbort = () => {
      clearTimeout(timer);
      reject(new AbortError(signal?.reason));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Runs a wait with a timeout paused (see {@link withTimeout}). */
export type UntimedWait = <T>(wait: () => Promise<T>) => Promise<T>;

/** How {@link withTimeout} counts time. */
export interface TimeoutClock {
  /**
   * Counts only what the thread's event loop let through: the timer ticks every `tickMs` (at
   * most), and a tick that fires more than `tickMs` late (the loop was held by other work: on a
   * `shared` thread, thousands of jobs starting at once) counts as `2 × tickMs`. Unset: wall time.
   */
  tickMs?: number;
}

/**
 * Time a tick of `tickMs` counts for when it fired `elapsedMs` after the last one: a late tick
 * (the loop was held by other work) counts `2 × tickMs` at most. Used by {@link withTimeout}'s
 * tick clock and by the BullMQ executor's close bound.
 */
export function tickCounted(elapsedMs: number, tickMs: number): number {
  return Math.min(elapsedMs, 2 * tickMs);
}

/**
 * Races `work` against a timeout and a signal. The work gets its own signal, aborted on either,
 * so it can stop what it is doing; the timer is always cleared. The work also gets `untimed`:
 * the time spent in a wait it runs through it (its turn in a queue that moves as other calls
 * end) does not count, so load slows the work down without timing it out; the timer runs on
 * with what was left when the wait ends. The signal still aborts such a wait. With
 * `clock.tickMs`, a loop held by other work does not count in full either (see {@link TimeoutClock}).
 */
export async function withTimeout<T>(
  work: (signal: AbortSignal, untimed: UntimedWait) => Promise<T>,
  timeoutMs: number,
  signal: AbortSignal,
  onTimeout: () => Error,
  clock: TimeoutClock = {},
): Promise<T> {
  const local = linkedAbort(signal);
  const { tickMs } = clock;
  let timer: NodeJS.Timeout | undefined;
  let fail: (error: Error) => void = () => {};
  let remainingMs = timeoutMs;
  let armedAt = 0;
  let waits = 0;
  let settled = false;
  // Time since the timer was armed, a late tick capped (a held loop counts as 2 × tickMs at most).
  const spent = () => {
    const elapsed = performance.now() - armedAt;
    return tickMs === undefined ? elapsed : tickCounted(elapsed, tickMs);
  };
  const arm = () => {
    armedAt = performance.now();
    timer = setTimeout(
      () => {
        if (tickMs !== undefined) {
          remainingMs -= spent();
          if (remainingMs > 0) return arm();
        }
        const error = onTimeout();
        // Reject first so the race reports the timeout, not the abort it causes.
        fail(error);
        local.controller.abort(error);
      },
      Math.max(0, tickMs === undefined ? remainingMs : Math.min(remainingMs, tickMs)),
    );
  };
  const timeout = new Promise<never>((_, reject) => {
    fail = reject;
    arm();
  });
  const untimed: UntimedWait = async (wait) => {
    if (waits++ === 0) {
      clearTimeout(timer);
      remainingMs -= spent();
    }
    try {
      return await wait();
    } finally {
      if (--waits === 0 && !settled) arm();
    }
  };
  const aborted = new Promise<never>((_, reject) => {
    if (local.signal.aborted) reject(new AbortError(local.signal.reason));
    local.signal.addEventListener('abort', () => reject(new AbortError(local.signal.reason)), { once: true });
  });
  // Silence the losers of the race; their rejections are expected.
  timeout.catch(() => {});
  aborted.catch(() => {});
  try {
    return await Promise.race([work(local.signal, untimed), timeout, aborted]);
  } finally {
    settled = true;
    clearTimeout(timer);
    local.dispose();
  }
}

/** Resolves true if `promise` settles within `ms`, false otherwise; the timer is always cleared. */
export async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([promise.then(() => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** A signal linked to a parent's that also aborts when its own deadline passes (see {@link startDeadline}). */
export interface Deadline {
  readonly signal: AbortSignal;
  /** The deadline's error once it has passed (the signal's reason then); undefined before, or after a parent abort. */
  readonly expired: Error | undefined;
  /** Clears the timer and the parent listener; the signal stays as it is. */
  dispose(): void;
}

/**
 * A child of `parent` that aborts with `onExpiry()` after `timeoutMs` (0: never; its signal is
 * then the parent's own). A parent abort that comes first wins: `expired` stays undefined.
 */
export function startDeadline(parent: AbortSignal, timeoutMs: number, onExpiry: () => Error): Deadline {
  // No deadline: nothing but the parent can abort it, so its signal is the parent's. A linked
  // controller here cost every job in flight a signal, two maps and a listener (issue 23).
  if (timeoutMs <= 0) return { signal: parent, expired: undefined, dispose() {} };
  const link = linkedAbort(parent);
  let expired: Error | undefined;
  const timer =
    timeoutMs > 0
      ? setTimeout(() => {
          if (link.signal.aborted) return;
          expired = onExpiry();
          link.controller.abort(expired);
        }, timeoutMs)
      : undefined;
  return {
    signal: link.signal,
    get expired() {
      return expired;
    },
    dispose() {
      clearTimeout(timer);
      link.dispose();
    },
  };
}
