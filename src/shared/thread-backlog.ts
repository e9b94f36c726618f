import { AbortError } from './errors.js';
import { WaitQueue } from './wait-queue.js';

/**
 * The jobs of one thread that wait in its own bounded queues: for a model connection
 * (ConnectionSlots) or a search slot (withSearchSlot). A new job builds its loop (its tools,
 * messages and closures: ~20 KB) only while fewer than its connection limit wait there,
 * counting the jobs let in that have not yet asked for anything ({@link ThreadBacklog.enter}).
 *
 * Why: with every job started at once, 100,000 jobs in flight on two `shared` threads each held
 * a built loop (issue 40: ~5 GB at the peak) to wait in those queues, and a job in its second
 * call waited behind every new job's first. A job that waits for anything else (a command it
 * runs, a host tool, a person) holds no place, so a thread never stops starting jobs because its
 * started ones are busy elsewhere; a queue here always moves, so a waiting job always starts.
 *
 * Module state: each worker thread has its own (and the main thread one, for inline jobs).
 */
export class ThreadBacklog {
  /** Jobs waiting in a queue of this thread now. */
  #queued = 0;
  /** Jobs let in that have not yet waited for or taken a slot: they will, so they count as queued. */
  #entering = 0;
  /** Jobs waiting to start, in order. */
  readonly #entrants = new WaitQueue<Entrant>();

  /** Jobs waiting in this thread's queues. */
  get queued(): number {
    return this.#queued;
  }

  /** Jobs waiting to start. */
  get waitingToStart(): number {
    return this.#entrants.waiting;
  }

  /** A job begins to wait in one of the thread's queues. */
  queueJoined(): void {
    this.#queued++;
  }

  /** A job stops waiting in one (served, or aborted): another may start. */
  queueLeft(): void {
    this.#queued--;
    this.#letIn();
  }

  /**
   * A job's way in: resolves once fewer than `limit` jobs wait in the thread's queues (counting
   * those let in before it that have not asked for anything yet), in order; rejects with an
   * AbortError if `signal` aborts first. `arrived()` (once its first request takes or waits for a
   * slot, or when it ends without one; a second call does nothing) ends its entering.
   */
  enter(limit: number, signal: AbortSignal): Promise<() => void> {
    if (signal.aborted) return Promise.reject(new AbortError(signal.reason));
    if (this.#entrants.isEmpty && this.#hasRoom(limit)) return Promise.resolve(this.#admit());
    return new Promise((resolve, reject) => {
      const entrant: Entrant = {
        limit,
        cancelled: false,
        admit: () => {
          signal.removeEventListener('abort', onAbort);
          resolve(this.#admit());
        },
      };
      // Left in the queue, marked: it is skipped when its turn comes.
      const onAbort = () => {
        entrant.cancelled = true;
        reject(new AbortError(signal.reason));
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.#entrants.push(entrant);
    });
  }

  #hasRoom(limit: number): boolean {
    return this.#queued + this.#entering < limit;
  }

  #admit(): () => void {
    this.#entering++;
    let entering = true;
    return () => {
      if (!entering) return;
      entering = false;
      this.#entering--;
      this.#letIn();
    };
  }

  /** Lets waiting jobs start, in order, while there is room for the next. */
  #letIn(): void {
    for (let next = this.#entrants.peek(); next && this.#hasRoom(next.limit); next = this.#entrants.peek()) {
      this.#entrants.next();
      next.admit();
    }
  }
}

interface Entrant {
  limit: number;
  cancelled: boolean;
  admit(): void;
}

/** This thread's backlog. */
export const threadBacklog = new ThreadBacklog();
