/**
 * The BullMQ executor (main side): the manager's jobs go into a BullMQ queue, `forkpool worker`
 * processes on any number of machines run them, and their port messages come back over a Redis
 * channel and are relayed to the job's port, so the manager and its Attempt see a remote job
 * exactly as a local one. Completions travel through BullMQ (its lock check refuses a stale
 * run's) and pass the {@link CompletionGate} (one per launch, from the run that holds the job,
 * confirmed against Redis) before the manager, whose ledger records the ending once, sees them.
 */
import { randomUUID } from 'node:crypto';
import { Job, Queue, QueueEvents } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { BULLMQ_DEFAULTS, type BullmqConfig } from '../../shared/bullmq-config.js';
import { CompletionGate } from './completion-gate.js';
import { FinishedJobs } from './finished-jobs.js';
import { closeClient, redisClient } from './redis.js';
import { untilSettledOrStalled } from './until-stalled.js';
import { RemoteRun } from './remote-run.js';
import { jobForRedis } from './job-request.js';
import { BulkAdder } from './bulk-adder.js';
import { LaunchCanceller } from './launch-canceller.js';
import { QuietPoll } from './quiet-poll.js';
import { RequestStore } from './request-store.js';
import { ORPHAN_AGE_S, bullJobId, redisNames, remoteEventSchema, runResultSchema, type ControlMessage, type RemoteEvent, type RunResult } from './wire.js';
import { JobError } from '../../shared/errors.js';
import type { JobTask } from '../../shared/protocol.js';
import type { ExecuteOptions, Executor, ExecutorCapabilities, ExecutorHealth } from '../executors/executor.js';
import { WorkerWatch } from './worker-watch.js';

/** How long a taken result stays in Redis (see finished-jobs.ts). */
const RESULT_KEPT_MS = 10_000;
/** Jobs added to Redis in one write at most (bulk-adder.ts). */
const ADD_BATCH = 1_000;

/** A launch on its way into Redis. `newLaunch`: from run() (its old cancel and messages go), not a job Redis lost. */
interface PendingAdd {
  spec: JobTask['spec'];
  bullId: string;
  request: string;
  newLaunch: boolean;
}

export interface BullmqExecutorOptions {
  redisUrl: string;
  bullmq?: Partial<Omit<BullmqConfig, 'allowedBaseUrls'>>;
  logger?: Logger;
}

export class BullmqExecutor implements Executor {
  readonly kind = 'bullmq' as const;
  /**
   * Each job has a thread of its own on its worker, which a hard stop ends; a job may run again
   * after its worker died; a running job is sent messages over the control channel.
   */
  readonly capabilities: ExecutorCapabilities = { isolation: 'thread', hardStop: true, exclusive: false, reruns: true, remote: true, steering: true };
  readonly gate = new CompletionGate();
  /** Prefix of this executor's BullMQ job ids (see `bullmq.namespace`). */
  readonly namespace: string;
  readonly #options: Omit<BullmqConfig, 'allowedBaseUrls'>;
  readonly #logger: Logger | undefined;
  readonly #names: ReturnType<typeof redisNames>;
  readonly #clients: Redis[] = [];
  readonly #publisher: Redis;
  readonly #queue: Queue;
  readonly #events: QueueEvents;
  readonly #runs = new Map<string, RemoteRun>();
  readonly #ready: Promise<void>;
  readonly #poll: NodeJS.Timeout;
  readonly #workers: WorkerWatch;
  readonly #finished: FinishedJobs;
  readonly #requests: RequestStore;
  readonly #adder: BulkAdder<PendingAdd>;
  readonly #cancels: LaunchCanceller;
  /** Seconds a request and a cancel key of a producer that died stay in Redis (see ORPHAN_AGE_S). */
  readonly #orphanAgeS: number;
  #closing: Promise<void> | undefined;

