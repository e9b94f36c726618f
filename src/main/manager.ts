import type { Logger } from 'pino';
import { z } from 'zod';
import { assertModelConfigured, type ForkpoolConfig } from '../shared/config.js';
import { errorForRecord } from '../shared/error-detail.js';
import { AbortError, JobError, serializeError } from '../shared/errors.js';
import { JOB_ROLES, type JobRole, type JobSpec } from '../shared/protocol.js';
import { SharedRateGate } from '../shared/rate-gate.js';
import type { LoopEvent } from '../shared/tool-loop.js';
import { TypedEmitter } from './events.js';
import type { Executor } from './executor.js';
import { DeliveryLedger, type JobEnding, type JobRecord } from './ledger.js';
import { PermissionStore } from './permissions.js';
import { createExecutor } from './executor-factory.js';
import { Attempt, type AttemptEnd } from './attempt.js';
import { endingFromLostThread, endingFromOutcome, endingFromProtocol, type StopRequest } from './job-endings.js';
import { realScheduler, settlesWithin, type JobScheduler } from './scheduler.js';
import { WaveTracker } from './waves.js';

export type { JobScheduler, TimerTag } from './scheduler.js';

export interface BackgroundManagerOptions {
  config: ForkpoolConfig;
  /**
   * Defaults to a Piscina executor shaped by `config.background`, which the manager then owns
   * and closes. An executor passed in is the caller's: close() leaves it running unless
   * `closeExecutor` says otherwise.
   */
  executor?: Executor;
  /** Close the executor on close(). Default: only when the manager created it. */
  closeExecutor?: boolean;
  /** The session's grants, served to workers; background jobs never ask a person. */
  permissions?: PermissionStore;
  logger?: Logger;
  /** Job timers (timeout, cancel grace); tests inject a manual one to drive time. */
  scheduler?: JobScheduler;
}

export interface SpawnRequest {
  task: string;
  label: string;
  /** Default `primary`. `user` jobs are not wave-gated. */
  role?: JobRole;
  /** The agent turn that spawned it; omit for a user-started job. */
  wave?: number | null;
  /** The parent's capped session summary (`full_context: true`). */
  parentSummary?: string;
}

export interface SpawnOptions {
  /** Aborting it cancels the job (at once while queued, in two phases while running). */
  signal?: AbortSignal;
}

export interface JobHandle {
  id: string;
  label: string;
  state: JobRecord['state'];
}

export interface CloseReport {
  /** Jobs cancelled by close (queued or running). */
  cancelled: string[];
  /** Jobs that did not end within the bound and were hard-stopped with their threads. */
  stragglers: string[];
}

/** Records in events are frozen values: keep them, never change them. */
export type ManagerEvents = {
  spawned: [Readonly<JobRecord>];
  started: [Readonly<JobRecord>];
  progress: [{ jobId: string; event: LoopEvent }];
  done: [Readonly<JobRecord>];
  requeued: [Readonly<JobRecord>];
  'wave-done': [{ wave: number; jobs: Readonly<JobRecord>[] }];
  idle: [];
};

const spawnRequestSchema = z.strictObject({
  task: z.string().trim().min(1, 'task must not be empty').max(200_000),
  label: z.string().max(200),
  role: z.enum(JOB_ROLES).optional(),
  wave: z.number().int().nullable().optional(),
  parentSummary: z.string().optional(),
});


/**
 * Owns background jobs for the life of a session, not a turn: a FIFO queue behind a
 * concurrency cap, a timeout that starts when a worker picks the job up, two-phase cancel,
 * waves, and the ledger every view reads from. Each launch of a job is an {@link Attempt}.
 */
export class BackgroundManager extends TypedEmitter<ManagerEvents> {
  readonly #ledger: DeliveryLedger;
  readonly #config: ForkpoolConfig;
  readonly #executor: Executor;
  readonly #ownsExecutor: boolean;
  readonly #permissions: PermissionStore;
  readonly #logger: Logger | undefined;
  readonly #scheduler: JobScheduler;
  readonly #specs = new Map<string, JobSpec>();
  /** Times each job was handed to the executor; bounds re-queues even before a `started`. */
  readonly #launches = new Map<string, number>();
  readonly #queue: string[] = [];
  readonly #live = new Map<string, Attempt>();
  readonly #waves = new WaveTracker();
  readonly #rateGateBuffer = SharedRateGate.createBuffer();
  /** Callers of result(id) waiting for a job to end. */
  readonly #waiters = new Map<string, Array<(record: Readonly<JobRecord>) => void>>();
  /** Removes a spawn's AbortSignal listener once its job has ended. */
  readonly #signalCleanups = new Map<string, () => void>();
  #closing: Promise<CloseReport> | undefined;
  #pumpScheduled = false;

