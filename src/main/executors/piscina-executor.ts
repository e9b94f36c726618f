import { availableParallelism } from 'node:os';
import { Piscina } from 'piscina';
import type { Logger } from 'pino';
import { workerHeapMb } from '../../shared/defaults.js';
import { TIMINGS } from '../../shared/fixed-limits.js';
import { taskPorts, type JobTask } from '../../shared/protocol.js';
import { scrubEnv } from '../../shared/tools/secrets.js';
import { ThreadLinks, type LinkedPort } from './thread-links.js';
import { ConfigRefs, type PostedTask } from './config-refs.js';
import { JobError } from '../../shared/errors.js';
import { classifyWorkerFailure, throwIfTaskFailed, workerFileUrl, type ExecuteOptions, type Executor, type ExecutorCapabilities } from './executor.js';

export interface PiscinaExecutorOptions {
  /** `thread`: one job per thread (hard stop and heap cap hit one job). `shared`: many per thread. */
  isolation: 'thread' | 'shared';
  /** Most threads. */
  threads: number;
  /** Jobs per thread in `shared` isolation. */
  tasksPerThread: number;
  /** Old-generation heap cap of each thread, MiB; 0: by isolation ({@link workerHeapMb}). */
  heapMb: number;
  /** Young-generation cap of each thread, MiB; 0 or unset: {@link THREAD_YOUNG_HEAP_MB} in `thread`, V8's own in `shared`. */
  youngHeapMb?: number;
  /** `shared`: how long a thread gets to answer after a job's hard stop before it is terminated as stuck; default {@link TIMINGS.threadAnswerMs}. */
  threadAnswerMs?: number;
  /** How much nicer than the main thread the workers run (Linux); default 0. */
  niceIncrement?: number;
  /** Built worker file URL; defaults to dist/worker/entry.js. Tests pass a fixture here. */
  workerFile?: string;
  /** Idle threads above `minThreads` end after this long (default 10 minutes: keep them warm). */
  idleTimeoutMs?: number;
  logger?: Logger;
}

/**
 * The young generation of a `thread`-isolation worker, MiB. Left to V8, a job's young generation
 * grows to 16 MiB (its semi-spaces) and stays, though under 3 MiB of it survives a scavenge: in
 * the bench's I/O cell (200 jobs, 50 threads, 3 alternated rounds, medians) peak RSS 1,942 MB →
 * 1,475 MB at 4 (about 9 MB a thread) for the same CPU per job (42.7 → 42.5 ms); at 2, 1,413 MB
 * but 50.5 ms (more scavenges).
 */
export const THREAD_YOUNG_HEAP_MB = 4;

/**
 * The young generation of a `shared`-isolation worker, MiB. V8 gives a worker 96 (32 MiB
 * semi-spaces). Why less is cheaper was not measured apart; likely a scavenge copies what
 * survives, and a busy thread's in-flight jobs fill that much with objects that outlive it. In the bench's 1,000-job I/O cell (2 threads, quiet, two
 * alternated rounds) CPU per job was 13.7 and 14.1 ms at V8's 96, 12.4 and 10.5 at 48, 9.4 and
 * 9.3 at 16, 9.5 and 9.8 at 8; wall 21.05 / 21.00 s → 20.62 / 20.75 s; peak RSS 363 / 368 MB →
 * 331 / 300 MB (issue 40).
 */
export const SHARED_YOUNG_HEAP_MB = 16;

/**
 * Piscina behind the {@link Executor} interface. A task given an AbortSignal never shares its
 * thread, so `shared` isolation passes none and hard-stops by hand (see {@link stopShared}).
 */
export class PiscinaExecutor implements Executor {
  readonly kind = 'piscina' as const;
  readonly capabilities: ExecutorCapabilities;
  readonly #pool: Piscina<JobTask | PostedTask, unknown>;
  /** One port per thread for all its jobs (see thread-links.ts). */
  readonly #links = new ThreadLinks();
  /** Each distinct config crosses to the threads once (see config-refs.ts). */
  readonly #configs = new ConfigRefs();
  readonly #threadAnswerMs: number;
  #closed = false;

