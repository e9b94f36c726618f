/**
 * A fake executor whose "worker threads" are the test, and a manual scheduler. The fake speaks
 * the real port protocol (src/shared/protocol.ts: `started`, `progress`, `alert`, `spawn`,
 * `suspend`, `done`; it reads `cancel`, `spawn-result` and `child-results`) so the manager and
 * ledger under test are the real ones, and it keeps its OWN record of what it was asked to run,
 * what it posted and what it was sent: the property tests compute their invariants from that
 * record, not from the manager's counters.
 *
 * While a task runs the test may make it say what a real job says mid-run ({@link
 * FakeExecutor.say}): a progress event, an alert, or a spawn request for a child job (booked
 * by the manager one level deeper, run on this same fake). A task with children may end by
 * `suspend` instead of `done` (it answered with children still running): its slot goes back
 * and the manager runs it again, with their results, once they have all ended.
 *
 * How a task ends is a script ({@link EndingScript}) the test draws from its schedule: whether a
 * `done` is posted, whether the run resolves or rejects (the thread died), whether the port is
 * closed, in which order those happen, and whether a macrotask passes between two of them. So
 * the orders the real pool produces (and the ones between) are all exercised, including a
 * `done` still sitting in the port when the run settles or the port closes.
 */
import { threadId } from 'node:worker_threads';
import { JobError } from '../../src/shared/errors.js';
import type { Executor, ExecuteOptions, ExecutorCapabilities } from '../../src/main/executors/executor.js';
import type { ChildSpawnRequest, JobOutcome, JobTask, MainMessage, WorkerMessage } from '../../src/shared/protocol.js';
import type { JobScheduler, TimerTag } from '../../src/main/jobs/manager.js';

/** One step of a task's ending. */
export type EndingStep = 'post-done' | 'close-port' | 'settle-run';

/** How a task ends; drawn by the test. Steps not taking place are skipped. */
export interface EndingScript {
  /** The worker posts a `done` (its outcome below). False: the thread dies or returns without one. */
  postsDone: boolean;
  /**
   * `suspend`: the task posts `suspend` instead of `done` (it answered with children still
   * running), as a real job may only when it has children: without one it posts a `final` done.
   */
  outcome: 'final' | 'error' | 'aborted' | 'suspend';
  /** `reject`: the thread died (exit, crash, hard stop) after or instead of its `done`. */
  run: 'resolve' | 'reject';
  /** False: the port is left open (a dead thread's port may linger): the manager's fallback decides. */
  closesPort: boolean;
  /** The three steps in the order they happen. */
  order: readonly EndingStep[];
  /** After step i, let a macrotask pass (true) or go on in the same tick (false). */
  gaps: readonly boolean[];
  /**
   * After the last step, within the same tick (only microtasks later), time runs out for the
   * manager's port-close fallback: {@link FakeExecutor.onFallback} fires it while a `done` may
   * still sit unread in the port (a busy main thread).
   */
  firesFallback?: boolean;
}

/** The ending of a task that finishes normally with its result: done, close, resolve, one tick. */
export const CLEAN_ENDING: EndingScript = {
  postsDone: true,
  outcome: 'final',
  run: 'resolve',
  closesPort: true,
  order: ['post-done', 'close-port', 'settle-run'],
  gaps: [false, false, false],
};

/** One task the fake holds. */
export interface FakeTask {
  task: JobTask;
  options: ExecuteOptions;
  /** Index of this run in {@link FakeExecutor.runs}. */
  run: number;
  started: boolean;
  /** A `done` was posted for this run (the result is in the port, maybe not yet read). */
  donePosted?: JobOutcome['stopReason'];
  /** A `suspend` was posted for this run (it waits for its children). */
  suspendPosted?: boolean;
  /** Children the manager booked for it (`spawn-result` ok), in order. */
  children: string[];
  /** Spawn requests it posted, by request id (answered: `spawn-result` came, with its verdict and any refusal's code). */
  spawns: Map<number, { answered: boolean; ok?: boolean; code?: string }>;
  /** The child ids of every `child-results` message it was sent. */
  childResults: string[][];
  cancelRequested: boolean;
  /** The ending has begun: no more steps may be taken by the test. */
  ending: boolean;
  /** The run promise settled. */
  settled: boolean;
  /** The worker side closed the job's port. */
  portClosed?: boolean;
  resolve(): void;
  reject(error: unknown): void;
}

