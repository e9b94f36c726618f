import { serializeError } from '../../shared/errors.js';
import type { JobBudgets } from '../limits/budgets.js';
import type { Job, JobPhase } from './job.js';
import { endingFromQueue } from './job-endings.js';
import { JobSpeculation } from './speculation.js';

/** What the dispatcher needs of the manager: how to launch, and what closed means. */
export interface DispatchHost {
  readonly maxConcurrent: number;
  readonly budgets: Pick<JobBudgets, 'gate'>;
  /** Hands a job to the executor (it becomes `dispatched`). */
  launch(job: Job): void;
  /** After close nothing launches: a job still queued ends as cancelled. */
  closed(): boolean;
  stopQueued(job: Job): void;
  /** Nothing is queued, running or waiting for its children. */
  idle(): void;
  /**
   * A real job cannot launch for want of a slot or budget: running guesses give way
   * (speculation.ts). `live`: the live jobs spawned speculative, in launch order; called only when
   * there is one.
   */
  preempt(waiting: readonly Job[], live: readonly Job[], need: 'slot' | 'budget'): void;
}

/**
 * The only way into the queue: a FIFO of jobs behind the concurrency cap
 * (`background.maxConcurrent`) and the session budget's gate. It counts what holds a slot
 * (dispatched and running jobs) and what waits for its children, from each job's moves.
 */
export class Dispatcher {
  readonly #host: DispatchHost;
  readonly #queue: Job[] = [];
  readonly #live = new Map<string, Job>();
  /**
   * The live jobs that were spawned speculative (guesses, kept or dropped: `speculation` is set at
   * booking and never unset), the only ones preemption looks at. With none, a pump at the cap
   * is O(1): no copy of the live jobs, no scan of the queue (a fan-out ends thousands of jobs).
   */
  readonly #liveSpeculative = new Set<Job>();
  /** Queued jobs spawned speculative: with none, the queue's head is its first real job. */
  #queuedSpeculative = 0;
  readonly #suspended = new Set<Job>();
  /** Booked jobs whose worktree is being made (engine.ts): not queued yet, holding no slot. */
  readonly #preparing = new Set<Job>();
  #pumpScheduled = false;
  /** Inside pump(): a call from an ending it caused only sets `#pumpAgain` (no recursion). */
  #pumping = false;
  #pumpAgain = false;

  constructor(host: DispatchHost) {
    this.#host = host;
  }

  /** Queues a job last, and launches at the next microtask. */
  enqueue(job: Job): void {
    this.#queue.push(job);
    if (job.speculation !== undefined) this.#queuedSpeculative++;
    this.schedulePump();
  }

  /** Queues a job first (a resumed parent, a job re-run under the same clock), and launches at the next microtask. */
  enqueueFirst(job: Job): void {
    this.#queue.unshift(job);
    if (job.speculation !== undefined) this.#queuedSpeculative++;
    this.schedulePump();
  }

  /** Holds a booked job out of the queue until {@link release}: its worktree is being made. It holds no slot meanwhile. */
  hold(job: Job): void {
    this.#preparing.add(job);
  }

