import { threadId } from 'node:worker_threads';
import { ForkpoolError, JobError } from '../../src/shared/errors.js';
import type { Executor, ExecuteOptions, ExecutorCapabilities } from '../../src/main/executor.js';
import type { JobOutcome, JobTask, WorkerMessage } from '../../src/shared/protocol.js';
import type { JobScheduler, TimerTag } from '../../src/main/manager.js';

/** One task the fake executor holds, driven by the test instead of a worker. */
export interface FakeTask {
  task: JobTask;
  options: ExecuteOptions;
  started: boolean;
  cancelRequested: boolean;
  settled: boolean;
  resolve(): void;
  reject(error: unknown): void;
}

/**
 * An executor whose "workers" are the test: it speaks the real port protocol (started, done)
 * so the manager and ledger under test are the real ones. Tracks how many tasks it holds at
 * once, to check the cap from the executor's side.
 */
export class FakeExecutor implements Executor {
  readonly kind = 'inline' as const;
  readonly capabilities: ExecutorCapabilities;
  readonly tasks = new Map<string, FakeTask>();
  /** Honour every cooperative cancel at once (used while closing). */
  autoHonourCancel = false;
  peakInFlight = 0;
  closed = false;

  constructor(isolation: 'thread' | 'shared' = 'thread') {
    this.capabilities = { isolation, hardStop: true, exclusive: true };
  }

  get inFlight(): number {
    let n = 0;
    for (const t of this.tasks.values()) if (!t.settled) n++;
    return n;
  }

  run(task: JobTask, options: ExecuteOptions): Promise<void> {
    return new Promise((resolve, reject) => {
      const entry: FakeTask = { task, options, started: false, cancelRequested: false, settled: false, resolve, reject };
      this.tasks.set(task.spec.id, entry);
      this.peakInFlight = Math.max(this.peakInFlight, this.inFlight);
      task.port.on('message', (message: { type?: string }) => {
        if (message?.type !== 'cancel') return;
        entry.cancelRequested = true;
        if (this.autoHonourCancel) this.honourCancel(task.spec.id);
      });
      options.hardStop.addEventListener('abort', () => this.#die(entry, new JobError('ABORTED', task.spec.id, 'hard stop')), { once: true });
    });
  }

  /** Tasks the test may act on. */
  active(): FakeTask[] {
    return [...this.tasks.values()].filter((t) => !t.settled);
  }

  start(id: string): void {
    const t = this.#live(id);
    if (!t || t.started) return;
    t.started = true;
    this.#post(t, { type: 'started', jobId: id, threadId, at: Date.now() });
  }

  succeed(id: string, text = `answer of ${id}\n<result status="ok" files_touched="a.ts"/>`): void {
    this.#finish(id, { stopReason: 'final', text, usage: { sim: { promptTokens: 1, completionTokens: 1, totalTokens: 2, requests: 1 } }, iterations: 1 });
  }

  fail(id: string): void {
    this.#finish(id, { stopReason: 'error', text: '', usage: {}, iterations: 1, error: { name: 'ForkpoolError', code: 'MODEL_REQUEST_FAILED', message: 'HTTP 500' } });
  }

  honourCancel(id: string): void {
    this.#finish(id, { stopReason: 'aborted', text: 'partial', usage: {}, iterations: 1 });
  }

  /** The thread died under the task (exit, OOM, uncaught error). */
  crash(id: string): void {
    const t = this.#live(id);
    if (t) this.#die(t, new JobError('THREAD_LOST', id, 'worker exited with code: 1'));
  }

  threadCount(): number {
    return this.closed ? 0 : this.inFlight;
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const t of this.active()) this.#die(t, new ForkpoolError('ABORTED', 'executor closed'));
  }

  #live(id: string): FakeTask | undefined {
    const t = this.tasks.get(id);
    return t && !t.settled ? t : undefined;
  }

  #finish(id: string, outcome: JobOutcome): void {
    const t = this.#live(id);
    if (!t) return;
    if (!t.started) this.start(id);
    this.#post(t, { type: 'done', jobId: id, outcome });
    t.settled = true;
    t.task.port.close();
    t.task.permissionPort.close();
    t.resolve();
  }

  #die(t: FakeTask, error: unknown): void {
    if (t.settled) return;
    t.settled = true;
    t.task.port.close();
    t.task.permissionPort.close();
    t.reject(error);
  }

  #post(t: FakeTask, message: WorkerMessage): void {
    t.task.port.postMessage(message);
  }
}

/** A scheduler the test fires by hand; records what each timer was for and when it was set. */
export class ManualScheduler implements JobScheduler {
  readonly pending = new Map<number, { callback: () => void; tag: TimerTag }>();
  /** Every timer ever set, with a check hook the test uses at creation time. */
  onSet: (tag: TimerTag) => void = () => {};
  #next = 1;

  set(callback: () => void, _ms: number, tag: TimerTag): unknown {
    const id = this.#next++;
    this.pending.set(id, { callback, tag });
    this.onSet(tag);
    return id;
  }

  clear(handle: unknown): void {
    this.pending.delete(handle as number);
  }

  fire(id: number): TimerTag | undefined {
    const entry = this.pending.get(id);
    if (!entry) return undefined;
    this.pending.delete(id);
    entry.callback();
    return entry.tag;
  }
}
