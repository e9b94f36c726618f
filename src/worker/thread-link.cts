/**
 * The worker's end of its thread's link to the main thread (see src/main/executors/thread-links.ts):
 * one MessagePort for every job on this thread, each frame tagged with its job's link id. A
 * job's end ({@link LinkedEndpoint}) does what its code asks of a MessagePort: `postMessage`,
 * `on`/`off('message')`, `once('close')`, `close()`. CommonJS, as loader.cts (which uses it).
 */
// eslint-disable-next-line @typescript-eslint/no-require-imports -- CommonJS on purpose (see loader.cts)
import workerThreads = require('node:worker_threads');
// eslint-disable-next-line @typescript-eslint/no-require-imports -- CommonJS on purpose (see loader.cts)
import events = require('node:events');

type Frame = { j: number; m: unknown } | { j: number; c: 1 } | { ping: number };

const endpoints = new Map<number, LinkedEndpoint>();
let link: Promise<workerThreads.MessagePort> | undefined;
/** The link, once made (a ping is answered on it). */
let current: workerThreads.MessagePort | undefined;

/** This thread's link, made and sent to the main thread on first use; `token` names the pool. */
function threadLink(token: string): Promise<workerThreads.MessagePort> {
  link ??= (async () => {
    const { port1, port2 } = new workerThreads.MessageChannel();
    port1.on('message', route);
    current = port1;
    // Resolves once the main thread has taken it: a job's first message then finds its link.
    await workerThreads.postMessageToThread(0, { forkpoolLink: token, port: port2 }, [port2]);
    return port1;
  })();
  return link;
}

function route(frame: Frame): void {
  if ('ping' in frame) return void current?.postMessage({ pong: frame.ping });
  const endpoint = endpoints.get(frame.j);
  if (!endpoint) return;
  if ('c' in frame) endpoint.closedByPeer();
  else endpoint.deliver(frame.m);
}

/** A job's end of the link: a MessagePort to the job's code. */
class LinkedEndpoint extends events.EventEmitter {
  readonly #id: number;
  readonly #port: workerThreads.MessagePort;
  /** Sent before the job's code listened: as a MessagePort's, they wait for its first listener. */
  #held: unknown[] = [];
  #closed = false;

  constructor(id: number, port: workerThreads.MessagePort) {
    super();
    this.#id = id;
    this.#port = port;
    this.on('newListener', (event: string) => {
      if (event !== 'message' || this.#held.length === 0) return;
      const held = this.#held;
      this.#held = [];
      // After the listener is added (this runs just before).
      queueMicrotask(() => {
        for (const message of held) this.emit('message', message);
      });
    });
  }

  deliver(message: unknown): void {
    if (this.listenerCount('message') === 0) this.#held.push(message);
    else this.emit('message', message);
  }

  postMessage(message: unknown): void {
    if (!this.#closed) this.#port.postMessage({ j: this.#id, m: message });
  }

  close(): void {
    if (this.#closed) return;
    this.#port.postMessage({ j: this.#id, c: 1 });
    this.closedByPeer();
  }

  closedByPeer(): void {
    if (this.#closed) return;
    this.#closed = true;
    endpoints.delete(this.#id);
    // As a MessagePort's: `close` comes on a later turn, after the closer's own code.
    setImmediate(() => {
      this.emit('close');
      this.removeAllListeners();
    });
  }
}

/** A job's end of its thread's link, registered before the job can post or be sent anything. */
async function openEndpoint(token: string, id: number): Promise<LinkedEndpoint> {
  const port = await threadLink(token);
  const endpoint = new LinkedEndpoint(id, port);
  endpoints.set(id, endpoint);
  return endpoint;
}

export = { openEndpoint };
