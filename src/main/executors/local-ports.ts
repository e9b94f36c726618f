import { EventEmitter } from 'node:events';
import { MessageChannel, receiveMessageOnPort, type MessagePort } from 'node:worker_threads';

/**
 * One end of a job's port as its {@link Attempt} uses it: `postMessage`, `on('message')`,
 * `on('close')` (it fires once), `close()`, and a synchronous read of what waits ({@link receive}).
 */
export interface AttemptPort {
  postMessage(message: unknown): void;
  on(event: 'message', listener: (message: unknown) => void): unknown;
  on(event: 'close', listener: () => void): unknown;
  close(): void;
  /** The next message waiting, if any, taken now (receiveMessageOnPort for a MessagePort). */
  receive(): { message: unknown } | undefined;
}

/**
 * One end of an in-process port pair: what a MessagePort does for the Attempt, without a
 * native handle. A remote executor's job never crosses a thread, so its two ends need no
 * MessageChannel (a libuv handle and a native object per port, ~10 KB a job in flight, four
 * per launch). Same semantics the Attempt relies on: messages arrive asynchronously (a macrotask
 * later, as a MessagePort's do) in the order posted; `close` fires once on both ends, after the
 * messages posted before it; a message posted after close is dropped. Messages are not cloned:
 * both ends are this process's and the sender lets go of what it posts.
 */
export class InProcessPort extends EventEmitter {
  #peer: InProcessPort | undefined;
  readonly #inbox: unknown[] = [];
  #scheduled = false;
  #closed = false;
  #closeFired = false;

  /** Two connected ends. */
  static pair(): [InProcessPort, InProcessPort] {
    const a = new InProcessPort();
    const b = new InProcessPort();
    a.#peer = b;
    b.#peer = a;
    return [a, b];
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Queues a message for the other end; false (dropped) once either end closed. */
  postMessage(message: unknown): boolean {
    const peer = this.#peer;
    if (this.#closed || !peer || peer.#closed) return false;
    peer.#inbox.push(message);
    peer.#schedule();
    return true;
  }

  /** Takes the next waiting message now (as receiveMessageOnPort does). */
  receive(): { message: unknown } | undefined {
    if (this.#inbox.length === 0) return undefined;
    return { message: this.#inbox.shift() };
  }

  /** Closes both ends: each fires `close` once, after the messages it already holds. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    const peer = this.#peer;
    this.#peer = undefined;
    this.#schedule();
    if (peer) peer.close();
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    // A macrotask, as a MessagePort: a sender's own code after postMessage runs first.
    setImmediate(() => this.#deliver());
  }

  #deliver(): void {
    this.#scheduled = false;
    for (let next = this.receive(); next; next = this.receive()) this.emit('message', next.message);
    if (this.#closed && !this.#closeFired) {
      this.#closeFired = true;
      this.emit('close');
      this.removeAllListeners();
    }
  }
}

/** A job's port pair: in-process for a remote executor (nothing crosses a thread), else a MessageChannel. */
export interface PortPair {
  /** The Attempt's end. */
  local: AttemptPort;
  /** The executor's end, handed over in JobTask. */
  remote: MessagePort;
}

export function portPair(inProcess: boolean): PortPair {
  if (inProcess) {
    const [local, remote] = InProcessPort.pair();
    // The one cast: a remote executor uses only postMessage, on('message'), once('close') and
    // close() of its task's ports (see ExecutorCapabilities.remote) and never transfers them.
    return { local, remote: remote as unknown as MessagePort };
  }
  const { port1, port2 } = new MessageChannel();
  const local: AttemptPort = Object.assign(port1, { receive: () => receiveMessageOnPort(port1) });
  return { local, remote: port2 };
}