/** The fake's own log of one `run` call. */
export interface RunRecord {
  id: string;
  attempt: number;
  exclusive: boolean;
  /** Tasks occupying a slot (asked to run, no `done` posted, run not settled) including this one. */
  occupiedAtCall: number;
  /** The executor had been told the manager was closing. */
  afterClose: boolean;
  /** A run of a job that waited for its children: the ids whose results it was handed (`spec.resume`). */
  resumedWith?: string[];
  /** Its depth (1: spawned by the session). */
  depth: number;
}

/** Something a task says mid-run (see {@link FakeExecutor.say}). */
export type MidRunMessage =
  | { kind: 'progress'; event: 'model_response' | 'assistant_text' | 'tool_call' }
  | { kind: 'alert'; severity: 'info' | 'warning' | 'critical' }
  /** `request`: fields over the default child request (an agent, a spec), as a job's model might ask. */
  | { kind: 'spawn'; request?: Partial<ChildSpawnRequest> };

/** The child ids a `child-results` text or a resume's `childResults` names (its header lines). */
export const childIdsIn = (text: string): string[] => [...text.matchAll(/— job (\S+?), status /g)].map((m) => m[1] as string);

const macrotask = () => new Promise<void>((resolve) => setImmediate(resolve));

/** An executor driven by the test; see the module comment. */
export class FakeExecutor implements Executor {
  readonly kind = 'inline' as const;
  readonly capabilities: ExecutorCapabilities;
  /** The current (latest) task per job id. */
  readonly tasks = new Map<string, FakeTask>();
  /** Every `run` call, in order. */
  readonly runs: RunRecord[] = [];
  /** Slots occupied (see {@link RunRecord.occupiedAtCall}), sampled at each run call and each settle. */
  readonly occupancy: number[] = [];
  /** Honour every cooperative cancel at once (used while closing). */
  autoHonourCancel = false;
  /**
   * A task may post `suspend` after it was asked to stop (its answer crossed the `cancel`, or was
   * still in the port when its thread was stopped), as a real worker may. Drawn by the property
   * (test/property/exactly-once.test.ts); off, a stopped task never suspends.
   */
  suspendsAfterStop = false;
  /** How a task dies when the manager hard-stops it; the test may replace it per draw. */
  hardStopEnding: (task: FakeTask) => EndingScript = () => ({ ...CLEAN_ENDING, postsDone: false, run: 'reject' });
  /** Called for a script with `firesFallback`: the test fires the job's port-close timer. */
  onFallback: (jobId: string) => void = () => {};
  /** Set by the test right before it calls `manager.close()`. */
  closeRequested = false;
  closed = false;
  readonly #endings = new Set<Promise<void>>();
  readonly #all: FakeTask[] = [];
  #spawnRequests = 0;

  constructor(isolation: 'thread' | 'shared' = 'thread') {
    this.capabilities = { isolation, hardStop: true, exclusive: true };
  }

  /** Every task, in the order it was asked to run (one per run). */
  get all(): readonly FakeTask[] {
    return this.#all;
  }

  /** Tasks that occupy a slot: asked to run, not settled, no `done` or `suspend` posted. */
  get occupied(): number {
    return this.#all.filter((t) => !t.settled && t.donePosted === undefined && !t.suspendPosted).length;
  }

  /** Tasks not yet settled (compatibility). */
  get inFlight(): number {
    return this.#all.filter((t) => !t.settled).length;
  }

  /** The most slots ever occupied at once, from the fake's own samples. */
  get peakOccupied(): number {
    return Math.max(0, ...this.occupancy);
  }

