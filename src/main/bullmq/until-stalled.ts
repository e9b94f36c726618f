import { tickCounted } from '../../shared/abort.js';

/**
 * Waits for `work`, giving up only once it has made no progress for `idleMs`: a close that
 * cancels 100,000 waiting jobs writes ~100 batches, and a fixed bound from the start gave up
 * (and closed the connections) while the first replies were merely late on a loaded host,
 * leaving most of the jobs in Redis for a worker to run for nothing. `progress` is any counter
 * that grows as the work advances. Resolves true when `work` settled, false when it stalled.
 */
export async function untilSettledOrStalled(work: Promise<unknown>, idleMs: number, progress: () => number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const stalled = new Promise<false>((resolve) => {
    let seen = progress();
    let idle = 0;
    let last = Date.now();
    // Idle time is counted in ticks of a quarter of the bound, a late tick counting two at most:
    // a loop held busy (the manager stopping 100,000 jobs) is not the work standing still.
    const step = Math.max(1, Math.floor(idleMs / 4));
    timer = setInterval(() => {
      const now = Date.now();
      const moved = progress();
      if (moved !== seen) {
        seen = moved;
        idle = 0;
      } else {
        idle += tickCounted(now - last, step);
        if (idle >= idleMs) resolve(false);
      }
      last = now;
    }, step);
    timer.unref();
  });
  try {
    return await Promise.race([
      work.then(
        () => true,
        () => true,
      ),
      stalled,
    ]);
  } finally {
    clearInterval(timer);
  }
}
