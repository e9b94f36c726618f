/**
 * The emitter under the manager and the session: a listener that throws never breaks the
 * emitter's caller, but is counted, kept and reported (a process warning by default); Node's
 * conventions (`off`, `once`, `events.once(emitter, name)`) hold.
 */
import { once } from 'node:events';
import { describe, expect, it, vi } from 'vitest';
import { TypedEmitter } from '../../src/shared/typed-emitter.js';

type Events = { tick: [number]; done: [] };

class Ticker extends TypedEmitter<Events> {
  fire(n: number): void {
    this.emit('tick', n);
  }
  finish(): void {
    this.emit('done');
  }
}

describe('TypedEmitter', () => {
  it('counts, keeps and reports a listener that throws; the other listeners and the caller carry on', () => {
    const reported: Array<[unknown, string]> = [];
    const ticker = new Ticker((error, event) => reported.push([error, event]));
    const seen: number[] = [];
    ticker.on('tick', () => {
      throw new Error('listener bug');
    });
    ticker.on('tick', (n) => seen.push(n));
    expect(() => ticker.fire(1)).not.toThrow();
    ticker.fire(2);
    expect(seen).toEqual([1, 2]);
    expect(ticker.listenerErrorCount).toBe(2);
    expect(ticker.listenerFailures.map((f) => [f.event, (f.error as Error).message])).toEqual([
      ['tick', 'listener bug'],
      ['tick', 'listener bug'],
    ]);
    expect(reported.map(([, event]) => event)).toEqual(['tick', 'tick']);
  });

  it('with no reporter, a listener error becomes a process warning (never silent)', () => {
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    try {
      const ticker = new Ticker();
      ticker.on('tick', () => {
        throw new Error('unseen?');
      });
      ticker.fire(1);
      expect(warn).toHaveBeenCalledTimes(1);
      expect(String(warn.mock.calls[0]?.[0])).toMatch(/"tick" listener threw: .*unseen\?/s);
    } finally {
      warn.mockRestore();
    }
  });

  it('off(event, listener), once() and events.once(emitter, name) follow Node', async () => {
    const ticker = new Ticker(() => {});
    const seen: number[] = [];
    const listener = (n: number) => seen.push(n);
    ticker.on('tick', listener);
    ticker.once('tick', (n) => seen.push(n * 10));
    ticker.fire(1);
    ticker.off('tick', listener);
    ticker.fire(2);
    expect(seen).toEqual([1, 10]);
    expect(ticker.listenerCount('tick')).toBe(0);

    const next = once(ticker as unknown as NodeJS.EventEmitter, 'tick');
    ticker.fire(7);
    await expect(next).resolves.toEqual([7]);
    expect(ticker.listenerCount('tick')).toBe(0);
    const done = ticker.next('done');
    ticker.finish();
    await expect(done).resolves.toEqual([]);
  });
});
