import { MessageChannel, type MessagePort } from 'node:worker_threads';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { ForkpoolConfig } from '../shared/config.js';
import { JobError, serializeError } from '../shared/errors.js';
import { exposeOnPort } from '../shared/comlink-port.js';
import { JOB_ROLES, workerMessageSchema, type JobOutcome, type JobRole, type JobSpec, type PermissionService } from '../shared/protocol.js';
import { SharedRateGate } from '../shared/rate-gate.js';
import type { LoopEvent } from '../shared/tool-loop.js';
import { TypedEmitter } from './events.js';
import type { Executor } from './executor.js';
import { DeliveryLedger, type JobEnding, type JobRecord } from './ledger.js';
import { PermissionStore } from './permissions.js';
import { createExecutor } from './executor-factory.js';
import { endingFromLostThread, endingFromOutcome, type StopRequest } from './job-endings.js';
import { realScheduler, settlesWithin, type JobScheduler } from './scheduler.js';
import { WaveTracker } from './waves.js';

export type { JobScheduler, TimerTag } from './scheduler.js';

export interface BackgroundManagerOptions {
  config: ForkpoolConfig;
  /** Defaults to a Piscina executor shaped by `config.background`. */
  executor?: Executor;
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

export type ManagerEvents = {
  spawned: [JobRecord];
  started: [JobRecord];
  progress: [{ jobId: string; event: LoopEvent }];
  done: [JobRecord];
  requeued: [JobRecord];
  'wave-done': [{ wave: number; jobs: JobRecord[] }];
  idle: [];
};

const spawnRequestSchema = z.strictObject({
  task: z.string().trim().min(1, 'task must not be empty').max(200_000),
  label: z.string().max(200),
  role: z.enum(JOB_ROLES).optional(),
  wave: z.number().int().nullable().optional(),
  parentSummary: z.string().optional(),
});

/** Main-thread state of a job handed to the executor. Gone once the job ends. */
interface LiveJob {
  id: string;
  port: MessagePort;
  permissionPort: MessagePort;
  hardStop: AbortController;
  stopReason?: StopRequest;
  hardStopped: boolean;
  threadId?: number;
  outcome?: JobOutcome;
  portClosed: boolean;
  runSettled: boolean;
  runError?: unknown;
  timers: unknown[];
}

/**
 * Owns background jobs for the life of a session, not a turn: a FIFO queue behind a
 * concurrency cap, a timeout that starts when a worker picks the job up, two-phase cancel,
 * waves, and the ledger every view reads from.
 */
export class BackgroundManager extends TypedEmitter<ManagerEvents> {
  readonly ledger = new DeliveryLedger();
  readonly #config: ForkpoolConfig;
  readonly #executor: Executor;
  readonly #permissions: PermissionStore;
  readonly #logger: Logger | undefined;
  readonly #scheduler: JobScheduler;
  readonly #specs = new Map<string, JobSpec>();
  /** Times each job was handed to the executor; bounds re-queues even before a `started`. */
  readonly #launches = new Map<string, number>();
  readonly #queue: string[] = [];
  readonly #live = new Map<string, LiveJob>();
  readonly #waves = new WaveTracker();
  readonly #rateGateBuffer = SharedRateGate.createBuffer();
  #closed = false;
  #maxLive = 0;
  #pumpScheduled = false;

  constructor(options: BackgroundManagerOptions) {
    const logger = options.logger;
    super(logger ? (error, event) => logger.warn({ err: error, event }, 'background event listener threw') : undefined);
    this.#config = options.config;
    this.#permissions = options.permissions ?? new PermissionStore(options.config.grantedTools);
    this.#logger = options.logger;
    this.#scheduler = options.scheduler ?? realScheduler;
    this.#executor = options.executor ?? createExecutor(options.config, options.logger);
  }