  run(task: JobTask, options: ExecuteOptions): Promise<void> {
    return new Promise((resolve, reject) => {
      const entry: FakeTask = {
        task,
        options,
        run: this.runs.length,
        started: false,
        cancelRequested: false,
        ending: false,
        settled: false,
        children: [],
        spawns: new Map(),
        childResults: [],
        resolve,
        reject,
      };
      this.tasks.set(task.spec.id, entry);
      this.#all.push(entry);
      const resume = task.spec.resume;
      this.runs.push({
        id: task.spec.id,
        attempt: task.spec.attempt,
        exclusive: options.exclusive === true,
        occupiedAtCall: this.occupied,
        afterClose: this.closeRequested,
        depth: task.spec.depth ?? 1,
        ...(resume ? { resumedWith: childIdsIn(resume.childResults) } : {}),
      });
      this.occupancy.push(this.occupied);
      task.port.on('message', (message: MainMessage) => {
        if (message?.type === 'spawn-result') {
          const spawn = entry.spawns.get(message.requestId);
          if (spawn) Object.assign(spawn, { answered: true, ok: message.ok }, message.ok ? {} : { code: message.code });
          if (message.ok && message.joined === undefined) entry.children.push(message.childId);
          return;
        }
        if (message?.type === 'child-results') {
          entry.childResults.push(message.childIds);
          return;
        }
        if (message?.type !== 'cancel') return;
        entry.cancelRequested = true;
        // Not awaited here: the ending is tracked, and settled() waits for it.
        if (this.autoHonourCancel) void this.honourCancel(task.spec.id);
      });
      const onAbort = () => void this.#track(this.#end(entry, this.hardStopEnding(entry), new JobError('ABORTED', task.spec.id, 'hard stop')));
      if (options.hardStop.aborted) onAbort();
      else options.hardStop.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Tasks the test may act on (not yet ending). */
  active(): FakeTask[] {
    return this.#all.filter((t) => !t.ending && !t.settled);
  }

  start(id: string): void {
    const t = this.#actionable(id);
    if (!t || t.started) return;
    t.started = true;
    this.#post(t, { type: 'started', jobId: id, threadId, at: Date.now() });
  }

  /**
   * Task `id` says `message` mid-run (after its `started`, which is posted first if it was not):
   * a progress event, an alert, or a request for a child job (answered by a `spawn-result`).
   */
  say(id: string, message: MidRunMessage): void {
    const t = this.#actionable(id);
    if (!t) return;
    if (!t.started) this.start(id);
    const iteration = t.childResults.length + 1;
    if (message.kind === 'progress') {
      const event =
        message.event === 'model_response'
          ? {
              type: 'model_response' as const,
              iteration,
              toolCalls: 1,
              usage: { promptTokens: 10, completionTokens: 5, totalTokens: 15, requests: 1 },
              model: 'fake-model',
            }
          : message.event === 'assistant_text'
            ? { type: 'assistant_text' as const, iteration, text: `thinking about ${id}`, final: false }
            : { type: 'tool_call' as const, callId: `call-${id}-${iteration}`, name: 'read_file', argsPreview: '{"path":"a.ts"}' };
      this.#post(t, { type: 'progress', jobId: id, event });
    } else if (message.kind === 'alert') {
      this.#post(t, { type: 'alert', jobId: id, message: `${message.severity} from ${id}`, severity: message.severity });
    } else {
      const requestId = ++this.#spawnRequests;
      t.spawns.set(requestId, { answered: false });
      // A task no other job has: the manager's de-duplication would join identical ones.
      this.#post(t, { type: 'spawn', jobId: id, requestId, request: { task: `child ${requestId} of ${id}`, label: `child ${requestId}`, ...message.request } });
    }
  }

  /** Ends task `id` by `script`; resolves when every step has been taken. */
  end(id: string, script: EndingScript): Promise<void> {
    const t = this.#actionable(id);
    if (!t) return Promise.resolve();
    return this.#track(this.#end(t, script, new JobError('THREAD_LOST', id, 'worker exited with code: 1')));
  }

  succeed(id: string): Promise<void> {
    return this.end(id, CLEAN_ENDING);
  }

  fail(id: string): Promise<void> {
    return this.end(id, { ...CLEAN_ENDING, outcome: 'error' });
  }

  honourCancel(id: string): Promise<void> {
    return this.end(id, { ...CLEAN_ENDING, outcome: 'aborted' });
  }

  /** The thread died under the task (exit, OOM, uncaught error) before it posted anything. */
  crash(id: string): Promise<void> {
    return this.end(id, { ...CLEAN_ENDING, postsDone: false, run: 'reject' });
  }

  /** Resolves once every ending under way has taken all its steps. */
  async settled(): Promise<void> {
    while (this.#endings.size > 0) await Promise.all([...this.#endings]);
  }

  threadCount(): number {
    return this.closed ? 0 : this.inFlight;
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const t of this.#all.filter((x) => !x.settled))
      void this.#track(this.#end(t, { ...CLEAN_ENDING, postsDone: false, run: 'reject' }, new JobError('ABORTED', t.task.spec.id, 'executor closed'), true));
    await this.settled();
  }

  #actionable(id: string): FakeTask | undefined {
    const t = this.tasks.get(id);
    return t && !t.ending && !t.settled ? t : undefined;
  }

  #track(ending: Promise<void>): Promise<void> {
    this.#endings.add(ending);
    return ending.finally(() => this.#endings.delete(ending));
  }

  async #end(t: FakeTask, script: EndingScript, death: unknown, force = false): Promise<void> {
    if ((t.ending && !force) || t.settled) return;
    t.ending = true;
    const id = t.task.spec.id;
    for (const [i, step] of script.order.entries()) {
      if (t.settled && step !== 'close-port') continue;
      // A `done` posted on a port the worker already closed never arrives: it is not posted.
      if (step === 'post-done' && script.postsDone && t.donePosted === undefined && !t.suspendPosted && !t.portClosed) {
        if (!t.started) this.start(id);
        if (script.outcome === 'suspend' && t.children.length > 0 && (this.suspendsAfterStop || (!t.cancelRequested && !t.options.hardStop.aborted))) {
          // What the real worker sends (src/worker/job.ts): its conversation so far, and the children whose results it saw.
          t.suspendPosted = true;
          const seenChildren = t.childResults.flat();
          this.#post(t, {
            type: 'suspend',
            jobId: id,
            state: {
              messages: [
                { role: 'user', content: t.task.spec.task },
                { role: 'assistant', content: `waiting for the children of ${id}` },
              ],
              usage: {},
              iterations: 1,
            },
            seenChildren,
          });
          if (script.gaps[i]) await macrotask();
          continue;
        }
        const outcome: JobOutcome =
          script.outcome === 'final' || script.outcome === 'suspend'
            ? { stopReason: 'final', text: `answer of ${id}\n<result status="ok" files_touched="a.ts"/>`, usage: {}, iterations: 1 }
            : script.outcome === 'error'
              ? { stopReason: 'error', text: '', usage: {}, iterations: 1, error: { name: 'ForkpoolError', code: 'MODEL_REQUEST_FAILED', message: 'HTTP 500' } }
              : { stopReason: 'aborted', text: 'partial', usage: {}, iterations: 1 };
        t.donePosted = outcome.stopReason;
        this.#post(t, { type: 'done', jobId: id, outcome });
      } else if (step === 'close-port' && script.closesPort) {
        t.portClosed = true;
        t.task.port.close();
      } else if (step === 'settle-run' && !t.settled) {
        t.settled = true;
        this.occupancy.push(this.occupied);
        if (script.run === 'resolve') t.resolve();
        else t.reject(death);
      }
      if (script.gaps[i]) await macrotask();
    }
    if (script.firesFallback) {
      // Microtasks only: the run's settle handlers run (arming the fallback), port messages do not.
      for (let i = 0; i < 10; i++) await Promise.resolve();
      this.onFallback(id);
    }
  }

