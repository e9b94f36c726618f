/**
 * Sleeping jobs (the `sleep` scheduler, docs/delivery.md "Schedulers"), on the design of
 * approvals.ts. A job's `schedule_next_turn(after, reason)` ends its run after that batch of
 * calls: it hands its conversation over and ends its attempt, so its slot and its thread are
 * given back while it sleeps, and its wall clock (timeoutMinutes) stops. Its record stays
 * `running`, with `sleepWait` (when, why, what it spent); the conversation is written beside its
 * row, so a process restarted with the ledger finds it still asleep and wakes it at the same
 * time (recovery.ts). At its time it is queued (last, as any job that asks for a slot) and goes
 * on from its conversation with one user message saying its turn has come.
 *
 * This object owns the sleeps and their timers; the ledger owns what is written.
 */
import type { ForkpoolConfig } from '../../shared/config.js';
import { redactConversation } from '../../shared/conversation-cap.js';
import { JobError, serializeError } from '../../shared/errors.js';
import type { ResumeState } from '../../shared/protocol.js';
import { wakeMessage, type ScheduledTurn } from '../../shared/scheduler.js';
import { redactionSecrets } from '../../shared/tools/host-secrets.js';
import type { JobScheduler } from '../executors/scheduler.js';
import type { DeliveryLedger, JobRecord, SleepWait } from '../ledger/ledger.js';
import type { JobStore } from '../ledger/ledger-store.js';
import type { Dispatcher } from './dispatcher.js';
import type { Job } from './job.js';
import type { Emit } from './manager-api.js';
import { lastAssistantText } from './nesting.js';

export interface SleepsHost {
  readonly config: ForkpoolConfig;
  readonly ledger: DeliveryLedger;
  readonly store: JobStore | undefined;
  readonly dispatcher: Dispatcher;
  readonly scheduler: JobScheduler;
  readonly emit: Emit;
  /** A step in the job's transcript (who, when, what). */
  note(jobId: string, text: string): void;
}

type RunState = Omit<ResumeState, 'childResults'>;

/** A sleeping job: where it goes on from, when, and the timer that wakes it. */
interface Sleep {
  job: Job;
  state: RunState;
  turn: ScheduledTurn;
  timer: unknown;
}

export class JobSleeps {
  readonly #host: SleepsHost;
  readonly #secrets: readonly string[];
  readonly #sleeps = new Map<string, Sleep>();

  constructor(host: SleepsHost) {
    this.#host = host;
    this.#secrets = redactionSecrets(host.config);
  }

  /**
   * Its attempt ended asleep: its slot and thread are given back, its clock stops, its wake is
   * timed. Children's results handed to that run and not among `seenChildren` are held, on the
   * wait record written here, for its next run.
   */
  asleep(job: Job, state: RunState, turn: ScheduledTurn, seenChildren: readonly string[]): void {
    const now = Date.now();
    job.ranMs += job.runningSince === undefined ? 0 : now - job.runningSince;
    job.runningSince = undefined;
    job.fallAsleep(seenChildren);
    // Kept beside its row (redacted, as every conversation the ledger keeps): a restart goes on from it.
    const store = this.#host.store;
    if (store)
      this.#host.ledger.writeAside(`job ${job.id}'s conversation`, () => store.putConversation(job.id, redactConversation(state.messages, this.#secrets)));
    const record = this.#host.ledger.waits.sleep(job.id, this.#waitRecord(job, state, turn));
    this.#host.note(job.id, `asleep until ${new Date(turn.at).toISOString()}: ${turn.reason}`);
    this.#sleep(job, state, turn, now);
    this.#host.emit('sleeping', record);
    // Its slot is free: the queue goes on.
    this.#host.dispatcher.pump();
  }

  /** Stopped while it sleeps (cancel, close, timeout, budget): it ends at once with what it last said. False when it does not sleep. */
  stop(job: Job, reason: 'cancel' | 'timeout' | 'close' | 'budget'): boolean {
    const sleep = this.#sleeps.get(job.id);
    if (!sleep) return false;
    this.#drop(sleep);
    const timedOut = reason === 'timeout';
    const message = `${timedOut ? 'timed out' : 'cancelled'} while asleep until ${new Date(sleep.turn.at).toISOString()} (${reason})`;
    job.end({
      status: timedOut ? 'timed_out' : 'cancelled',
      endedBy: 'cooperative',
      resultText: lastAssistantText(sleep.state.messages),
      usage: sleep.state.usage,
      iterations: sleep.state.iterations,
      error: serializeError(new JobError(timedOut ? 'JOB_TIMEOUT' : 'JOB_CANCELLED', job.id, message)),
      ...(reason === 'close' ? { byClose: true as const } : {}),
    });
    return true;
  }

  /** A job ended (or was forgotten): its timer goes. */
  ended(jobId: string): void {
    const sleep = this.#sleeps.get(jobId);
    if (sleep) this.#drop(sleep);
  }

  /**
   * Restart recovery: a job the last process left asleep wakes at its original time (at once when
   * that has passed); one it had woken and not yet run again is queued now. Its conversation comes
   * from beside its row. False when that conversation is gone (then it cannot go on).
   */
  restore(job: Job, record: Readonly<JobRecord>): boolean {
    const wait = record.sleepWait;
    const messages = wait && this.#host.store?.conversation(job.id);
    if (!wait || !messages) return false;
    job.ranMs = wait.ranMs;
    job.results.held.push(...(wait.childResults ?? []));
    const state: RunState = { messages, usage: wait.usage, iterations: wait.iterations, ...(wait.wrapUpSent ? { wrapUpSent: true } : {}) };
    const turn = { at: wait.at, reason: wait.reason };
    if (record.state === 'queued') {
      job.wake({ ...state, childResults: wakeMessage(turn) });
      this.#host.dispatcher.enqueue(job);
      return true;
    }
    job.fallAsleep();
    this.#sleep(job, state, turn, Date.now());
    return true;
  }

  #sleep(job: Job, state: RunState, turn: ScheduledTurn, now: number): void {
    const sleep: Sleep = { job, state, turn, timer: undefined };
    this.#sleeps.set(job.id, sleep);
    sleep.timer = this.#host.scheduler.set(() => this.#wake(sleep), Math.max(0, turn.at - now), { jobId: job.id, kind: 'sleep' });
  }

  /** Its time came: queued to take a slot again, to go on from its conversation. */
  #wake(sleep: Sleep): void {
    const { job } = sleep;
    if (this.#sleeps.get(job.id) !== sleep || job.isOver) return;
    this.#sleeps.delete(job.id);
    this.#host.ledger.waits.woke(job.id);
    this.#host.note(job.id, `woke: ${sleep.turn.reason}`);
    job.wake({ ...sleep.state, childResults: wakeMessage(sleep.turn) });
    this.#host.dispatcher.enqueue(job);
  }

  #waitRecord(job: Job, state: RunState, turn: ScheduledTurn): SleepWait {
    return {
      at: turn.at,
      reason: turn.reason,
      usage: state.usage,
      iterations: state.iterations,
      ...(state.wrapUpSent ? { wrapUpSent: true as const } : {}),
      ranMs: job.ranMs,
      ...(job.results.held.length > 0 ? { childResults: [...job.results.held] } : {}),
    };
  }

  #drop(sleep: Sleep): void {
    this.#host.scheduler.clear(sleep.timer);
    this.#sleeps.delete(sleep.job.id);
  }
}
