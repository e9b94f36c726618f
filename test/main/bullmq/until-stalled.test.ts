import { describe, expect, it } from 'vitest';
import { untilSettledOrStalled } from '../../../src/main/bullmq/until-stalled.js';

const IDLE_MS = 400;

function after(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

describe('untilSettledOrStalled (the BullMQ executor close bound)', () => {
  it('waits past the bound for work that keeps moving', async () => {
    let batches = 0;
    const writer = setInterval(() => (batches += 1), IDLE_MS / 4);
    // Four bounds in all: a bound from the start would give up a quarter of the way.
    const work = after(IDLE_MS * 4).then(() => clearInterval(writer));
    await expect(untilSettledOrStalled(work, IDLE_MS, () => batches)).resolves.toBe(true);
    expect(batches).toBeGreaterThan(4);
  });

  it('gives up on work that stands still', async () => {
    const never = new Promise<void>(() => undefined);
    await expect(untilSettledOrStalled(never, IDLE_MS, () => 0)).resolves.toBe(false);
  });

  it('does not count a loop held busy as the work standing still', async () => {
    let settle!: () => void;
    const work = new Promise<void>((resolve) => (settle = resolve));
    const waiting = untilSettledOrStalled(work, IDLE_MS, () => 0);
    await after(10);
    // The host's loop is held for three bounds (a manager stopping 100,000 jobs); then the first
    // batch's reply arrives.
    const heldUntil = Date.now() + IDLE_MS * 3;
    while (Date.now() < heldUntil);
    // A timer, so the close bound's own late tick runs first (libuv runs expired timers in order).
    setTimeout(settle, 1);
    await expect(waiting).resolves.toBe(true);
  });

  it('settles with work that fails', async () => {
    await expect(untilSettledOrStalled(Promise.reject(new Error('gone')), IDLE_MS, () => 0)).resolves.toBe(true);
  });
});
