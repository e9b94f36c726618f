import type { MessagePort } from 'node:worker_threads';
import type { Logger } from 'pino';
import { JobError, deserializeError, serializeError } from '../../shared/errors.js';
import { mainMessageSchema, type JobSpec, type StopRequest, type WorkerMessage } from '../../shared/protocol.js';
import type { CompletionGate } from './completion-gate.js';
import type { ControlMessage, RemoteEvent, RunResult } from './wire.js';

export interface RemoteRunHooks {
  control(message: ControlMessage): Promise<void>;
  /**
   * Cancels a launch no run was heard starting: true when its BullMQ job was still waiting and
   * is gone; false when it was marked cancelled (key and control message) for its worker.
   */
  cancelWaiting(reason: StopRequest, action?: 'cancel' | 'hard-stop'): Promise<boolean>;
  gate: CompletionGate;
  logger?: Logger | undefined;
}

/**
 * One launch of a job on the BullMQ executor, seen from the main process: it plays the
 * worker's side of the job's port. Messages of the run that holds the job (its lock token) are
 * relayed to the port; those of a run that lost its lock, or was superseded by a re-run, are
 * dropped. A cancel on the port goes to the workers; a hard stop too, and ends the launch.
 */
export class RemoteRun {
  readonly jobId: string;
  readonly bullId: string;
  readonly settled: Promise<void>;
  /** The BullMQ job exists (the poll may look for it); false again once a cancel removed it. */
  added = false;
  /** Its ending (a completion, or BullMQ's failure) was taken by the main side: its job is removed later (finished-jobs.ts). */
  taken = false;
  /** Its worker was told to end its thread (the launch ended here at once). */
  hardStopped = false;
  /** Last time anything was heard of it (the poll asks Redis about quiet runs). */
  lastNews = Date.now();
  readonly #spec: JobSpec;
  readonly #port: MessagePort;
  readonly #hooks: RemoteRunHooks;
  #token: string | undefined;
  /** Abandoned before its job reached Redis: nobody will take its result, so no worker should run it. */
  #takeOutOnAdd = false;
  #stopReason: StopRequest | undefined;
  /** The cancel of a launch not heard starting, on its way to Redis: true when it took the job out of the queue. */
  #waitingCancel: Promise<boolean> | undefined;
  #settled = false;
  #resolve!: () => void;
  #reject!: (error: unknown) => void;

  constructor(spec: JobSpec, bullId: string, port: MessagePort, hooks: RemoteRunHooks) {
    this.jobId = spec.id;
    this.bullId = bullId;
    this.#spec = spec;
    this.#port = port;
    this.#hooks = hooks;
    this.settled = new Promise((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    // A stop can settle it while its job is still on its way into Redis, before the executor
    // awaits it: marked handled, so that is no unhandled rejection (which would end the host).
    this.settled.catch(() => undefined);
    port.on('message', (raw: unknown) => {
      const parsed = mainMessageSchema.safeParse(raw);
      if (!parsed.success) return;
      if (parsed.data.type === 'cancel') void this.#cancel(parsed.data.reason);
      else if (parsed.data.type === 'steer') void this.#steer(parsed.data.id, parsed.data.text, parsed.data.interrupt);
      // spawn-result and child-results cannot arise: remote jobs have no spawn tool.
    });
  }

  get isSettled(): boolean {
    return this.#settled;
  }

  /** A cancel or a stop was asked of it (its job may be on its way out of Redis). */
  get stopAsked(): boolean {
    return this.#stopReason !== undefined || this.hardStopped || this.#takeOutOnAdd;
  }

  spec(): JobSpec {
    return this.#spec;
  }

  onEvent(event: RemoteEvent): void {
    this.lastNews = Date.now();
    if (this.#settled) return;
    const gate = this.#hooks.gate;
    if (event.type === 'lock-lost') {
      gate.markStale(event.token);
      this.#post({
        type: 'alert',
        jobId: this.jobId,
        severity: 'warning',
        message: `run ${event.run} on worker ${event.worker} lost its lock and was aborted; the job runs again on a worker that holds it`,
      });
      return;
    }
    if (gate.isStale(event.token)) return;
    const message = event.message;
    if (message.type === 'started') {
      if (this.#token !== undefined && this.#token !== event.token) {
        // A re-run: the earlier run's worker died or stalled. Nothing of that run counts any more.
        gate.markStale(this.#token);
        this.#post({
          type: 'alert',
          jobId: this.jobId,
          severity: 'warning',
          message: `run ${event.run} started on worker ${event.worker}: the previous run's worker stopped renewing its lock (it died or stalled)`,
        });
      }
      this.#token = event.token;
      return this.#post(message);
    }
    this.#adopt(event.token);
    // Child process groups live on the worker's machine: its own Attempt kills them.
    if (message.type === 'progress' || message.type === 'alert') this.#post(message);
  }

  /**
   * An accepted completion (see CompletionGate): the ending goes to the port as `done` (or
   * `sleep`: the manager keeps the sleep and launches the job again at its time), or the launch
   * fails with its error.
   */
  complete(result: RunResult): void {
    if (this.#settled) return;
    if (result.started) this.#adopt(result.token);
    const end = result.end;
    if (end.kind === 'done' || end.kind === 'sleeping') {
      this.#post(
        end.kind === 'done'
          ? { type: 'done', jobId: this.jobId, outcome: end.outcome }
          : // A job on a worker spawns no children (worker-policy.ts), so none was handed to it unread.
            { type: 'sleep', jobId: this.jobId, state: end.state, at: end.at, reason: end.reason, seenChildren: [] },
      );
      return this.#settle();
    }
    this.#settle(deserializeError(end.error));
  }

