import { EventEmitter } from 'node:events';
import { randomUUID } from 'node:crypto';
import { receiveMessageOnPort, type MessagePort } from 'node:worker_threads';
import type { AttemptPort } from './local-ports.js';

/**
 * One MessagePort per worker thread instead of one per job: the jobs of a thread share it, each
 * message tagged with its job's link id. Every open MessagePort is a libuv async handle, and
 * libuv checks every one of them each time any message arrives on its thread: with a port per
 * job, each message cost O(jobs in flight) on the main thread and in each worker (issue 23:
 * 86–89% of the main thread's CPU in uv__async_io at 10,000 to 20,000 jobs), and each port held
 * native memory. Now a message costs O(threads).
 *
 * A thread sends its end to the main thread once, on its first job (loader.cts: thread-link.cts),
 * with `postMessageToThread`; it arrives here as a `workerMessage`. A job's link is bound to the
 * thread whose link first carries a message for it (the worker's `started`).
 */

/** What a thread's link carries to the main thread: a job's message, its end (`c`), or a ping's answer. */
export type LinkFrame = { j: number; m: unknown } | { j: number; c: 1 } | { pong: number };

/** The first message of a thread's link, sent with `postMessageToThread` to the main thread. */
export interface LinkHello {
  forkpoolLink: string;
  port: MessagePort;
}

/** The thread links of every pool in this process, by token; one `workerMessage` listener for all. */
const registry = new Map<string, ThreadLinks>();

function onWorkerMessage(value: unknown, source: number): void {
  const hello = value as Partial<LinkHello> | null;
  if (typeof hello?.forkpoolLink !== 'string' || !hello.port) return;
  const links = registry.get(hello.forkpoolLink);
  // A pool closed while its thread was saying hello: nothing will use this link.
  if (!links) return void hello.port.close();
  links.attach(source, hello.port);
}

/**
 * The thread links of one pool. {@link open} gives a job's end before it is sent; the worker's
 * end of each job (thread-link.cts) is made by the loader from the task's `linkId`.
 */
export class ThreadLinks {
  /** Names this pool's threads' hellos apart from another pool's; goes in the pool's workerData. */
  readonly token = randomUUID();
  readonly #threads = new Map<number, MessagePort>();
  readonly #jobs = new Map<number, LinkedPort>();
  /** Pings waiting for their answer: each settles with whether the thread answered. */
  readonly #pings = new Map<number, (answered: boolean) => void>();
  #nextId = 0;
  #closed = false;

  constructor() {
    if (registry.size === 0) process.on('workerMessage', onWorkerMessage);
    registry.set(this.token, this);
  }

  /** A new job's end, not bound to a thread until the worker's first message for it. */
  open(): LinkedPort {
    const id = ++this.#nextId;
    const port = new LinkedPort(id, this);
    this.#jobs.set(id, port);
    return port;
  }

  /** Threads with a link now. */
  get threadCount(): number {
    return this.#threads.size;
  }

