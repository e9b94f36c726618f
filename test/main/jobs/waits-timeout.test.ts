/**
 * A wait the timeout ended says it waited at least the timeout: Node's timers run on libuv's
 * whole-millisecond loop clock and can fire just before their delay as `performance.now()`
 * counts it (about 1 in 70 short timers here), which once printed "waited 0.0s … (the timeout
 * passed)" for `/bg wait --timeout 0.05` (CI, Dec 6).
 */
import { describe, expect, it } from 'vitest';
import { waitForJobs, type WaitHost } from '../../../src/main/jobs/waits.js';
import type { JobRecord } from '../../../src/main/ledger/ledger.js';

// One job that never ends: every wait runs out its timeout.
const running = { id: 'bg-1', state: 'running' } as unknown as JobRecord;
const host: WaitHost = { idOf: (name) => (name === 'bg-1' ? 'bg-1' : undefined), get: () => running, onDone: () => () => {} };

describe('waitForJobs', () => {
  it('a wait ended by its timeout reports at least the timeout, every time', async () => {
    const short: number[] = [];
    for (let i = 0; i < 400; i++) {
      const outcome = await waitForJobs(host, ['bg-1'], { timeoutMs: 2 });
      expect(outcome.timedOut).toBe(true);
      if (outcome.waitedMs < 2) short.push(outcome.waitedMs);
    }
    expect(short).toEqual([]);
  });
});
