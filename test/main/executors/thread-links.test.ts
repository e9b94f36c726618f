/**
 * A thread's link (thread-links.ts, worker/thread-link.cts): the jobs of a worker thread share
 * one port, each frame tagged with its job's link id. Through a real worker thread (the built
 * worker end, test/fixtures/link-worker.mjs): order per job, no re-entry during a drain, the end
 * of a job that never spoke, a thread's death, and the ping a shared hard stop asks first.
 */
import { once } from 'node:events';
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { ThreadLinks, type LinkedPort } from '../../../src/main/executors/thread-links.js';
import { useCleanup } from '../../helpers/index.js';

const cleanups = useCleanup();

function start(): { links: ThreadLinks; worker: Worker } {
  const links = new ThreadLinks();
  const worker = new Worker(new URL('../../fixtures/link-worker.mjs', import.meta.url), { workerData: { token: links.token } });
  cleanups.add(async () => {
    await worker.terminate();
    links.close();
  });
  return { links, worker };
}

/** Sends an order and waits for the worker's reply that has `key`. */
async function ask(worker: Worker, order: object, key: string): Promise<void> {
  const reply = new Promise<void>((resolve) => {
    const onMessage = (message: Record<string, unknown>) => {
      if (!(key in message)) return;
      worker.off('message', onMessage);
      resolve();
    };
    worker.on('message', onMessage);
  });
  worker.postMessage(order);
  await reply;
}

async function openAll(worker: Worker, ports: LinkedPort[]): Promise<void> {
  for (const port of ports) await ask(worker, { open: port.id }, 'opened');
}

const closed = (port: LinkedPort) => new Promise<void>((resolve) => port.once('close', resolve));

describe('thread links', { timeout: 30_000 }, () => {
  it("frames read in another job's drain reach their job later, in order, never inside the drain", async () => {
    const { links, worker } = start();
    const [a, b] = [links.open(), links.open()] as [LinkedPort, LinkedPort];
    await openAll(worker, [a, b]);
    const seenB: unknown[] = [];
    let draining = false;
    const reentered: unknown[] = [];
    b.on('message', (message: unknown) => {
      if (draining) reentered.push(message);
      seenB.push(message);
    });
    a.on('message', () => {});
    // Bind both (a job's port is bound by its first frame), then wait until they are read.
    await ask(
      worker,
      {
        send: [
          [a.id, 'a0'],
          [b.id, 'b0'],
        ],
      },
      'sent',
    );
    while (seenB.length === 0) await new Promise((resolve) => setImmediate(resolve));

    // Hold this thread until the worker has posted all four frames: they wait unread in the link.
    const flag = new Int32Array(new SharedArrayBuffer(4));
    worker.postMessage({
      send: [
        [a.id, 'a1'],
        [b.id, 'b1'],
        [a.id, 'a2'],
        [b.id, 'b2'],
      ],
      flag,
    });
    Atomics.wait(flag, 0, 0, 10_000);
    draining = true;
    const taken = [a.receive(), a.receive(), a.receive()];
    draining = false;
    expect(taken).toEqual([{ message: 'a1' }, { message: 'a2' }, undefined]);
    expect(reentered).toEqual([]);
    while (seenB.length < 3) await new Promise((resolve) => setImmediate(resolve));
    expect(seenB).toEqual(['b0', 'b1', 'b2']);
  });

  it('a job whose run settled without a frame on any link is closed at once; one that spoke is not', async () => {
    const { links, worker } = start();
    const [silent, spoke] = [links.open(), links.open()] as [LinkedPort, LinkedPort];
    await openAll(worker, [spoke]);
    const got: unknown[] = [];
    spoke.on('message', (message: unknown) => got.push(message));
    await ask(worker, { send: [[spoke.id, 'done']] }, 'sent');
    const silentClosed = closed(silent);
    links.settle(silent.id);
    links.settle(spoke.id);
    await silentClosed;
    expect(silent.closed).toBe(true);
    expect(spoke.closed).toBe(false);
    expect(got).toEqual(['done']);
  });

  it("a thread's death closes the links of its jobs", async () => {
    const { links, worker } = start();
    const [first, second] = [links.open(), links.open()] as [LinkedPort, LinkedPort];
    await openAll(worker, [first, second]);
    await ask(
      worker,
      {
        send: [
          [first.id, 'hello'],
          [second.id, 'hello'],
        ],
      },
      'sent',
    );
    await new Promise((resolve) => setTimeout(resolve, 50));
    const bothClosed = Promise.all([closed(first), closed(second)]);
    worker.postMessage({ exit: true });
    await once(worker, 'exit');
    await bothClosed;
    expect(links.threadCount).toBe(0);
  });

  it("a message sent before the job's code listens waits for its first listener, as on a MessagePort", async () => {
    const { links, worker } = start();
    const port = links.open();
    await ask(worker, { open: port.id, quiet: true }, 'opened');
    port.postMessage('cancel');
    // Bound by the worker's first frame: the message goes out now, before anyone listens there.
    await ask(worker, { send: [[port.id, 'started']] }, 'sent');
    await new Promise((resolve) => setTimeout(resolve, 50));
    const got = new Promise<unknown>((resolve) => {
      worker.on('message', (reply: { got?: number; message?: unknown }) => {
        if (reply.got === port.id) resolve(reply.message);
      });
    });
    worker.postMessage({ listen: port.id });
    expect(await got).toBe('cancel');
  });

  it('a ping is answered by a thread whose loop runs, not by one held in synchronous work', async () => {
    const { links, worker } = start();
    const port = links.open();
    await openAll(worker, [port]);
    const threadId = worker.threadId;
    expect(await links.ping(threadId, 5_000)).toBe(true);
    await ask(worker, { spin: 2_000 }, 'spinning');
    expect(await links.ping(threadId, 300)).toBe(false);
    expect(await links.ping(threadId, 10_000)).toBe(true);
    expect(await links.ping(threadId + 1_000, 100)).toBe(false);
  });
});