  constructor(options: BullmqExecutorOptions) {
    this.#options = { ...BULLMQ_DEFAULTS, ...options.bullmq };
    this.namespace = options.bullmq?.namespace ?? randomUUID().slice(0, 12);
    this.#orphanAgeS = options.bullmq?.namespace === undefined ? ORPHAN_AGE_S.random : ORPHAN_AGE_S.adoptable;
    this.#finished = new FinishedJobs((bullId) => this.#removeJob(bullId), RESULT_KEPT_MS);
    this.#logger = options.logger;
    this.#names = redisNames(this.#options.queue);
    const client = () => {
      const c = redisClient(options.redisUrl);
      c.on('error', (error) => this.#logger?.debug({ err: error }, 'redis connection error'));
      this.#clients.push(c);
      return c;
    };
    this.#publisher = client();
    this.#requests = new RequestStore(this.#publisher, this.#names.request, this.#orphanAgeS);
    this.#adder = new BulkAdder((batch) => this.#write(batch), ADD_BATCH);
    const subscriber = client();
    this.#queue = new Queue(this.#options.queue, { connection: client() });
    this.#queue.on('error', (error) => this.#logger?.debug({ err: error }, 'bullmq queue error'));
    this.#cancels = new LaunchCanceller(this.#publisher, { ...this.#names, queuePrefix: this.#queue.toKey('') }, this.#orphanAgeS * 1_000);
    this.#events = new QueueEvents(this.#options.queue, { connection: client() });
    this.#events.on('error', (error) => this.#logger?.debug({ err: error }, 'bullmq events error'));
    this.#events.on('completed', ({ jobId, returnvalue }) => void this.#onCompleted(jobId, returnvalue));
    this.#events.on('failed', ({ jobId }) => void this.#onFailed(jobId));
    subscriber.on('message', (channel: string, text: string) => {
      if (channel === this.#names.events) this.#onEvent(text);
    });
    this.#ready = this.#connect(subscriber);
    // Swallowed here; run() awaits it and rejects with the reason.
    this.#ready.catch(() => undefined);
    this.#workers = new WorkerWatch({
      queue: this.#options.queue,
      warnAfterMs: this.#options.noWorkerWarnMs,
      countWorkers: () => this.#queue.getWorkersCount(),
      jobsOut: () => this.#runs.size,
      ...(this.#logger ? { logger: this.#logger } : {}),
    });
    const quiet = new QuietPoll({
      redis: this.#publisher,
      queue: this.#queue,
      pollMs: this.#options.pollMs,
      logger: this.#logger,
      runs: () => this.#runs.values(),
      completed: (bullId, returnvalue) => this.#onCompleted(bullId, returnvalue),
      failed: (bullId) => this.#onFailed(bullId),
      lost: (run) => this.#addLost(run),
    });
    this.#poll = setInterval(() => {
      quiet.tick();
      void this.#requests.refresh().catch((error: unknown) => this.#logger?.debug({ err: error }, 'request refresh failed'));
      this.#workers.check();
    }, this.#options.pollMs);
    this.#poll.unref();
  }

