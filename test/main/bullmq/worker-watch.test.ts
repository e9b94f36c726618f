/**
 * The producer's watch for a queue nobody serves (src/main/bullmq/worker-watch.ts), on its own
 * clock and counts. The all-clear once came only if a check ran while the job was still out: a
 * worker that came and served it between two checks (CI, Dec 6: 20 s without the line) left the
 * warning standing, so the next unserved wait never warned.
 */
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { WorkerWatch } from '../../../src/main/bullmq/worker-watch.js';
import { createLogger } from '../../../src/main/setup/logger.js';

function watched() {
  const lines: string[] = [];
  const destination = new PassThrough();
  destination.on('data', (chunk: Buffer) =>
    lines.push(
      ...chunk
        .toString()
        .trim()
        .split('\n')
        .map((l) => (JSON.parse(l) as { msg: string }).msg),
    ),
  );
  const state = { workers: 0, jobsOut: 1, now: 0 };
  const watch = new WorkerWatch({
    queue: 'q',
    warnAfterMs: 500,
    countWorkers: async () => state.workers,
    jobsOut: () => state.jobsOut,
    logger: createLogger({ level: 'warn', secrets: [], pretty: false, destination }),
    now: () => state.now,
  });
  // One check, its count read, and the log line written.
  const check = async () => {
    watch.check();
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
  };
  return { lines, state, watch, check };
}

describe('WorkerWatch', () => {
  it('a worker that served every job between two checks still gets its all-clear, and the next unserved wait warns again', async () => {
    const { lines, state, watch, check } = watched();
    await check();
    state.now = 600;
    await check();
    expect(lines.filter((l) => l.startsWith('no forkpool worker'))).toHaveLength(1);
    expect(watch.health()).toMatchObject({ ok: false });
    // A worker came, ran the job and it ended, all before the next check.
    state.workers = 1;
    state.jobsOut = 0;
    await check();
    expect(lines.filter((l) => l.startsWith('a forkpool worker connected'))).toHaveLength(1);
    expect(watch.health()).toEqual({ ok: true });
    // The worker left; a new job waits: warned again.
    state.workers = 0;
    state.jobsOut = 1;
    state.now = 1_000;
    await check();
    state.now = 1_600;
    await check();
    expect(lines.filter((l) => l.startsWith('no forkpool worker'))).toHaveLength(2);
  });

  it('jobs cancelled with no worker: nothing waits, nothing to warn of, no all-clear; the next unserved wait warns again', async () => {
    const { lines, state, watch, check } = watched();
    await check();
    state.now = 600;
    await check();
    state.jobsOut = 0;
    await check();
    expect(watch.health()).toEqual({ ok: true });
    expect(lines.filter((l) => l.startsWith('a forkpool worker connected'))).toHaveLength(0);
    expect(lines.filter((l) => l.startsWith('no forkpool worker'))).toHaveLength(1);
    // A new job waits, still nobody serves it: warned again.
    state.jobsOut = 1;
    state.now = 1_000;
    await check();
    state.now = 1_600;
    await check();
    expect(lines.filter((l) => l.startsWith('no forkpool worker'))).toHaveLength(2);
  });
});