  attach(threadId: number, port: MessagePort): void {
    if (this.#closed) return void port.close();
    this.#threads.get(threadId)?.close();
    this.#threads.set(threadId, port);
    port.on('message', (frame: LinkFrame) => this.#route(threadId, frame, undefined));
    port.once('close', () => this.#lost(threadId, port));
    // The pool decides whether its threads keep the process alive (Piscina unrefs idle ones): a
    // link must not hold an embedder's process open after its jobs are done.
    port.unref();
  }

  /** Sends a job's message over its thread's link; false when the thread has none (it died). */
  send(threadId: number, frame: { j: number; m: unknown } | { j: number; c: 1 }): boolean {
    const port = this.#threads.get(threadId);
    if (!port) return false;
    port.postMessage(frame);
    return true;
  }

  /**
   * Reads what waits on a thread's link now (every thread's when `threadId` is 0), routing each
   * frame; the frames of `wanted` are returned instead of delivered, in order.
   */
  drain(threadId: number, wanted: LinkedPort): unknown[] {
    const taken: unknown[] = [];
    const ports = threadId === 0 ? [...this.#threads] : [[threadId, this.#threads.get(threadId)] as const];
    for (const [thread, port] of ports) {
      if (!port) continue;
      for (let next = receiveMessageOnPort(port); next; next = receiveMessageOnPort(port)) {
        this.#route(thread, next.message as LinkFrame, { wanted, taken });
      }
    }
    return taken;
  }

  /**
   * Whether a thread's loop still runs: true once it answers a ping on its link, false after
   * `timeoutMs` without an answer (or at once when it has no link).
   */
  ping(threadId: number, timeoutMs: number): Promise<boolean> {
    const port = this.#threads.get(threadId);
    if (!port) return Promise.resolve(false);
    const id = ++this.#nextId;
    return new Promise((resolve) => {
      const settle = (answered: boolean) => {
        clearTimeout(timer);
        this.#pings.delete(id);
        resolve(answered);
      };
      const timer = setTimeout(() => settle(false), timeoutMs);
      this.#pings.set(id, settle);
      port.postMessage({ ping: id });
    });
  }

  /** A job's run settled: see {@link LinkedPort.settle}. */
  settle(id: number): void {
    this.#jobs.get(id)?.settle();
  }

  /**
   * Closes a job's link from this side: what its job still sends is dropped. `threadId`: the
   * thread it runs on, when known otherwise (its slot): a job that has not spoken yet still gets
   * what was sent to it (its cancel) before the close.
   */
  release(id: number, threadId = 0): void {
    const port = this.#jobs.get(id);
    if (threadId !== 0) port?.bind(threadId);
    port?.close();
  }

  forget(id: number): void {
    this.#jobs.delete(id);
  }

  /** Closes every thread's link (the pool is closing: its threads end too). */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    registry.delete(this.token);
    if (registry.size === 0) process.off('workerMessage', onWorkerMessage);
    for (const port of this.#threads.values()) port.close();
    this.#threads.clear();
    // A ping left waiting would hold the process open until its timeout: its thread is ending too.
    for (const settle of [...this.#pings.values()]) settle(false);
  }

  #route(threadId: number, frame: LinkFrame, sync: { wanted: LinkedPort; taken: unknown[] } | undefined): void {
    if ('pong' in frame) return this.#pings.get(frame.pong)?.(true);
    const port = this.#jobs.get(frame.j);
    if (!port) return;
    port.bind(threadId);
    if ('c' in frame) return port.closedByPeer();
    if (sync?.wanted === port) sync.taken.push(frame.m);
    else port.deliver(frame.m, sync !== undefined);
  }

  /** A thread's link closed: the thread died or ended. Its jobs' links close with it. */
  #lost(threadId: number, port: MessagePort): void {
    if (this.#threads.get(threadId) !== port) return;
    this.#threads.delete(threadId);
    for (const job of [...this.#jobs.values()]) if (job.threadId === threadId) job.closedByPeer();
  }
}

/**
 * A job's end of its thread's link, as its Attempt uses a port ({@link AttemptPort}): messages
 * in the order the worker posted them, `close` once (the worker closed its end, the thread
 * died, or this end was closed), nothing after it.
 */
export class LinkedPort extends EventEmitter implements AttemptPort {
  readonly id: number;
  /** The thread it is bound to; 0 until the worker's first message for it. */
  threadId = 0;
  readonly #links: ThreadLinks;
  /** Sent before the job's thread was known: posted once it is. */
  #unsent: unknown[] = [];
  /** Read during another port's synchronous drain: delivered on the next macrotask, in order. */
  readonly #inbox: unknown[] = [];
  #scheduled = false;
  #closed = false;
  #closeFired = false;

  constructor(id: number, links: ThreadLinks) {
    super();
    this.id = id;
    this.#links = links;
  }

  get closed(): boolean {
    return this.#closed;
  }

  bind(threadId: number): void {
    if (this.threadId !== 0 || this.#closed) return;
    this.threadId = threadId;
    const unsent = this.#unsent;
    this.#unsent = [];
    for (const message of unsent) this.postMessage(message);
  }

  postMessage(message: unknown): void {
    if (this.#closed) return;
    if (this.threadId === 0) return void this.#unsent.push(message);
    this.#links.send(this.threadId, { j: this.id, m: message });
  }

  receive(): { message: unknown } | undefined {
    if (this.#inbox.length === 0 && !this.#closeFired) this.#inbox.push(...this.#links.drain(this.threadId, this));
    if (this.#inbox.length === 0) return undefined;
    return { message: this.#inbox.shift() };
  }

  /** A message from the worker. `later`: read in another port's drain, so not emitted now. */
  deliver(message: unknown, later: boolean): void {
    if (this.#closeFired) return;
    if (later || this.#inbox.length > 0) {
      this.#inbox.push(message);
      return this.#schedule();
    }
    this.emit('message', message);
  }

  /** The worker closed its end, or its thread's link is gone. */
  closedByPeer(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#schedule();
  }

  /** Closes both ends; `close` fires once, after the messages already read. */
  close(): void {
    if (this.#closed) return;
    if (this.threadId !== 0) this.#links.send(this.threadId, { j: this.id, c: 1 });
    this.#closed = true;
    this.#schedule();
  }

  /**
   * The job's run settled (its task returned or its thread died): if no message of it came on
   * any live link, none will, and its end closes (its attempt then sees "no result" at once).
   */
  settle(): void {
    if (this.threadId !== 0 || this.#closed) return;
    this.#inbox.push(...this.#links.drain(0, this));
    if (this.threadId === 0) this.closedByPeer();
    else if (this.#inbox.length > 0) this.#schedule();
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(() => this.#flush());
  }

  #flush(): void {
    this.#scheduled = false;
    if (this.#closeFired) return;
    while (this.#inbox.length > 0) this.emit('message', this.#inbox.shift());
    if (!this.#closed) return;
    this.#closeFired = true;
    this.#links.forget(this.id);
    this.emit('close');
    this.removeAllListeners();
  }
}