  async #connect(subscriber: Redis): Promise<void> {
    await subscriber.subscribe(this.#names.events);
    await Promise.all([this.#queue.waitUntilReady(), this.#events.waitUntilReady()]);
    if (this.#options.globalConcurrency > 0) await this.#queue.setGlobalConcurrency(this.#options.globalConcurrency);
  }

  /** The BullMQ job id of launch `launch` of job `jobId` of the manager `owner` (JobTask.owner). */
  bullId(jobId: string, launch: number, owner?: string): string {
    return bullJobId(this.namespace, jobId, launch, owner);
  }

  /** The BullMQ queue (for inspection and tests). */
  get queue(): Queue {
    return this.#queue;
  }

  /** Resolves once subscribed to Redis; rejects when Redis cannot be reached. */
  ready(): Promise<void> {
    return this.#ready;
  }

  async run(task: JobTask, { hardStop }: ExecuteOptions): Promise<void> {
    const { spec } = task;
    const port = task.port;
    if (this.#closing) {
      port.close();
      throw new JobError('ABORTED', spec.id, 'the bullmq executor is closed');
    }
    const bullId = this.bullId(spec.id, spec.attempt, task.owner);
    const run = new RemoteRun(spec, bullId, port, {
      control: (message) => this.#control(message),
      // A hard-stopped run was counted an orphan as it ended: its job is gone now, nothing to remove.
      cancelWaiting: async (reason, action) => {
        const removed = await this.#cancels.cancel(bullId, reason, action);
        if (removed) this.#finished.forget(bullId);
        return removed;
      },
      gate: this.gate,
      logger: this.#logger,
    });
    this.#runs.set(bullId, run);
    const request = this.#requests.use(spec);
    const onHardStop = () => run.hardStop();
    hardStop.addEventListener('abort', onHardStop, { once: true });
    try {
      await this.#ready;
      // Closed while it waited for the connection: never added, so close() need not take it out.
      if (this.#closing) throw new JobError('ABORTED', spec.id, 'the bullmq executor closed before the job was queued');
      await this.#add(spec, bullId, request, true);
      await run.onAdded();
      await run.settled;
    } catch (error) {
      run.abandon(error);
      throw error;
    } finally {
      hardStop.removeEventListener('abort', onHardStop);
      this.#runs.delete(bullId);
      this.#requests.release(request);
      // Ended here without its result taken (hard-stopped, abandoned): removed when it finishes.
      if (run.added && !run.taken) this.#finished.orphaned(bullId, run.hardStopped);
    }
  }

  threadCount(): number {
    // The threads are on the workers' machines.
    return 0;
  }

  health(): ExecutorHealth {
    return this.#workers.health();
  }

  /** Runs handed out and not yet ended. */
  get pendingCount(): number {
    return this.#runs.size;
  }

  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    clearInterval(this.#poll);
    for (const run of this.#runs.values()) run.abandon(new JobError('ABORTED', run.jobId, 'the bullmq executor closed before the job ended'));
    // BullMQ's close() has no bound: a Redis that is gone would hold it forever.
    // The adds under way first: a job stopped on its way into Redis is cancelled once there
    // (RemoteRun.onAdded, a turn later). Then the cancels: a waiting job they take out is not
    // removed again one by one.
    const closed = this.#adder
      .flush()
      .then(() => new Promise((resolve) => setImmediate(resolve)))
      .then(() => this.#cancels.flush())
      .then(() => this.#finished.flush())
      .then(() => Promise.allSettled([this.#events.close(), this.#queue.close()]));
    await untilSettledOrStalled(closed, this.#options.closeTimeoutMs, () => this.#adder.settledBatches + this.#cancels.progress + this.#finished.progress);
    await Promise.all(this.#clients.map((client) => closeClient(client)));
  }

  async #add(spec: JobTask['spec'], bullId: string, request: string, newLaunch: boolean): Promise<void> {
    // The same launch id again here (a restarted job): the old result was taken, it must go.
    // In a new process the id may find a run of the previous one: adding is then a no-op, and
    // the run (still going, or its result waiting) is taken over.
    this.#finished.forget(bullId);
    if (this.gate.wasAccepted(bullId)) {
      await this.#queue.remove(bullId);
      this.gate.forget(bullId);
    }
    await this.#adder.add({ spec, bullId, request, newLaunch });
  }

  /** One batch of launches into Redis: their requests first (a worker may take a job at once), then the jobs. */
  async #write(batch: PendingAdd[]): Promise<void> {
    const before = this.#publisher.multi();
    // A new launch under an id used before (a restarted job): an old cancel must not end it,
    // and its messages come in its spec (JobInbox.forLaunch), not from the old launch's list.
    const launchKeys = batch.filter((add) => add.newLaunch).flatMap((add) => this.#launchKeys(add.bullId));
    if (launchKeys.length > 0) before.del(...launchKeys);
    this.#requests.store(
      before,
      batch.map((add) => add.request),
    );
    const failed = (await before.exec())?.find(([error]) => error);
    if (failed) throw failed[0] ?? new Error('redis refused a launch key delete or a request write');
    await this.#queue.addBulk(
      batch.map(({ spec, bullId, request }) => ({
        name: 'job',
        data: { spec: jobForRedis(spec), request },
        opts: {
          jobId: bullId,
          attempts: this.#options.attempts,
          // Removed once the main side has taken the result (finished-jobs.ts). No removeOnComplete
          // or removeOnFail here: BullMQ would store them in every job (88 bytes a job); the
          // workers' defaults (FINISHED_JOB_AGE_S) bound what a producer that died leaves behind.
        },
      })),
    );
  }

  #control(message: ControlMessage): Promise<void> {
    const text = JSON.stringify(message);
    const ttlMs = this.#orphanAgeS * 1_000;
    // The keys catch a worker that picks the job up after the message went out, or runs it again.
    const batch = this.#publisher.multi();
    if (message.action === 'steer') {
      const key = this.#names.steering(message.bullId);
      batch.rpush(key, JSON.stringify(message.message)).pexpire(key, ttlMs);
    } else batch.set(this.#names.cancelled(message.bullId), message.reason, 'PX', ttlMs);
    return batch
      .publish(this.#names.control, text)
      .exec()
      .then(() => undefined);
  }

  /** A launch's own keys besides BullMQ's: its cancel and its messages. */
  #launchKeys(bullId: string): string[] {
    return [this.#names.cancelled(bullId), this.#names.steering(bullId)];
  }

  #onEvent(text: string): void {
    let parsed;
    try {
      parsed = remoteEventSchema.safeParse(JSON.parse(text));
    } catch {
      return;
    }
    if (!parsed.success) return;
    this.#runs.get(parsed.data.bullId)?.onEvent(parsed.data as RemoteEvent);
  }

  async #onCompleted(bullId: string, returnvalue: unknown): Promise<void> {
    const run = this.#runs.get(bullId);
    if (!run) return this.#finished.finishedUnwatched(bullId);
    // The event only says which run claims to have finished; what counts is the job's record,
    // which BullMQ wrote only if that run held the lock.
    const claimed = runResultSchema.safeParse(typeof returnvalue === 'string' ? safeJson(returnvalue) : returnvalue);
    const stored = await this.#storedResult(bullId);
    if (stored === 'invalid') {
      this.#taken(run);
      return run.fail(new JobError('PROTOCOL_INVALID', run.jobId, 'a worker completed the job with a value that is not a forkpool run result'));
    }
    const token = claimed.success ? claimed.data.token : stored?.token;
    if (token === undefined) return;
    if (!this.gate.claim(bullId, token)) {
      // The events stream and the quiet-job poll often both report one completion: the second
      // report of the accepted run is routine (thousands on a busy drain), not worth a warning.
      if (this.gate.isRepeat(bullId, token)) return this.#logger?.debug({ bullId, token }, 'completion reported again');
      return this.#logger?.warn({ bullId, token }, 'refused a duplicate or stale completion');
    }
    if (stored?.token !== token) {
      this.gate.release(bullId, token);
      return this.#logger?.warn({ bullId, token }, 'refused a completion Redis does not confirm');
    }
    this.#taken(run);
    run.complete(stored);
  }

  /** The run's ending is the main side's now: its BullMQ job goes a little later (finished-jobs.ts). */
  #taken(run: RemoteRun): void {
    if (run.isSettled) return;
    run.taken = true;
    this.#finished.taken(run.bullId);
  }

  /** Deletes a launch's BullMQ job and cancel key; one a worker still holds stays (and throws). */
  async #removeJob(bullId: string): Promise<void> {
    const removed = (await this.#queue.remove(bullId)) === 1;
    if (!removed && (await this.#queue.getJobState(bullId)) !== 'unknown') throw new Error(`job ${bullId} is held by a worker`);
    await this.#publisher.del(...this.#launchKeys(bullId));
    this.gate.forget(bullId);
  }

  async #onFailed(bullId: string): Promise<void> {
    const run = this.#runs.get(bullId);
    if (!run) return this.#finished.finishedUnwatched(bullId);
    const job = await Job.fromId(this.#queue, bullId).catch(() => undefined);
    // A failure BullMQ will retry is not the end; only a job in `failed` is.
    if (!job || !(await job.isFailed().catch(() => false))) return;
    this.#taken(run);
    run.fail(
      new JobError(
        'THREAD_LOST',
        run.jobId,
        `its workers could not run it: ${job.failedReason} (started ${job.attemptsStarted} time(s), stalled ${job.stalledCounter})`,
      ),
    );
  }

  /** The run result BullMQ stored for a completed job; `invalid` when it is not one of ours. */
  async #storedResult(bullId: string): Promise<RunResult | 'invalid' | undefined> {
    const job = await Job.fromId(this.#queue, bullId).catch(() => undefined);
    // `completed`, not "no failedReason": a job handed back or retried keeps an earlier run's
    // failedReason after a later run completed it.
    if (!job?.finishedOn || !(await job.isCompleted().catch(() => false))) return undefined;
    const parsed = runResultSchema.safeParse(typeof job.returnvalue === 'string' ? safeJson(job.returnvalue) : job.returnvalue);
    return parsed.success ? (parsed.data as RunResult) : 'invalid';
  }

  /** Redis lost the run's job (restarted without persistence): the ledger still knows the job, which is added again. */
  async #addLost(run: RemoteRun): Promise<void> {
    run.onLost();
    const request = this.#requests.use(run.spec());
    try {
      await this.#add(run.spec(), run.bullId, request, false);
    } finally {
      this.#requests.release(request);
    }
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