  constructor(options: BackgroundManagerOptions) {
    const logger = options.logger;
    super(logger ? (error, event) => logger.warn({ err: error, event }, 'background event listener threw') : undefined);
    this.#config = options.config;
    this.#ledger = new DeliveryLedger(options.config.background.retention);
    this.#permissions = options.permissions ?? new PermissionStore(options.config.grantedTools);
    this.#logger = logger;
    this.#scheduler = options.scheduler ?? realScheduler;
    this.#ownsExecutor = options.closeExecutor ?? options.executor === undefined;
    // Its own executor runs model calls: no endpoint configured is an error now, not in every job.
    if (options.executor === undefined) assertModelConfigured(options.config);
    this.#executor = options.executor ?? createExecutor(options.config, logger, options.config.executor);
  }

  get executor(): Executor {
    return this.#executor;
  }

  get closed(): boolean {
    return this.#closing !== undefined;
  }

  /**
   * Queues a job and returns at once. Its cancel handle exists from now on, and aborting
   * `options.signal` cancels it. Throws `MANAGER_CLOSED`, `QUEUE_FULL`, `ABORTED` (the signal
   * was already aborted) or `TOOL_ARGUMENTS_INVALID` (a clear message the model can read).
   */
  spawn(request: SpawnRequest, options: SpawnOptions = {}): JobHandle {
    if (this.closed) throw new JobError('MANAGER_CLOSED', '-', 'the background manager is closed; no new jobs are accepted');
    if (options.signal?.aborted) throw new AbortError(options.signal.reason);
    const parsed = spawnRequestSchema.safeParse(request);
    if (!parsed.success) throw new JobError('TOOL_ARGUMENTS_INVALID', '-', `invalid spawn request: ${z.prettifyError(parsed.error)}`);
    const { queueLimit, maxConcurrent } = this.#config.background;
    // Jobs about to take a free slot (launched at the next microtask) are not waiting.
    const waiting = this.#queue.length - Math.max(0, maxConcurrent - this.#live.size);
    if (queueLimit > 0 && waiting >= queueLimit) {
      throw new JobError('QUEUE_FULL', '-', `the background queue is full (${queueLimit} jobs waiting); wait for some to finish or cancel one`);
    }
    const id = this.#ledger.newId();
    const wave = parsed.data.wave ?? null;
    const record = this.#ledger.add({ id, label: parsed.data.label || id, task: parsed.data.task, role: parsed.data.role ?? 'primary', wave });
    this.#specs.set(id, {
      id,
      label: record.label,
      task: record.task,
      role: record.role,
      config: this.#config,
      attempt: 1,
      ...(parsed.data.parentSummary ? { parentSummary: parsed.data.parentSummary } : {}),
    });
    if (wave !== null) this.#waves.add(wave, id);
    if (options.signal) this.#cancelOnAbort(id, options.signal);
    this.#queue.push(id);
    this.emit('spawned', record);
    this.#schedulePump();
    return { id, label: record.label, state: 'queued' };
  }

  /** Resolves with the job's final record once it has ended (at once if it already has). */
  result(id: string): Promise<Readonly<JobRecord>> {
    const record = this.#ledger.get(id);
    if (!record) return Promise.reject(new JobError('JOB_UNKNOWN', id, `no background job with id "${id}"`));
    if (record.state === 'ended') return Promise.resolve(record);
    return new Promise((resolve) => {
      const waiting = this.#waiters.get(id) ?? [];
      waiting.push(resolve);
      this.#waiters.set(id, waiting);
    });
  }

  /** A cheap snapshot of every job: records are frozen values, replaced (not changed) as jobs move. */
  jobs(): Readonly<JobRecord>[] {
    return this.#ledger.snapshot();
  }

  get(id: string): Readonly<JobRecord> | undefined {
    return this.#ledger.get(id);
  }

  /** How many jobs are in a state. */
  count(state: JobRecord['state']): number {
    return this.#ledger.count(state);
  }

  /** How many ended jobs wait for delivery. */
  get undeliveredCount(): number {
    return this.#ledger.undeliveredCount;
  }

  /** Ended jobs not yet delivered. */
  undelivered(): Readonly<JobRecord>[] {
    return this.#ledger.undelivered();
  }

  /**
   * Marks one ended job delivered (in `turn`) without a drain: for a program that hands each
   * result on by itself, as `fanout` prints it. Its full text then falls under retention.
   */
  markDelivered(id: string, turn = 0): void {
    this.#ledger.markDelivered(id, turn);
  }

  /**
   * Cancels a job: at once while queued; while running, cooperatively over its port and after
   * the grace period by stopping its thread. Idempotent; an unknown id throws `JOB_UNKNOWN`.
   */
  cancel(id: string): JobHandle {
    return this.#stop(id, 'cancel');
  }

  /** Ended jobs not yet delivered, handed over once and marked delivered in `turn`. */
  drain(turn: number): Readonly<JobRecord>[] {
    return this.#ledger.drain(turn);
  }

  /** The spawning turn is over: its wave can now end. Fires `wave-done` if it already has. */
  sealWave(wave: number): void {
    if (this.#waves.seal(wave)) this.#checkWave(wave);
  }

  /** Queued plus handed to the executor. */
  get pending(): number {
    return this.#queue.length + this.#live.size;
  }

  /** Resolves when no job is queued or running (at once if already so). */
  onIdle(): Promise<void> {
    if (this.pending === 0) return Promise.resolve();
    return new Promise((resolve) => this.once('idle', () => resolve()));
  }

  /**
   * Stops intake, cancels queued jobs and asks running ones to stop (or, with `drain`, lets
   * them finish), waits up to `timeoutMs`, hard-stops stragglers, and closes the executor it
   * created: no thread of its own is left running. Every call returns the same promise.
   */
  close(options: { drain?: boolean; timeoutMs?: number } = {}): Promise<CloseReport> {
    this.#closing ??= this.#close(options.drain ?? false, options.timeoutMs ?? this.#config.background.closeTimeoutMs);
    return this.#closing;
  }

  /** Hard-stops every job now (no grace), then closes as {@link close} does. */
  destroy(): Promise<CloseReport> {
    const closing = this.close({ timeoutMs: 0 });
    // A close already under way with a longer bound is cut short here.
    for (const attempt of this.#live.values()) {
      attempt.stopReason ??= 'close';
      attempt.hardStop();
    }
    return closing;
  }

  async #close(drain: boolean, timeoutMs: number): Promise<CloseReport> {
    const report: CloseReport = { cancelled: [], stragglers: [] };
    for (const id of [...this.#queue]) {
      this.#stop(id, 'close');
      report.cancelled.push(id);
    }
    const deadline = settlesWithin(this.onIdle(), timeoutMs);
    if (!drain) {
      for (const id of [...this.#live.keys()]) {
        this.#stop(id, 'close');
        report.cancelled.push(id);
      }
    }
    if (!(await deadline)) {
      for (const attempt of this.#live.values()) {
        report.stragglers.push(attempt.jobId);
        attempt.stopReason ??= 'close';
        attempt.hardStop();
      }
      await settlesWithin(this.onIdle(), 1_000);
    }
    if (this.#ownsExecutor) await this.#executor.close();
    // A job whose thread is gone but whose ending never arrived is ended here, so none is lost.
    const left = [...this.#live.values()];
    for (const attempt of left) {
      attempt.stopReason ??= 'close';
      attempt.abandon(new JobError('ABORTED', attempt.jobId, 'its thread was ended by close() before it reported a result'));
    }
    await Promise.all(left.map((attempt) => attempt.ended));
    await Promise.resolve();
    return report;
  }

  #stop(id: string, reason: StopRequest): JobHandle {
    const record = this.#ledger.get(id);
    if (!record) throw new JobError('JOB_UNKNOWN', id, `no background job with id "${id}"`);
    const handle = (): JobHandle => ({ id, label: record.label, state: this.#ledger.get(id)?.state ?? 'ended' });
    const queuedAt = this.#queue.indexOf(id);
    if (queuedAt >= 0) {
      this.#queue.splice(queuedAt, 1);
      const error = serializeError(new JobError('JOB_CANCELLED', id, `cancelled while queued (${reason})`));
      this.#finish(id, { status: 'cancelled', endedBy: 'queue', resultText: '', usage: {}, iterations: 0, error });
    } else {
      this.#live.get(id)?.requestStop(reason);
    }
    return handle();
  }

  #cancelOnAbort(id: string, signal: AbortSignal): void {
    const onAbort = () => {
      if (this.#ledger.get(id)?.state !== 'ended') this.cancel(id);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    this.#signalCleanups.set(id, () => signal.removeEventListener('abort', onAbort));
  }

  /**
   * Launching waits for a microtask: spawn() only books the job and returns, and the spawns of
   * one batch (a parent's tool calls, a fan-out loop) are launched together right after it.
   */
  #schedulePump(): void {
    if (this.#pumpScheduled) return;
    this.#pumpScheduled = true;
    queueMicrotask(() => {
      this.#pumpScheduled = false;
      this.#pump();
    });
  }

  #pump(): void {
    // After close nothing launches; a job re-queued meanwhile ends as cancelled instead.
    if (this.closed) for (const id of [...this.#queue]) this.#stop(id, 'close');
    const cap = this.#config.background.maxConcurrent;
    while (this.#live.size < cap && this.#queue.length > 0) this.#launch(this.#queue.shift() as string);
    if (this.pending === 0) this.emit('idle');
  }

  #launch(id: string): void {
    const spec = this.#specs.get(id) as JobSpec;
    const number = (this.#launches.get(id) ?? 0) + 1;
    this.#launches.set(id, number);
    const attempt: Attempt = new Attempt({
      jobId: id,
      number,
      executor: this.#executor,
      scheduler: this.#scheduler,
      permissions: { isGranted: (tool) => this.#permissions.isGranted(tool) },
      rateGateBuffer: this.#rateGateBuffer,
      cancelGraceMs: this.#config.background.cancelGraceMs,
      logger: this.#logger,
      onStarted: (threadId) => {
        this.#ledger.markRunning(id, threadId);
        // The wall clock starts now: time spent queued does not count.
        attempt.armTimeout(this.#config.background.timeoutMinutes * 60_000, () => this.#stop(id, 'timeout'));
        this.emit('started', this.#ledger.get(id) as JobRecord);
      },
      onProgress: (event) => this.emit('progress', { jobId: id, event }),
    });
    this.#live.set(id, attempt);
    void attempt.ended.then((end) => this.#onAttemptEnded(attempt, end));
    attempt.launch({ ...spec, attempt: number });
  }

  #onAttemptEnded(attempt: Attempt, end: AttemptEnd): void {
    // Identity, not id: after a re-queue the same id is live again under a new attempt.
    if (this.#live.get(attempt.jobId) !== attempt) return;
    const id = attempt.jobId;
    if (end.kind === 'done') return this.#finish(id, endingFromOutcome(end.outcome, attempt.stopReason));
    if (end.kind === 'protocol') return this.#finish(id, endingFromProtocol(end.error, attempt));
    // In shared isolation a dead thread takes its neighbours along and the culprit is unknown:
    // each gets another try on a thread of its own (so a poison job can only kill itself), a
    // bounded number of times, so a job that kills every thread it lands on still ends.
    const threadDied = !attempt.hardStopped && !attempt.stopReason && this.#executor.capabilities.isolation === 'shared' && isThreadDeath(end.error);
    if (threadDied && attempt.number <= this.#config.background.maxRequeues) {
      return this.#requeue(attempt, `attempt ${attempt.number}: its thread died under it (${serializeError(end.error).message}); re-queued to run on a thread of its own`);
    }
    this.#finish(id, endingFromLostThread(id, end.error, attempt, threadDied));
  }

  #requeue(attempt: Attempt, note: string): void {
    attempt.dispose();
    this.#live.delete(attempt.jobId);
    if (this.#ledger.get(attempt.jobId)?.state === 'running') this.#ledger.requeue(attempt.jobId, note);
    this.#queue.unshift(attempt.jobId);
    this.emit('requeued', this.#ledger.get(attempt.jobId) as JobRecord);
    this.#pump();
  }

  #finish(id: string, ending: JobEnding): void {
    const attempt = this.#live.get(id);
    if (attempt) {
      attempt.dispose();
      this.#live.delete(id);
    }
    const error = ending.error && errorForRecord(ending.error, this.#config.errorDetail, this.#config.workspaceRoot);
    const record = this.#ledger.markEnded(id, error ? { ...ending, error } : ending);
    this.#specs.delete(id);
    this.#launches.delete(id);
    this.#signalCleanups.get(id)?.();
    this.#signalCleanups.delete(id);
    this.emit('done', record);
    for (const resolve of this.#waiters.get(id) ?? []) resolve(record);
    this.#waiters.delete(id);
    if (record.wave !== null) this.#checkWave(record.wave);
    this.#pump();
  }

  #checkWave(wave: number): void {
    // hasEnded: a member delivered early may since have been forgotten by retention.
    const members = this.#waves.takeIfEnded(wave, (id) => this.#ledger.hasEnded(id));
    if (members) this.emit('wave-done', { wave, jobs: members.flatMap((id) => this.#ledger.get(id) ?? []) });
  }
}

/** A lost attempt whose thread died (not a task that threw, which leaves its thread alive). */
function isThreadDeath(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'THREAD_LOST' || code === 'WORKER_OUT_OF_MEMORY';
}
