/**
 * A tool's timeout on a thread whose loop is held by other work (issue 23: the first 256 searches
 * on a `shared` thread starting thousands of jobs timed out at 60 s, their own work a few
 * milliseconds). With `tickMs`, a held loop counts as `2 × tickMs` at most; on a free loop the
 * timeout still fires. The loop is held by a synchronous block, so the order of events does not
 * depend on how busy the machine is: the timers that are due when it ends fire by their due time.
 */
import { describe, expect, it } from 'vitest';
import { withTimeout } from '../../src/shared/abort.js';

const parked = new Int32Array(new SharedArrayBuffer(4));
/**
 * Holds this thread's event loop, as thousands of job starts on a shared thread do, without the
 * CPU: Atomics.wait blocks the thread (nothing wakes it) where a busy loop would take a core from
 * the files beside this one; the timers see the same held loop.
 */
function holdLoop(ms: number): void {
  const until = performance.now() + ms;
  // A wait may end early (spurious wake-ups are allowed): wait out the rest.
  for (let left = ms; left > 0; left = until - performance.now()) Atomics.wait(parked, 0, 0, left);
}

const timedOut = () => new Error('timed out');

describe('withTimeout with a tick clock', () => {
  it('work whose loop was held past its timeout ends ok when its own wait is shorter than what is left', async () => {
    const work = async () => {
      // The loop is held for 4 timeouts; then the work needs one more short turn (10 ms).
      holdLoop(1_200);
      await new Promise((resolve) => setTimeout(resolve, 10));
      return 'ok';
    };
    // tickMs 100: the first tick fires ~1,100 ms late and counts 200 ms of the 300; the next is due 100 ms on, after the work's 10 ms.
    await expect(withTimeout(work, 300, new AbortController().signal, timedOut, { tickMs: 100 })).resolves.toBe('ok');
    // Wall-time counting (no clock): the same held loop times it out.
    await expect(withTimeout(work, 300, new AbortController().signal, timedOut)).rejects.toThrow('timed out');
  });

  it('on a free loop the timeout still fires, however many ticks it takes', async () => {
    const hangs = () => new Promise<never>(() => {});
    await expect(withTimeout(hangs, 250, new AbortController().signal, timedOut, { tickMs: 50 })).rejects.toThrow('timed out');
  });

  it('a held loop counts as two ticks each time: held long enough, often enough, it still times out', async () => {
    let turns = 0;
    const work = async (signal: AbortSignal) => {
      // Every turn holds the loop 300 ms (3 ticks' worth), counted as 200: the 500 ms timeout ends it by the third.
      for (;;) {
        // Stopped by the timeout: left spinning, it would hold the loop under the next tests.
        if (signal.aborted) return 'stopped';
        turns++;
        holdLoop(300);
        await new Promise((resolve) => setImmediate(resolve));
        if (turns > 50) return 'never timed out';
      }
    };
    await expect(withTimeout(work, 500, new AbortController().signal, timedOut, { tickMs: 100 })).rejects.toThrow('timed out');
    expect(turns).toBeLessThan(10);
  });
});

/** Keeps this thread's loop saturated with short turns (each tick then fires on time) until stopped. */
function saturate(turnMs: number): () => void {
  let running = true;
  const turn = () => {
    if (!running) return;
    holdLoop(turnMs);
    setImmediate(turn);
  };
  setImmediate(turn);
  return () => {
    running = false;
  };
}

describe('withTimeout on a saturated thread (minShare)', () => {
  it("counts only the loop's spare share: a wait longer than the timeout on a saturated thread ends ok", async () => {
    const wait = () => new Promise<string>((resolve) => setTimeout(() => resolve('ok'), 600));
    const stop = saturate(10);
    try {
      // 600 ms of wall time, every tick on time but the loop never idle: counted at the floor, 0.25 × 600 = 150 of 300.
      await expect(withTimeout(wait, 300, new AbortController().signal, timedOut, { tickMs: 50, minShare: 0.25 })).resolves.toBe('ok');
      // Late ticks alone do not see it: without minShare the same wait times out.
      await expect(withTimeout(wait, 300, new AbortController().signal, timedOut, { tickMs: 50 })).rejects.toThrow('timed out');
    } finally {
      stop();
    }
  });

  it('saturated for long enough, a hung wait still times out (the floor); on a free loop it times out at its timeout', async () => {
    const hangs = () => new Promise<never>(() => {});
    const stop = saturate(10);
    try {
      await expect(withTimeout(hangs, 100, new AbortController().signal, timedOut, { tickMs: 50, minShare: 0.25 })).rejects.toThrow('timed out');
    } finally {
      stop();
    }
    await expect(withTimeout(hangs, 250, new AbortController().signal, timedOut, { tickMs: 50, minShare: 0.25 })).rejects.toThrow('timed out');
  });
});
