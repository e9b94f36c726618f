/**
 * `forkpool worker`: takes jobs from a BullMQ queue and runs each in this machine's own Piscina
 * pool (a thread per job: heap cap, hard stop), through the same {@link Attempt} the manager
 * uses locally (two-phase cancel, protocol checks, child-process cleanup). It closes BullMQ's
 * gaps: a job timeout (from the job's config, enforced here even when the main process is
 * gone); cancel, hard stop and messages (run-steering.ts) from the main process over a Redis
 * channel; a run whose lock
 * could not be renewed is aborted at once (another worker may already run it); close() is bounded.
 */
import { hostname } from 'node:os';
import { UnrecoverableError, WaitingError, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { Attempt, type AttemptEnd, type AttemptHost } from '../executors/attempt.js';
import { PiscinaExecutor } from '../executors/piscina-executor.js';
import { realScheduler } from '../executors/scheduler.js';
import { JobError } from '../../shared/errors.js';
import type { ForkpoolConfig } from '../../shared/config.js';
import type { JobSpec, StopRequest, WorkerMessage } from '../../shared/protocol.js';
import type { StopReason } from '../../shared/loop-events.js';
import { BULLMQ_DEFAULTS } from '../../shared/bullmq-config.js';
import { wireSpecSchema, type WireSpec } from './job-request.js';
import { WorkerPolicy } from './worker-policy.js';
import { WorkerTools } from './worker-tools.js';
import { withProtectedMcpFiles } from '../tools/mcp/index.js';
import { RateGateBridge } from './rate-gate-bridge.js';
import { RunSteering } from './run-steering.js';
import { RunTrace } from './run-trace.js';
import { RequestCache, RequestUnavailable } from './request-cache.js';
import { closeClient, redisClient } from './redis.js';
import { FINISHED_JOB_AGE_S, controlMessageSchema, redisNames, type RemoteEnd, type RemoteEvent, type RemoteJobData, type RunResult } from './wire.js';
import { approvalModeFor, REMOTE_APPROVALS_REASON } from '../../shared/approvals.js';
import { cancelledBeforeStart, refused, remoteEnd } from './run-ends.js';

export interface ForkpoolWorkerOptions {
  redisUrl: string;
  queue?: string;
  /** Jobs this process runs at once (one Piscina thread each). */
  concurrency: number;
  /** Old-generation heap cap per job thread, MiB. */
  heapMb: number;
  lockMs?: number;
  maxStalls?: number;
  closeTimeoutMs?: number;
  /**
   * This worker's own configuration: its keys and model endpoints (the only ones its jobs may
   * use), workspace, sandbox, grants and limits. Jobs arrive with none of these (see
   * worker-policy.ts).
   */
  config: ForkpoolConfig;
  /**
   * A built-in simulator this process runs: a job on a forkpool simulator of the producer's
   * process (`simulator: true` on the wire: a producer with no model) runs on it
   * (worker-policy.ts). Unset: such a job is refused unless its endpoint is one the config lists.
   */
  simulatorUrl?: string;
  /**
   * Starts (once, on the first job that needs it) the simulator `simulatorUrl` would name, and
   * resolves to its URL: a worker with a real endpoint never starts one it does not use.
   */
  simulator?: () => Promise<string>;
  /** A job worker file for tests (as PiscinaExecutorOptions.workerFile). */
  workerFile?: string;
  /** Shown in events and in BullMQ's `processedBy`. Default host:pid. */
  name?: string;
  logger?: Logger;
  /** Hears each run's end (the CLI prints it as a `run-ended` line). */
  onRunEnded?(report: RunReport): void;
}

/** How a run ended on this worker. `lockLost`: its lock could not be renewed, so it was aborted. */
export interface RunReport {
  bullId: string;
  jobId: string;
  run: number;
  end: AttemptEnd['kind'];
  /** The loop's {@link StopReason} when the job reported `done`; else the {@link StopRequest} that ended it, if any. */
  stopReason?: StopReason | StopRequest;
  lockLost: boolean;
  evicted: boolean;
}

interface LiveRun {
  attempt: Attempt;
  token: string;
  run: number;
  lockLost: boolean;
  /** This worker is shutting down: the run is stopped to be re-run elsewhere, not ended. */
  evicted: boolean;
  /** Messages sent to the job (send_to_background_agent), each given to the run once. */
  steering: RunSteering;
}

export class ForkpoolWorker {
  readonly name: string;
  readonly #options: ForkpoolWorkerOptions;
  readonly #names: ReturnType<typeof redisNames>;
  readonly #clients: Redis[] = [];
  readonly #publisher: Redis;
  readonly #subscriber: Redis;
  readonly #pool: PiscinaExecutor;
  readonly #rateGate: RateGateBridge;
  readonly #policy: WorkerPolicy;
  readonly #tools: WorkerTools;
  readonly #requests: RequestCache;
  readonly #live = new Map<string, LiveRun>();
  #worker: Worker<RemoteJobData, RunResult> | undefined;
  #closing: Promise<void> | undefined;

  constructor(options: ForkpoolWorkerOptions) {
    // Its MCP servers' files in the workspace are protected from its jobs, as a manager's are.
    const config = withProtectedMcpFiles(options.config, process.cwd());
    this.#options = { ...options, config };
    this.#policy = new WorkerPolicy(config, { simulatorUrl: options.simulatorUrl, simulatorOnDemand: options.simulator !== undefined });
    this.#tools = new WorkerTools(config, options.logger);
    this.name = options.name ?? `${hostname()}:${process.pid}`;
    this.#names = redisNames(options.queue ?? BULLMQ_DEFAULTS.queue);
    this.#publisher = this.#client();
    this.#subscriber = this.#client();
    this.#pool = new PiscinaExecutor({
      isolation: 'thread',
      threads: options.concurrency,
      tasksPerThread: 1,
      heapMb: options.heapMb,
      youngHeapMb: options.config.background.youngHeapMb,
      ...(options.workerFile ? { workerFile: options.workerFile } : {}),
      ...(options.logger ? { logger: options.logger } : {}),
    });
    this.#requests = new RequestCache(this.#publisher, this.#names.request);
    this.#rateGate = new RateGateBridge(options.queue ?? BULLMQ_DEFAULTS.queue, this.#publisher, this.#subscriber);
  }

  /** Jobs running here now. */
  get running(): number {
    return this.#live.size;
  }

  async start(): Promise<void> {
    await this.#subscriber.subscribe(this.#names.control);
    this.#subscriber.on('message', (channel: string, text: string) => {
      if (channel === this.#names.control) this.#onControl(text);
    });
    await this.#rateGate.start();
    // Before the first job: a job is offered only the MCP tools listed by then.
    await this.#tools.start();
    const lockMs = this.#options.lockMs ?? BULLMQ_DEFAULTS.lockMs;
    this.#worker = new Worker<RemoteJobData, RunResult>(this.#names.queue, (job, token, signal) => this.#process(job, token, signal), {
      connection: this.#client(),
      name: this.name,
      concurrency: this.#options.concurrency,
      lockDuration: lockMs,
      // The stall check runs twice per lock period: a dead worker's job is re-run within 1.5 of them.
      stalledInterval: Math.max(500, Math.floor(lockMs / 2)),
      maxStalledCount: this.#options.maxStalls ?? BULLMQ_DEFAULTS.maxStalls,
      // What a producer that died leaves (its jobs carry no ages of their own: see FINISHED_JOB_AGE_S).
      removeOnComplete: { age: FINISHED_JOB_AGE_S },
      removeOnFail: { age: FINISHED_JOB_AGE_S },
      // Never BullMQ's sandboxed processors (`useWorkerThreads` crashes the host on out-of-memory): Piscina runs the job.
      useWorkerThreads: false,
    });
    this.#worker.on('lockRenewalFailed', (ids: string[]) => ids.forEach((id) => this.#onLockLost(id)));
    // BullMQ reports failed lock renewals and stale completions as errors: expected, logged only.
    this.#worker.on('error', (error) => this.#options.logger?.warn({ err: error }, 'bullmq worker error'));
    await this.#worker.waitUntilReady();
  }

  /**
   * Stops taking jobs, asks the running ones to stop (they go back to the queue and run on
   * another worker), waits at most `closeTimeoutMs`, then hard-stops what is left and ends
   * every thread. Every call returns the same promise.
   */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    const timeoutMs = this.#options.closeTimeoutMs ?? BULLMQ_DEFAULTS.closeTimeoutMs;
    for (const live of this.#live.values()) {
      live.evicted = true;
      live.attempt.requestStop('close');
    }
    const closed = this.#worker?.close() ?? Promise.resolve();
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([closed.then(() => false), new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), timeoutMs)))]);
    clearTimeout(timer);
    if (timedOut) {
      this.#options.logger?.warn({ running: this.#live.size }, 'worker close timed out; hard-stopping what is left');
      for (const live of this.#live.values()) live.attempt.hardStop();
      await Promise.race([this.#worker?.close(true), new Promise((resolve) => setTimeout(resolve, 1_000).unref())]).catch(() => undefined);
    }
    this.#rateGate.stop();
    await this.#pool.close();
    await this.#tools.close();
    await Promise.all(this.#clients.map((client) => closeClient(client)));
  }

  #client(): Redis {
    const client = redisClient(this.#options.redisUrl);
    // Without a listener ioredis prints every failed reconnect; Redis may be restarting.
    client.on('error', (error) => this.#options.logger?.debug({ err: error }, 'redis connection error'));
    this.#clients.push(client);
    return client;
  }

  async #process(job: Job<RemoteJobData>, token: string | undefined, signal: AbortSignal | undefined): Promise<RunResult> {
    const parsed = wireSpecSchema.safeParse(await this.#wireSpec(job));
    if (!parsed.success) {
      // Retrying cannot fix a malformed job (nor one that carries a key, a workspace or a sandbox setting).
      const where = parsed.error.issues
        .slice(0, 3)
        .map((issue) => `${issue.path.join('.') || 'spec'}: ${issue.message}`)
        .join('; ');
      throw new UnrecoverableError(`job ${job.id} carries no valid forkpool job spec (${where})`);
    }
    if (this.#closing) return this.#handBack(job, token, `worker ${this.name} is closing; the job goes to another worker`);
    const spec: WireSpec = parsed.data;
    const bullId = job.id as string;
    const runToken = token ?? `${this.name}:${bullId}:${job.attemptsStarted}`;
    const run = Math.max(1, job.attemptsStarted);
    const result = (end: RemoteEnd, started = true): RunResult => ({ token: runToken, worker: this.name, run, started, end });
    let localSpec: JobSpec;
    try {
      const simulatorUrl = spec.request.simulator === true ? (this.#options.simulatorUrl ?? (await this.#options.simulator?.())) : undefined;
      localSpec = this.#tools.withStubs(this.#policy.localSpec(spec, simulatorUrl));
    } catch (error) {
      // Fails alone and at once: no thread, no model request, the worker's key goes nowhere.
      // A policy refusal is an answer, not a fault here: its code and reason, no stack.
      const why = error instanceof JobError ? { code: error.code, reason: error.message } : { err: error };
      this.#options.logger?.warn({ bullId, jobId: spec.id, ...why }, "refused a job this worker's configuration does not allow");
      this.#options.onRunEnded?.({ bullId, jobId: spec.id, run, end: 'done', stopReason: 'error', lockLost: false, evicted: false });
      return result({ kind: 'done', outcome: refused(error) });
    }
    const runTrace = RunTrace.start(localSpec, { worker: this.name, bullId, run });
    const attempt = this.#attempt(localSpec, bullId, runToken, run, runTrace);
    const live: LiveRun = { attempt, token: runToken, run, lockLost: false, evicted: false, steering: new RunSteering() };
    // Listed before the look-ups below, so a cancel or a message published meanwhile finds it.
    this.#live.set(bullId, live);
    const [exists, kept] = await Promise.all([
      this.#publisher.exists(this.#names.cancelled(bullId)),
      this.#publisher.lrange(this.#names.steering(bullId), 0, -1),
    ]);
    const cancelled = exists === 1;
    live.steering.receiveKept(kept);
    if (cancelled || live.attempt.stopRequest) {
      live.attempt.dispose();
      this.#live.delete(bullId);
      // This worker began closing while it looked: not the job's cancel, so another worker runs it
      // (ending it here failed jobs that never ran, JOB_CANCELLED, in a rolling restart).
      if (!cancelled && live.evicted)
        return this.#handBack(job, token, `worker ${this.name} closed before run ${run} of ${bullId} started; the job goes to another worker`);
      return result({ kind: 'done', outcome: cancelledBeforeStart(spec.id) }, false);
    }
    const onSignal = () => live.attempt.requestStop('cancel');
    signal?.addEventListener('abort', onSignal, { once: true });
    let end: AttemptEnd;
    try {
      const steering = live.steering.launch(localSpec.steering ?? [], (message, interrupt) => void attempt.post({ type: 'steer', ...message, interrupt }));
      // Tagged by launch and run: the BullMQ id names the producer (its namespace), the job and the launch.
      live.attempt.launch({ ...localSpec, processTag: `${bullId}.r${run}`, ...(steering.length > 0 ? { steering } : {}) });
      end = await live.attempt.ended;
      runTrace?.end(end);
    } finally {
      signal?.removeEventListener('abort', onSignal);
      live.attempt.dispose();
      this.#live.delete(bullId);
    }
    const stopReason = end.kind === 'done' ? end.outcome.stopReason : live.attempt.stopRequest;
    this.#options.onRunEnded?.({
      bullId,
      jobId: spec.id,
      run,
      end: end.kind,
      ...(stopReason ? { stopReason } : {}),
      lockLost: live.lockLost,
      evicted: live.evicted,
    });
    // Its completion would be refused anyway (the lock is gone); throwing says so in the log.
    if (live.lockLost) throw new Error(`run ${run} of ${bullId} lost its lock and was aborted`);
    if (live.evicted) return this.#handBack(job, token, `worker ${this.name} closed during run ${run} of ${bullId}; the job goes to another worker`);
    return result(remoteEnd(end, live.attempt.stopRequest));
  }

  /**
   * The job's spec with its request: the one stored under the job's `request` hash (read once,
   * see request-cache.ts), else the one its spec carries. Fails the job, unretried, when the
   * stored request is gone or forged.
   */
  async #wireSpec(job: Job<RemoteJobData>): Promise<unknown> {
    const data: unknown = job.data;
    if (typeof data !== 'object' || data === null) return undefined;
    const { spec, request } = data as { spec?: unknown; request?: unknown };
    if (request === undefined) return spec;
    if (typeof request !== 'string') throw new UnrecoverableError(`job ${job.id} carries no valid forkpool job spec (request: not a string)`);
    try {
      return { ...(spec as object), request: await this.#requests.get(request) };
    } catch (error) {
      if (error instanceof RequestUnavailable) throw new UnrecoverableError(`job ${job.id} cannot run: ${error.message}`);
      throw error;
    }
  }

  /**
   * A graceful stop gives the job back to the queue as if it had never started: moved to
   * `wait` under this run's lock, it spends none of its attempts and carries no
   * `failedReason`, so the next worker's completion is accepted like any other.
   */
  async #handBack(job: Job, token: string | undefined, why: string): Promise<never> {
    this.#options.logger?.info({ bullId: job.id }, why);
    if (token === undefined) throw new Error(why);
    await job.moveToWait(token);
    throw new WaitingError(why);
  }

  #attempt(spec: JobSpec, bullId: string, token: string, run: number, runTrace: RunTrace | undefined): Attempt {
    const publish = (message: WorkerMessage) => this.#publish({ type: 'message', jobId: spec.id, bullId, token, run, worker: this.name, message });
    // One run's host (a worker runs a few jobs at a time: closures per run cost nothing here).
    const host: AttemptHost<undefined> = {
      scheduler: realScheduler,
      rateGateBuffer: this.#rateGate.buffer,
      logger: this.#options.logger,
      // Jobs never ask a person: what the job's config grants is what it has.
      // With approvals "ask" the model reads why no one was asked (nobody can answer here).
      answerPermission: (_job, tool) =>
        spec.config.grantedTools.includes(tool)
          ? { granted: true }
          : { granted: false, ...(approvalModeFor(spec.config, spec.agent) === 'ask' ? { reason: REMOTE_APPROVALS_REASON } : {}) },
      started: (_job, attempt, threadId) => {
        // BullMQ has no job timeout: the job's own wall clock is enforced here, from its start.
        attempt.armDeadline(spec.config.background.timeoutMinutes * 60_000);
        publish({ type: 'started', jobId: spec.id, threadId, at: Date.now() });
      },
      expired: (_job, attempt, kind) => void attempt.requestStop(kind),
      progress: (_job, event) => {
        runTrace?.event(event);
        publish({ type: 'progress', jobId: spec.id, event });
      },
      alert: (_job, alert) => publish({ type: 'alert', jobId: spec.id, ...alert }),
      runHostTool: (_job, call, signal) => this.#tools.run(spec, call, signal),
      spawn: (_job, attempt, requestId) =>
        void attempt.post({
          type: 'spawn-result',
          requestId,
          ok: false,
          code: 'DEPTH_EXCEEDED',
          message:
            'nested background jobs are not available on the bullmq executor: a job on a forkpool worker cannot spawn jobs of its own (its job tree lives in the main process); do this part of the work in this job',
        }),
    };
    return new Attempt({ job: undefined, jobId: spec.id, number: run, executor: this.#pool, host, cancelGraceMs: spec.config.background.cancelGraceMs });
  }

  #publish(event: RemoteEvent): void {
    void this.#publisher.publish(this.#names.events, JSON.stringify(event)).catch(() => undefined);
  }

  #onControl(text: string): void {
    let parsed;
    try {
      parsed = controlMessageSchema.safeParse(JSON.parse(text));
    } catch {
      return;
    }
    if (!parsed.success) return;
    const control = parsed.data;
    const live = this.#live.get(control.bullId);
    if (!live) return;
    if (control.action === 'steer') live.steering.receive(control.message, control.interrupt);
    else if (control.action === 'cancel') live.attempt.requestStop(control.reason);
    else {
      live.attempt.stopRequest ??= control.reason;
      live.attempt.hardStop();
    }
  }

  /** The lock is gone: another worker may run this job now, so this run must not go on. */
  #onLockLost(bullId: string): void {
    const live = this.#live.get(bullId);
    if (!live || live.lockLost) return;
    live.lockLost = true;
    this.#options.logger?.warn({ bullId, run: live.run }, 'lock renewal failed; aborting the stale run');
    this.#publish({ type: 'lock-lost', jobId: live.attempt.jobId, bullId, token: live.token, run: live.run, worker: this.name });
    live.attempt.stopRequest ??= 'close';
    live.attempt.hardStop();
  }
}