  get executor(): Executor {
    return this.#executor;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** The most jobs that were ever handed to the executor at once (never above the cap). */
  get peakConcurrency(): number {
    return this.#maxLive;
  }

  /**
   * Queues a job and returns at once. Its cancel handle exists from now on. Throws
   * `MANAGER_CLOSED`, `QUEUE_FULL` or `TOOL_ARGUMENTS_INVALID` (a clear message the model can read).
   */
  spawn(request: SpawnRequest): JobHandle {
    if (this.#closed) throw new JobError('MANAGER_CLOSED', '-', 'the background manager is closed; no new jobs are accepted');
    const parsed = spawnRequestSchema.safeParse(request);
    if (!parsed.success) throw new JobError('TOOL_ARGUMENTS_INVALID', '-', `invalid spawn request: ${z.prettifyError(parsed.error)}`);
    const { queueLimit } = this.#config.background;
    // Jobs about to take a free slot (launched at the next microtask) are not waiting.
    const waiting = this.#queue.length - Math.max(0, this.#config.background.maxConcurrent - this.#live.size);
    if (queueLimit > 0 && waiting >= queueLimit) {
      throw new JobError('QUEUE_FULL', '-', `the background queue is full (${queueLimit} jobs waiting); wait for some to finish or cancel one`);
    }
    const id = this.ledger.newId();
    const wave = parsed.data.wave ?? null;
    const record = this.ledger.add({ id, label: parsed.data.label || id, task: parsed.data.task, role: parsed.data.role ?? 'primary', wave });
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
    this.#queue.push(id);
    this.emit('spawned', structuredClone(record));
    this.#schedulePump();
    return { id, label: record.label, state: 'queued' };
  }

  /** A cheap read-only snapshot of every job. */
  jobs(): JobRecord[] {
    return this.ledger.snapshot();
  }

  get(id: string): JobRecord | undefined {
    const record = this.ledger.get(id);
    return record ? structuredClone(record) : undefined;
  }

  /**
   * Cancels a job: at once while queued; while running, cooperatively over its port and after
   * the grace period by stopping its thread. Idempotent; an unknown id throws `JOB_UNKNOWN`.
   */
  cancel(id: string): JobHandle {
    return this.#stop(id, 'cancel');
  }

  /** Ended jobs not yet delivered, handed over once and marked delivered in `turn`. */
  drain(turn: number): JobRecord[] {
    return this.ledger.drain(turn);
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
    return new Promise((resolve) => {
      const off = this.on('idle', () => {
        off();
        resolve();
      });
    });
  }

  /**
   * Stops intake, cancels queued jobs and asks running ones to stop (or, with `drain`, lets
   * them finish), waits up to `timeoutMs`, hard-stops stragglers, and closes the executor:
   * no thread is left running.
   */
  async close(options: { drain?: boolean; timeoutMs?: number } = {}): Promise<CloseReport> {
    const timeoutMs = options.timeoutMs ?? this.#config.background.closeTimeoutMs;
    const report: CloseReport = { cancelled: [], stragglers: [] };
    if (this.#closed) return report;
    this.#closed = true;
    for (const id of [...this.#queue]) {
      this.#stop(id, 'close');
      report.cancelled.push(id);
    }
    const deadline = settlesWithin(this.onIdle(), timeoutMs);
    if (!options.drain) {
      for (const id of [...this.#live.keys()]) {
        this.#stop(id, 'close');
        report.cancelled.push(id);
      }
    }
    if (!(await deadline)) {
      for (const live of this.#live.values()) {
        report.stragglers.push(live.id);
        live.stopReason ??= 'close';
        this.#hardStop(live);
      }
      await settlesWithin(this.onIdle(), 1_000);
    }
    await this.#executor.close();
    // A job whose thread is gone but whose ending never arrived is ended here, so none is lost.
    for (const live of [...this.#live.values()]) {
      live.stopReason ??= 'close';
      live.hardStopped = true;
      live.runSettled = live.portClosed = true;
      this.#settle(live);
    }
    return report;
  }

  #stop(id: string, reason: StopRequest): JobHandle {
    const record = this.ledger.get(id);
    if (!record) throw new JobError('JOB_UNKNOWN', id, `no background job with id "${id}"`);
    const handle = (): JobHandle => ({ id, label: record.label, state: this.ledger.get(id)?.state ?? 'ended' });
    if (record.state === 'ended') return handle();
    const queuedAt = this.#queue.indexOf(id);
    if (queuedAt >= 0) {
      this.#queue.splice(queuedAt, 1);
      this.#finish(id, { status: 'cancelled', endedBy: 'queue', resultText: '', usage: {}, iterations: 0, error: serializeError(new JobError('JOB_CANCELLED', id, `cancelled while queued (${reason})`)) });
      return handle();
    }
    const live = this.#live.get(id);
    if (!live || live.stopReason) return handle();
    live.stopReason = reason;
    live.port.postMessage({ type: 'cancel', reason });
    // Phase two: a job that ignores the cooperative cancel loses its thread.
    live.timers.push(this.#scheduler.set(() => this.#hardStop(live), this.#config.background.cancelGraceMs, { jobId: id, kind: 'cancel-grace' }));
    return handle();
  }

  #hardStop(live: LiveJob): void {
    if (live.hardStopped || !this.#live.has(live.id)) return;
    live.hardStopped = true;
    live.hardStop.abort(new JobError('JOB_CANCELLED', live.id, 'hard stop'));
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
    if (this.#closed) for (const id of [...this.#queue]) this.#stop(id, 'close');
    const cap = this.#config.background.maxConcurrent;
    while (this.#live.size < cap && this.#queue.length > 0) this.#launch(this.#queue.shift() as string);
    this.#maxLive = Math.max(this.#maxLive, this.#live.size);
    if (this.pending === 0) this.emit('idle');
  }

  #launch(id: string): void {
    const spec = this.#specs.get(id) as JobSpec;
    const attempt = (this.#launches.get(id) ?? 0) + 1;
    this.#launches.set(id, attempt);
    const events = new MessageChannel();
    const permissions = new MessageChannel();
    const live: LiveJob = { id, port: events.port1, permissionPort: permissions.port1, hardStop: new AbortController(), hardStopped: false, portClosed: false, runSettled: false, timers: [] };
    this.#live.set(id, live);
    const service: PermissionService = { isGranted: (tool) => this.#permissions.isGranted(tool) };
    exposeOnPort(service, permissions.port1);
    live.port.on('message', (message: unknown) => this.#onMessage(live, message));
    live.port.once('close', () => {
      live.portClosed = true;
      this.#settle(live);
    });
    this.#executor
      .run(
        { spec: { ...spec, attempt }, port: events.port2, permissionPort: permissions.port2, rateGateBuffer: this.#rateGateBuffer },
        { hardStop: live.hardStop.signal, exclusive: attempt > 1 },
      )
      .then(
        () => undefined,
        (error: unknown) => {
          live.runError = error;
        },
      )
      .finally(() => {
        live.runSettled = true;
        // A thread that died may leave the port open for a moment; don't wait on it forever.
        if (!live.portClosed && this.#live.has(live.id)) {
          const onTimer = () => {
            live.portClosed = true;
            this.#settle(live);
          };
          live.timers.push(this.#scheduler.set(onTimer, 2_000, { jobId: live.id, kind: 'port-close' }));
        }
        this.#settle(live);
      });
  }

  #onMessage(live: LiveJob, raw: unknown): void {
    const parsed = workerMessageSchema.safeParse(raw);
    if (!parsed.success || parsed.data.jobId !== live.id) {
      this.#logger?.warn({ jobId: live.id }, 'ignored an invalid message from a worker');
      return;
    }
    const message = parsed.data;
    if (message.type === 'started') {
      live.threadId = message.threadId;
      this.ledger.markRunning(live.id, message.threadId);
      // The wall clock starts now: time spent queued does not count.
      const timeoutMs = this.#config.background.timeoutMinutes * 60_000;
      live.timers.push(this.#scheduler.set(() => this.#stop(live.id, 'timeout'), timeoutMs, { jobId: live.id, kind: 'timeout' }));
      this.emit('started', this.get(live.id) as JobRecord);
    } else if (message.type === 'progress') {
      this.emit('progress', { jobId: live.id, event: message.event as LoopEvent });
    } else {
      live.outcome = message.outcome as JobOutcome;
      this.#settle(live);
    }
  }

  /** Ends a live job once enough is known: its `done`, or its port closed and its run settled. */
  #settle(live: LiveJob): void {
    // Identity, not id: after a re-queue the same id is live again under a new attempt, and a
    // late callback of the old attempt (its port's `close`, its run settling) must not end it.
    if (this.#live.get(live.id) !== live) return;
    if (live.outcome) return this.#finish(live.id, endingFromOutcome(live.outcome, live.stopReason));
    if (!live.portClosed || !live.runSettled) return;
    const error = live.runError ?? new JobError('PROTOCOL_INVALID', live.id, 'the worker ended the job without reporting a result');
    const attempt = this.#launches.get(live.id) ?? 1;
    // In shared isolation a dead thread takes its neighbours along and the culprit is unknown:
    // each gets another try on a thread of its own (so a poison job can only kill itself), a
    // bounded number of times, so a job that kills every thread it lands on still ends.
    const threadDied = !live.hardStopped && !live.stopReason && this.#executor.capabilities.isolation === 'shared';
    if (threadDied && attempt <= this.#config.background.maxRequeues) {
      return this.#requeue(live, `attempt ${attempt}: its thread died under it (${serializeError(error).message}); re-queued to run on a thread of its own`);
    }
    this.#finish(live.id, endingFromLostThread(live.id, error, live.stopReason, threadDied, attempt));
  }

  #requeue(live: LiveJob, note: string): void {
    this.#dispose(live);
    if (this.ledger.get(live.id)?.state === 'running') this.ledger.requeue(live.id, note);
    this.#queue.unshift(live.id);
    this.emit('requeued', this.get(live.id) as JobRecord);
    this.#pump();
  }

  #finish(id: string, ending: JobEnding): void {
    const live = this.#live.get(id);
    if (live) this.#dispose(live);
    const record = this.ledger.markEnded(id, ending);
    this.#specs.delete(id);
    this.#launches.delete(id);
    this.emit('done', structuredClone(record));
    if (record.wave !== null) this.#checkWave(record.wave);
    this.#pump();
  }

  #dispose(live: LiveJob): void {
    for (const timer of live.timers) this.#scheduler.clear(timer);
    live.port.close();
    live.permissionPort.close();
    this.#live.delete(live.id);
  }

  #checkWave(wave: number): void {
    const members = this.#waves.takeIfEnded(wave, (id) => this.ledger.get(id)?.state === 'ended');
    if (members) this.emit('wave-done', { wave, jobs: members.map((id) => this.get(id) as JobRecord) });
  }
}
