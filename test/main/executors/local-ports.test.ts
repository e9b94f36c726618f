/**
 * The in-process port pair a remote executor's launch gets instead of two MessageChannels
 * (src/main/executors/local-ports.ts): the semantics the Attempt relies on, as a MessagePort has them.
 */
import { describe, expect, it } from 'vitest';
import { InProcessPort, portPair } from '../../../src/main/executors/local-ports.js';

const macrotask = () => new Promise((resolve) => setImmediate(resolve));

describe('InProcessPort', () => {
  it('delivers messages in the order posted, asynchronously (never inside postMessage)', async () => {
    const [a, b] = InProcessPort.pair();
    const got: unknown[] = [];
    b.on('message', (message) => got.push(message));
    for (let i = 0; i < 5; i++) expect(a.postMessage({ i })).toBe(true);
    expect(got).toEqual([]);
    await macrotask();
    expect(got).toEqual([0, 1, 2, 3, 4].map((i) => ({ i })));
    a.close();
  });

  it('fires close once on each end, after the messages posted before it, whichever end closes', async () => {
    const [a, b] = InProcessPort.pair();
    const events: string[] = [];
    b.on('message', (message) => events.push(`b:${String(message)}`));
    a.once('close', () => events.push('a:close'));
    b.once('close', () => events.push('b:close'));
    a.postMessage('done');
    a.close();
    a.close();
    b.close();
    await macrotask();
    await macrotask();
    expect(events.filter((e) => e === 'b:done')).toHaveLength(1);
    expect(events.indexOf('b:done')).toBeLessThan(events.indexOf('b:close'));
    expect(events.filter((e) => e.endsWith('close')).sort()).toEqual(['a:close', 'b:close']);
  });

  it('drops a message posted after either end closed (postMessage returns false)', async () => {
    const [a, b] = InProcessPort.pair();
    const got: unknown[] = [];
    b.on('message', (message) => got.push(message));
    b.close();
    expect(a.postMessage('late')).toBe(false);
    expect(b.postMessage('late')).toBe(false);
    await macrotask();
    expect(got).toEqual([]);
  });

  it('hands a waiting message over synchronously with receive() (as receiveMessageOnPort), and not again', async () => {
    const [a, b] = InProcessPort.pair();
    const got: unknown[] = [];
    b.on('message', (message) => got.push(message));
    a.postMessage('first');
    a.postMessage('second');
    expect(b.receive()).toEqual({ message: 'first' });
    await macrotask();
    expect(got).toEqual(['second']);
    expect(b.receive()).toBeUndefined();
    a.close();
  });

  it('portPair: in-process ends hold no native handle; the thread executors still get a MessageChannel', () => {
    const ports = () => process.getActiveResourcesInfo().filter((r) => r === 'MessagePort').length;
    const before = ports();
    const local = portPair(true);
    local.local.on('message', () => undefined);
    expect(ports()).toBe(before);
    const channel = portPair(false);
    channel.local.on('message', () => undefined);
    expect(ports()).toBe(before + 1);
    channel.local.close();
    local.local.close();
  });
});
