import type { EventLoopUtilization } from 'node:perf_hooks';
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
  /**
   * With `tickMs`: a tick counts only the share of its time the thread's loop had to spare
   * (1 − its event-loop utilization over the tick), and at least this share. A thread saturated
   * by thousands of other jobs runs each of them a sliver at a time, every sliver on time, so
   * late ticks alone do not see it (issue 23: 1,189 greps timed out at 100,000 jobs in flight);
   * a loop with time to spare counts in full, so a hung wait on a free thread still times out.
   * Unset: 1 (every tick in full).
   */
  minShare?: number;
}

/** The share of the time since `since` that this thread's event loop was idle, at least `floor`. */
function idleShare(since: EventLoopUtilization, floor: number): number {
  if (floor >= 1) return 1;
  return Math.max(floor, 1 - performance.eventLoopUtilization(since).utilization);
}

/**
 * Time a tick of `tickMs` counts for when it fired `elapsedMs` after the last one: a late tick
 * (the loop was held by other work) counts `2 × tickMs` at most. Used by {@link withTimeout}'s
 * tick clock, by {@link steppedDeadline} (a search's time limit) and by the BullMQ executor's
 * close bound.
 */
export function tickCounted(elapsedMs: number, tickMs: number): number {
  return Math.min(elapsedMs, 2 * tickMs);
}

/** A time limit that work checks as it goes (see {@link steppedDeadline}). */
export interface SteppedDeadline {
  /** Counts the time since the last check; throws the limit's error once `limitMs` is spent. */
  check(): void;
  /** Milliseconds counted so far (up to the last check or step end). */
  readonly spentMs: number;
}

/**
 * A time limit for work that runs in synchronous steps between waits and calls `check()` as it
 * goes (grep and find_files: at every folder entry and every line). The tick rule of
 * {@link withTimeout}'s clock, with the work's own checks as the ticks: a step (from a check to
 * the work's next wait) counts in full, since only the work ran; a wait (for I/O, or for its turn
 * on a loop held by other jobs: a `shared` thread with thousands in flight) counts as a late tick,
 * {@link tickCounted}: `2 × tickMs` at most. So the work is stopped for being slow itself, not
 * for sharing a busy thread; on a free loop (its waits shorter than `2 × tickMs`) it is wall time.
 * The first `check()` at or past `limitMs` throws `onExpiry()`. Starts counting when made.
 */
export function steppedDeadline(limitMs: number, tickMs: number, onExpiry: () => Error): SteppedDeadline {
  let spent = 0;
  let last = performance.now();
  let inStep = false;
  // Runs once the step's synchronous run is over (the work awaits): the step so far counts in full.
  const stepEnded = () => {
    const now = performance.now();
    spent += now - last;
    last = now;
    inStep = false;
  };
  const count = () => {
    const now = performance.now();
    spent += inStep ? now - last : tickCounted(now - last, tickMs);
    last = now;
    if (!inStep) {
      inStep = true;
      queueMicrotask(stepEnded);
    }
  };
  // Made inside a step: what runs before the work's first wait counts in full.
  count();
  return {
    check() {
      count();
      if (spent >= limitMs) throw onExpiry();
    },
    get spentMs() {
      return spent;
    },
  };
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
  const { tickMs, minShare = 1 } = clock;
  let timer: NodeJS.Timeout | undefined;
  let fail: (error: Error) => void = () => {};
  let remainingMs = timeoutMs;
  let armedAt = 0;
  let loopAtArm = performance.eventLoopUtilization();
  let waits = 0;
  let settled = false;
  // Time since the timer was armed, a late tick capped (a held loop counts as 2 × tickMs at most)
  // and scaled to the share of it the thread's loop had to spare (see TimeoutClock.minShare).
  const spent = () => {
    const elapsed = performance.now() - armedAt;
    return tickMs === undefined ? elapsed : tickCounted(elapsed, tickMs) * idleShare(loopAtArm, minShare);
  };
  const arm = () => {
    armedAt = performance.now();
    loopAtArm = performance.eventLoopUtilization();
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