  constructor(options: PiscinaExecutorOptions) {
    this.capabilities = { isolation: options.isolation, hardStop: true, exclusive: true };
    this.#threadAnswerMs = options.threadAnswerMs ?? TIMINGS.threadAnswerMs;
    const maxThreads = Math.max(1, options.threads);
    this.#pool = new Piscina({
      // Piscina loads a CommonJS loader, which imports the real (ES module) entry: see loader.cts.
      filename: workerFileUrl('loader'),
      workerData: { forkpoolEntry: options.workerFile ?? workerFileUrl('entry'), forkpoolLink: this.#links.token },
      minThreads: Math.min(maxThreads, Math.max(1, availableParallelism())),
      maxThreads,
      idleTimeout: options.idleTimeoutMs ?? TIMINGS.poolIdleTimeoutMs,
      // The default ('sync') freezes a worker's event loop between tasks: timers and late port traffic stall.
      atomics: 'disabled',
      concurrentTasksPerWorker: options.isolation === 'shared' ? Math.max(1, options.tasksPerThread) : 1,
      resourceLimits: { maxOldGenerationSizeMb: workerHeapMb(options), ...youngGeneration(options) },
      niceIncrement: options.niceIncrement ?? 0,
      // Workers get an environment without API keys; a job's key travels in its cloned config.
      env: scrubEnv(process.env),
      closeTimeout: TIMINGS.poolCloseWaitMs,
    });
    // Without a listener, a worker error could crash the host process.
    this.#pool.on('error', (error: unknown) => options.logger?.warn({ err: error }, 'worker thread error'));
  }

  openPort(): LinkedPort {
    return this.#links.open();
  }

  run(task: JobTask, { hardStop, exclusive }: ExecuteOptions): Promise<void> {
    // Piscina never shares the thread of a task that has an AbortSignal: that is how a job gets
    // a thread of its own, and the signal is then its hard stop.
    const ownThread = this.capabilities.isolation === 'thread' || exclusive === true;
    let transferList: ReturnType<typeof taskPorts>;
    let runTask: JobTask | PostedTask;
    try {
      transferList = taskPorts(task);
      runTask = this.#configs.posted(task);
    } catch (error) {
      return Promise.reject(error);
    }
    // A shared thread is ended by hand; the job writes its thread id here as it starts.
    const threadSlot = ownThread ? undefined : new Int32Array(new SharedArrayBuffer(4));
    let running: Promise<unknown>;
    try {
      running = this.#pool.run(threadSlot ? { ...runTask, threadSlot } : runTask, { transferList, ...(ownThread ? { signal: hardStop } : {}) });
    } catch (error) {
      // Ends as any failure of the run does (classified, its link settled): see #track.
      running = Promise.reject(error);
    }
    return this.#track(running, threadSlot, task.spec.id, task.linkId, hardStop);
  }

  /**
   * The run's promise. Not an async function, and apart from {@link run}: while its job is in
   * flight it holds one promise, one reaction and the few closures below, not a suspended
   * generator, a race and a let-go promise, nor the task (Piscina keeps what it posts): issue
   * 40, the main thread's memory per job in flight. It ends once: with its task's answer, its
   * failure, or (shared) its hard stop's let-go; a job let go goes on in its thread, and
   * whatever its run ends with then, nobody waits for it.
   */
  #track(running: Promise<unknown>, threadSlot: Int32Array | undefined, jobId: string, linkId: number | undefined, hardStop: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      let settled = false;
      const end = (ok: boolean, outcome: unknown): void => {
        if (settled) return;
        settled = true;
        if (onAbort) hardStop.removeEventListener('abort', onAbort);
        if (linkId !== undefined) this.#links.settle(linkId);
        if (!ok) return reject(classifyWorkerFailure(outcome, jobId));
        try {
          throwIfTaskFailed(outcome, jobId);
          resolve();
        } catch (error) {
          reject(error);
        }
      };
      const onAbort = threadSlot && (() => this.#stopShared(Atomics.load(threadSlot, 0), jobId, linkId, (error) => end(false, error)));
      if (onAbort) hardStop.addEventListener('abort', onAbort, { once: true });
      running.then(
        (value: unknown) => end(true, value),
        (error: unknown) => end(false, error),
      );
    });
  }

  /**
   * A hard stop in `shared` isolation ends the job's run at once (ABORTED) and closes its link
   * (what it still sends is dropped): the stop never waits for its thread. Terminating the
   * thread would end every job on it, so the thread is then asked over its link whether its loop
   * still runs (see {@link #endIfStuck}). The cancel grace has already passed when a hard stop
   * comes (or was skipped on purpose: destroy()), so nothing here waits for it again.
   */
  #stopShared(threadId: number, jobId: string, linkId: number | undefined, letGo: (error: Error) => void): void {
    if (threadId === 0) return;
    // Its link first: bound to its thread, it still carries what was sent to the job (its cancel)
    // before it closes; the run's end (letGo) then finds it closed.
    if (linkId !== undefined) this.#links.release(linkId, threadId);
    letGo(
      new JobError(
        'ABORTED',
        jobId,
        'hard stop: the job was let go at once; its shared thread is terminated if its loop does not answer (its neighbours re-queued), kept if it does',
      ),
    );
    void this.#endIfStuck(threadId);
  }

  /**
   * After a hard stop: a thread that answers a ping within `threadAnswerMs` still
   * runs its loop, so it is kept with its neighbours (the stopped job's cancel went before the
   * ping on the same link: its signal is aborted there, it only has not finished unwinding).
   * One that does not is stuck in synchronous work and is terminated; its neighbours are re-queued.
   */
  async #endIfStuck(threadId: number): Promise<void> {
    const answered = await this.#links.ping(threadId, this.#threadAnswerMs);
    if (answered || this.#closed) return;
    await this.#pool.threads.find((w) => w.threadId === threadId)?.terminate();
  }

  threadCount(): number {
    // Honest after close too: destroy() leaves the list empty only once every thread is gone.
    return this.#pool.threads.length;
  }

  /** Threads the pool keeps alive when idle (and replaces when one dies). */
  get minThreads(): number {
    return this.#pool.options.minThreads;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    // destroy() ends every thread at once; the manager has already drained or cancelled the jobs.
    await this.#pool.destroy();
    this.#links.close();
  }
}

function youngGeneration({ isolation, youngHeapMb }: PiscinaExecutorOptions): { maxYoungGenerationSizeMb?: number } {
  return { maxYoungGenerationSizeMb: youngHeapMb || (isolation === 'thread' ? THREAD_YOUNG_HEAP_MB : SHARED_YOUNG_HEAP_MB) };
}
