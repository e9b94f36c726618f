/**
 * The producer's watch for a queue nobody serves (src/main/bullmq/worker-watch.ts), on its own
 * clock and counts. The all-clear once came only if a check ran while the job was still out: a
 * worker that came and served it between two checks (CI, Dec 6: 20 s without the line) left the
 * warning standing, so the next unserved wait never warned.
 */
import { describe, expect, it } from 'vitest';
import { WorkerWatch } from '../../../src/main/bullmq/worker-watch.js';
import { capturedLogger } from '../../helpers/index.js';

const WARNING = 'no forkpool worker';
const ALL_CLEAR = 'a forkpool worker connected';

function watched() {
  const { logger, messages } = capturedLogger({ level: 'warn' });
  const state = { workers: 0, jobsOut: 1, now: 0 };
  const watch = new WorkerWatch({
    queue: 'q',
    warnAfterMs: 500,
    countWorkers: async () => state.workers,
    jobsOut: () => state.jobsOut,
    logger,
    now: () => state.now,
  });
  // One check, its count read, and the log line written.
  const check = async () => {
    watch.check();
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
  };
  /** A job waits with no worker, past the warning's delay, from `at` (ms on the watch's clock). */
  const waitUnserved = async (at: number) => {
    Object.assign(state, { workers: 0, jobsOut: 1, now: at });
    await check();
    state.now = at + 600;
    await check();
  };
  const said = (prefix: string) => messages().filter((m) => m.startsWith(prefix)).length;
  return { state, watch, check, waitUnserved, said };
}

describe('WorkerWatch', () => {
  it('a worker that served every job between two checks still gets its all-clear, and the next unserved wait warns again', async () => {
    const { state, watch, check, waitUnserved, said } = watched();
    await waitUnserved(0);
    expect(said(WARNING)).toBe(1);
    expect(watch.health()).toMatchObject({ ok: false });
    // A worker came, ran the job and it ended, all before the next check.
    Object.assign(state, { workers: 1, jobsOut: 0 });
    await check();
    expect(said(ALL_CLEAR)).toBe(1);
    expect(watch.health()).toEqual({ ok: true });
    // The worker left; a new job waits: warned again.
    await waitUnserved(1_000);
    expect(said(WARNING)).toBe(2);
  });

  it('jobs cancelled with no worker: nothing waits, nothing to warn of, no all-clear; the next unserved wait warns again', async () => {
    const { state, watch, check, waitUnserved, said } = watched();
    await waitUnserved(0);
    state.jobsOut = 0;
    await check();
    expect(watch.health()).toEqual({ ok: true });
    expect([said(WARNING), said(ALL_CLEAR)]).toEqual([1, 0]);
    await waitUnserved(1_000);
    expect(said(WARNING)).toBe(2);
  });
});
