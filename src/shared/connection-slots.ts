import { AbortError } from './errors.js';
import { threadBacklog, type ThreadBacklog } from './thread-backlog.js';
import { WaitQueue } from './wait-queue.js';

/**
 * One thread's connections to one model endpoint: at most `limit` requests hold a slot at a
 * time, the rest wait in FIFO order.
 *
 * Why: Node's HTTP agent (and `fetch`, for a caller's own `openai` client) keeps its sockets alive
 * but opens a new one whenever every open one is busy, with no bound. With `shared` isolation one thread holds thousands of jobs, each
 * with a model call in flight: a socket each, until the process runs out of file descriptors
 * (issue 23: 15,558 sockets at 20,000 jobs, EMFILE). With at most `limit` requests in flight,
 * the agent never needs more than `limit` sockets and reuses them.
 *
 * A request takes its slot before its timers start (see `callModel`): waiting here is the
 * thread's own queue, not the endpoint being slow, so it never counts toward `requestTimeoutMs`.
 * Its waiters count in the thread's backlog, which new jobs wait on to start (thread-backlog.ts).
 */
export class ConnectionSlots implements SlotSource {
  readonly limit: number;
  readonly #backlog: ThreadBacklog;
  #inUse = 0;
  #peak = 0;
  readonly #queue = new WaitQueue<Waiter>();
  /** Waiters in `#queue` not cancelled. */
  #waiting = 0;

  constructor(limit: number, backlog: ThreadBacklog = threadBacklog) {
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`connection slots: limit must be an integer ≥ 1, got ${limit}`);
    this.limit = limit;
    this.#backlog = backlog;
  }

  /** Requests holding a slot now. */
  get inUse(): number {
    return this.#inUse;
  }

  /** The most slots ever held at once. */
  get peak(): number {
    return this.#peak;
  }

  /** Requests waiting for a slot. */
  get waiting(): number {
    return this.#waiting;
  }

  /**
   * Resolves with the function that gives the slot back (call it exactly once, in `finally`);
   * rejects with an AbortError if `signal` aborts while waiting.
   */
  acquire(signal: AbortSignal): Promise<() => void> {
    if (signal.aborted) return Promise.reject(new AbortError(signal.reason));
    if (this.#inUse < this.limit) return Promise.resolve(this.#take());
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        cancelled: false,
        // The releasing holder's slot passes to this one as it is (still counted).
        grant: () => {
          signal.removeEventListener('abort', onAbort);
          this.#leftQueue();
          resolve(this.#handle());
        },
      };
      // Left in the queue, marked: it is skipped when its turn comes.
      const onAbort = () => {
        waiter.cancelled = true;
        this.#leftQueue();
        reject(new AbortError(signal.reason));
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.#waiting++;
      this.#backlog.queueJoined();
      this.#queue.push(waiter);
    });
  }

  #leftQueue(): void {
    this.#waiting--;
    this.#backlog.queueLeft();
  }

  #take(): () => void {
    this.#inUse++;
    if (this.#inUse > this.#peak) this.#peak = this.#inUse;
    return this.#handle();
  }

  /** The release function of a slot already counted in `#inUse`. */
  #handle(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      // Handed on in the next macrotask, still counted meanwhile. Why: a request's body ends
      // (and its caller releases) a little before the agent marks the socket free (a microtask
      // later); the next request sent at once finds every socket busy and opens another. Seen
      // with 8 slots: 15 sockets handed on at once, 8 one macrotask later.
      setImmediate(() => {
        const next = this.#queue.next();
        if (next) next.grant();
        else this.#inUse--;
      });
    };
  }
}

interface Waiter {
  cancelled: boolean;
  grant(): void;
}

/** Where a model call takes its connection slot (see {@link ConnectionSlots.acquire}). */
export interface SlotSource {
  acquire(signal: AbortSignal): Promise<() => void>;
}

/*
 * One set of slots per endpoint per thread (module state is per thread: each worker has its own
 * copy of this module), shared by every job the thread runs.
 */
const byEndpoint = new Map<string, ConnectionSlots>();

/** This thread's slots for `baseUrl` with `limit` (a different limit for one URL gets its own). */
export function connectionSlotsFor(baseUrl: string, limit: number): ConnectionSlots {
  const key = `${limit} ${baseUrl}`;
  let slots = byEndpoint.get(key);
  if (!slots) {
    slots = new ConnectionSlots(limit);
    byEndpoint.set(key, slots);
  }
  return slots;
}