  fail(error: unknown): void {
    this.#settle(error);
  }

  /** Phase two of a stop: the worker ends the job's thread; here the launch ends now. */
  hardStop(): void {
    if (this.#settled) return;
    this.hardStopped = true;
    // On its way into Redis: onAdded sends it (the write deletes an earlier launch's keys).
    if (this.added) void this.#sendHardStop();
    this.#settle(new JobError('ABORTED', this.jobId, "hard stop: the worker was told to end the job's thread"));
  }

  /**
   * Not heard starting: taken out of the queue if it still waits, in one batch with the others
   * a close stops; else (and for a run that started) its worker ends its thread.
   */
  async #sendHardStop(): Promise<void> {
    const reason = this.#stopReason ?? 'cancel';
    const control = () => this.#hooks.control({ bullId: this.bullId, action: 'hard-stop', reason });
    try {
      if (this.#token !== undefined) return await control();
      // A cancel already asked for it: the hard stop follows only if that found it taken.
      const removed = this.#waitingCancel ? await this.#waitingCancel : await this.#hooks.cancelWaiting(reason, 'hard-stop');
      if (removed) this.added = false;
      else if (this.#waitingCancel) await control();
    } catch {
      // Redis is away: the job is an orphan, removed when a worker finishes it (finished-jobs.ts).
    }
  }

  /** Ended here without a stop (its executor closed): a job still on its way into Redis is taken out once there. */
  abandon(error: unknown): void {
    if (!this.#settled && !this.added) this.#takeOutOnAdd = true;
    this.#settle(error);
  }

  /**
   * A run whose `started` never reached this process (this main process started after it, or
   * the message was lost with a Redis restart): it counts as an attempt from now on.
   */
  #adopt(token: string): void {
    if (token === this.#token) return;
    if (this.#token !== undefined) this.#hooks.gate.markStale(this.#token);
    this.#token = token;
    this.#post({ type: 'started', jobId: this.jobId, threadId: 0, at: Date.now() });
  }

  /** Redis lost the job; it is added again, and whatever run had it counts no more. */
  onLost(): void {
    if (this.#token !== undefined) this.#hooks.gate.markStale(this.#token);
    this.#post({
      type: 'alert',
      jobId: this.jobId,
      severity: 'warning',
      message: 'the job was missing from Redis (restarted without persistence?); it was queued again',
    });
  }

  /** A message for the job: kept in Redis for the run (or a later one) and sent to the worker running it. */
  async #steer(id: number, text: string, interrupt: boolean): Promise<void> {
    if (this.#settled) return;
    try {
      await this.#hooks.control({ bullId: this.bullId, action: 'steer', message: { id, text }, interrupt });
    } catch (error) {
      // Redis is away: the message is on the job's record, not in its run.
      this.#hooks.logger?.warn({ err: error, bullId: this.bullId }, 'a message for the job could not be sent to Redis');
      this.#post({
        type: 'alert',
        jobId: this.jobId,
        severity: 'warning',
        message: `message ${id} could not reach the job's worker (Redis: ${String(error)})`,
      });
    }
  }

  /** Its BullMQ job is in Redis now: a cancel asked while it was on its way goes out. */
  async onAdded(): Promise<void> {
    this.added = true;
    if (this.hardStopped || this.#takeOutOnAdd) await this.#sendHardStop();
    else if (this.#stopReason && !this.#settled) await this.#sendCancel(this.#stopReason);
  }

  async #cancel(reason: StopRequest): Promise<void> {
    if (this.#settled || this.#stopReason) return;
    this.#stopReason = reason;
    // On its way into Redis: onAdded sends it (the write deletes an earlier launch's cancel key).
    if (this.added) await this.#sendCancel(reason);
  }

  async #sendCancel(reason: StopRequest): Promise<void> {
    try {
      // Not heard starting: taken out of the queue if it still waits, so no worker spends a thread on it.
      if (this.#token === undefined) this.#waitingCancel = this.#hooks.cancelWaiting(reason);
      const removed = this.#waitingCancel
        ? await this.#waitingCancel
        : await this.#hooks.control({ bullId: this.bullId, action: 'cancel', reason }).then(() => false);
      if (removed) {
        // Nothing of it is left in Redis: nothing to poll for, nothing to remove later.
        this.added = false;
        const error = serializeError(new JobError('JOB_CANCELLED', this.jobId, 'cancelled before a worker started it'));
        this.#post({ type: 'done', jobId: this.jobId, outcome: { stopReason: 'aborted', text: '', usage: {}, iterations: 0, error } });
        this.#settle();
      }
    } catch (error) {
      this.#hooks.logger?.debug({ err: error, bullId: this.bullId }, 'cancel: Redis refused it');
    }
  }

  #post(message: WorkerMessage): void {
    try {
      this.#port.postMessage(message);
    } catch {
      // The port is closed: the launch is over.
    }
  }

  #settle(error?: unknown): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#port.close();
    if (error === undefined) this.#resolve();
    else this.#reject(error);
  }
}