  #post(t: FakeTask, message: WorkerMessage): void {
    t.task.port.postMessage(message);
  }
}

/**
 * A scheduler the test fires by hand; records what each timer was for. Kinds listed in
 * `realKinds` run on real timers instead (for tests through the real pool that only want to
 * hold some timers, e.g. the job timeout, in their hand).
 */
export class ManualScheduler implements JobScheduler {
  readonly pending = new Map<number, { callback: () => void; tag: TimerTag }>();
  /** Every timer set by hand, in order, with its tag. */
  readonly log: TimerTag[] = [];
  /** Called as each timer is set (the test records what it sees at that moment). */
  onSet: (tag: TimerTag) => void = () => {};
  readonly #realKinds: ReadonlySet<TimerTag['kind']>;
  #next = 1;

  constructor(realKinds: ReadonlyArray<TimerTag['kind']> = []) {
    this.#realKinds = new Set(realKinds);
  }

  set(callback: () => void, ms: number, tag: TimerTag): unknown {
    this.onSet(tag);
    if (this.#realKinds.has(tag.kind)) return setTimeout(callback, ms);
    const id = this.#next++;
    this.pending.set(id, { callback, tag });
    this.log.push(tag);
    return id;
  }

  clear(handle: unknown): void {
    if (typeof handle === 'number') this.pending.delete(handle);
    else clearTimeout(handle as NodeJS.Timeout);
  }

  /** Fires timer `id` now (if still pending); returns its tag. */
  fire(id: number): TimerTag | undefined {
    const entry = this.pending.get(id);
    if (!entry) return undefined;
    this.pending.delete(id);
    entry.callback();
    return entry.tag;
  }

  /** The pending timers of one kind (and job). */
  find(kind: TimerTag['kind'], jobId?: string): number[] {
    return [...this.pending].filter(([, e]) => e.tag.kind === kind && (jobId === undefined || e.tag.jobId === jobId)).map(([id]) => id);
  }
}