  /** A held job is ready: queued last. False if it was no longer held (stopped meanwhile). */
  release(job: Job): boolean {
    if (!this.#preparing.delete(job)) return false;
    this.enqueue(job);
    return true;
  }

  /** Takes a job out of the queue (or out of its hold); false if it was in neither. */
  remove(job: Job): boolean {
    if (this.#preparing.delete(job)) return true;
    const at = this.#queue.indexOf(job);
    if (at >= 0) this.#takeAt(at);
    return at >= 0;
  }

  /** Takes the job at `at` out of the queue (shift at the head: V8 trims the array in place). */
  #takeAt(at: number): Job {
    const job = (at === 0 ? this.#queue.shift() : this.#queue.splice(at, 1)[0]) as Job;
    if (job.speculation !== undefined) this.#queuedSpeculative--;
    return job;
  }

  /** A job moved (see Job): what holds a slot and what waits for children is counted here. */
  moved(job: Job, from: JobPhase, to: JobPhase): void {
    if (from === 'dispatched' || from === 'running') this.#live.delete(job.id);
    if (to === 'dispatched' || to === 'running') this.#live.set(job.id, job);
    // Deleted and added again, as in #live: the newest launch last (preemption drops the newest guesses first).
    if (job.speculation !== undefined) {
      this.#liveSpeculative.delete(job);
      if (this.#live.has(job.id)) this.#liveSpeculative.add(job);
    }
    if (from === 'suspended') this.#suspended.delete(job);
    if (to === 'suspended') this.#suspended.add(job);
  }

  /** Jobs holding a slot (handed to the executor), in launch order. */
  live(): Job[] {
    return [...this.#live.values()];
  }

  /** Jobs holding no slot: queued (or held while their worktree is made), or waiting for their children. */
  waiting(): Job[] {
    return [...this.#preparing, ...this.#queue, ...this.#suspended];
  }

  /** Queued (or held) jobs that would wait for a slot (not those about to take a free one at the next microtask). */
  get waitingForSlot(): number {
    // A held job (its worktree being made) is queued once it is ready: it counts as queued already.
    return this.#preparing.size + this.#queue.length - Math.max(0, this.#host.maxConcurrent - this.#live.size);
  }

  /** Queued (or held), handed to the executor, or waiting for its children. */
  get pending(): number {
    return this.#preparing.size + this.#queue.length + this.#live.size + this.#suspended.size;
  }

  /**
   * Launching waits for a microtask: spawn() only books the job and returns, and the spawns of
   * one batch (a parent's tool calls, a fan-out loop) are launched together right after it.
   */
  schedulePump(): void {
    if (this.#pumpScheduled) return;
    this.#pumpScheduled = true;
    queueMicrotask(() => {
      this.#pumpScheduled = false;
      this.pump();
    });
  }

  /**
   * Launches what the cap and the budget allow. Never re-entered: a job that ends inside it
   * (refused, or stopped after close) pumps again from its ending, and that call only asks the
   * running pump for one more round. Re-entered, 2,000 queued jobs ended by a close each
   * pumped inside the previous one's ending, and the stack overflowed.
   */
  pump(): void {
    if (this.#pumping) {
      this.#pumpAgain = true;
      return;
    }
    this.#pumping = true;
    try {
      do {
        this.#pumpAgain = false;
        this.#pumpOnce();
      } while (this.#pumpAgain);
    } finally {
      this.#pumping = false;
    }
    if (this.pending === 0) this.#host.idle();
  }

  #pumpOnce(): void {
    // After close nothing launches; a job re-queued meanwhile ends as cancelled instead.
    if (this.#host.closed()) for (const job of [...this.#queue]) this.#host.stopQueued(job);
    while (this.#queue.length > 0) {
      // At the cap only a running guess can make room, so with none nothing is copied or scanned.
      if (this.#live.size >= this.#host.maxConcurrent) return this.#preempt('slot');
      // Real jobs first, in their order; a guess (speculative, not yet referred to) only after them.
      const at =
        this.#queuedSpeculative === 0
          ? 0
          : Math.max(
              0,
              this.#queue.findIndex((job) => !JobSpeculation.isGuess(job)),
            );
      const head = this.#queue[at] as Job;
      // The session pool decides first: the head waits for leases to return (FIFO), or is refused.
      const gate = this.#host.budgets.gate(head.id, head.spec?.budget, head.spec?.agent, (holder) => this.#live.has(holder));
      if (gate.kind === 'wait') return this.#preempt('budget');
      this.#takeAt(at);
      if (gate.kind === 'go') this.#host.launch(head);
      else head.end(endingFromQueue(serializeError(gate.error)));
    }
  }

  /** A real job waits for `need`: running guesses may give way (only they can; see speculation.ts). */
  #preempt(need: 'slot' | 'budget'): void {
    if (this.#liveSpeculative.size === 0) return;
    this.#host.preempt(this.#queue, [...this.#liveSpeculative], need);
  }
}
