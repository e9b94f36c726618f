import { z } from 'zod';
import { TIMINGS } from '../../shared/defaults.js';
import { JobError, errorMessage } from '../../shared/errors.js';
import {
  workerMessageSchema,
  type MainMessage,
  type ResumeState,
  type JobOutcome,
  type JobSpec,
  type JobTask,
  type StopRequest,
} from '../../shared/protocol.js';
import { HostCalls } from '../tools/host-calls.js';
import type { LoopEvent } from '../../shared/loop-events.js';
import type { RequestOutcome } from '../../shared/model-call.js';
import { addModelUsage, type UsageByModel } from '../../shared/usage.js';
import type { AttemptEnd, AttemptHostOf, AttemptOptionsOf, DeadlineKind } from './attempt-host.js';
import { ChildProcesses } from './child-processes.js';
import { portPair, type AttemptPort } from './local-ports.js';

export type { AttemptEnd, DeadlineKind, GateLease, PermissionAnswer } from './attempt-host.js';
/** What an attempt tells its owner and asks of it (attempt-host.ts). */
export type AttemptHost<J> = AttemptHostOf<J, Attempt<J>>;
export type AttemptOptions<J> = AttemptOptionsOf<J, Attempt<J>>;

/**
 * One launch of one job: it owns the job's ports, timers and child process groups, reads the
 * worker's messages, and ends exactly once through {@link ended}, whatever order `done`, the
 * port's `close`, the run settling and the thread's death arrive in. The manager decides what
 * an ending means (finish, re-queue); the attempt only says what happened.
 */
export class Attempt<J = unknown> {
  readonly jobId: string;
  readonly number: number;
  /** Why the manager asked it to stop, if it did. */
  stopRequest: StopRequest | undefined;
  /** Usage the job reported as it went: kept when its thread dies before `done`. */
  usage: UsageByModel = {};
  iterations = 0;
  /** The last text the job said (capped): a budget stop that has to kill its thread keeps it. */
  lastText: string | undefined;
  readonly #job: J;
  readonly #host: AttemptHost<J>;
  readonly #executor: AttemptOptions<J>['executor'];
  /** Its request-gate lease (adaptive concurrency), if any: its owner releases it once it has ended. */
  readonly gate: AttemptOptions<J>['gate'];
  readonly #cancelGraceMs: number;
  readonly #hardStop = new AbortController();
  // Its timers, one of each at most (cleared at dispose): the earlier of its timeout and its
  // wall-clock budget, the cancel grace, the port-close fallback.
  #deadlineTimer: unknown;
  #graceTimer: unknown;
  #fallbackTimer: unknown;
  readonly #processes = new ChildProcesses();
  /** Its host tool calls in flight, made at its first: aborted when it is stopped or ends (a thread that died mid-call included). */
  #hostCalls: HostCalls | undefined;
  /** {@link ended}, once asked for. */
  #ended: Promise<AttemptEnd> | undefined;
  #resolve: ((end: AttemptEnd) => void) | undefined;
  #end: AttemptEnd | undefined;
  #port: AttemptPort | undefined;
  #started = false;
  #hardStopped = false;
  #portClosed = false;
  #runSettled = false;
  #runError: unknown;
  #fallbackArmed = false;

  constructor(options: AttemptOptions<J>) {
    this.#job = options.job;
    this.#host = options.host;
    this.#executor = options.executor;
    this.gate = options.gate;
    this.#cancelGraceMs = options.cancelGraceMs;
    this.jobId = options.jobId;
    this.number = options.number;
  }

  /**
   * Settles once, with how it ended. Made when first asked for: the job runner hears of the end
   * through {@link AttemptHost.ended} instead (a promise, its resolvers and a reaction per job in
   * flight cost the main thread memory, issue 40).
   */
  get ended(): Promise<AttemptEnd> {
    this.#ended ??= this.#end ? Promise.resolve(this.#end) : new Promise((resolve) => (this.#resolve = resolve));
    return this.#ended;
  }

  /** True once a hard stop was ordered (the thread is being, or was, terminated). */
  get hardStopped(): boolean {
    return this.#hardStopped;
  }

  get isOver(): boolean {
    return this.#end !== undefined;
  }

  /** Hands the job to the executor. */
  launch(spec: JobSpec): void {
    const executor = this.#executor;
    this.#processes.tag = spec.processTag;
    // A remote executor's job never crosses a thread of this process: its port is an
    // in-process pair, not a native MessageChannel (see local-ports.ts).
    const remote = executor.capabilities.remote === true;
    // A Piscina job goes without a port of its own: it talks over its thread's link
    // (thread-links.ts), since every open port costs each message on this thread (libuv checks
    // them all). Other executors get a MessageChannel; a remote one an in-process pair.
    const linked = remote ? undefined : executor.openPort?.();
    const { local: port, remote: remoteEnd } = linked ? { local: linked, remote: undefined } : portPair(remote);
    this.#port = port;
    // Only a job on this process's threads asks this process's adaptive gate (a remote one has
    // its runner's); it asks over the same port as everything else.
    const adaptiveGate = !remote && this.gate?.service !== undefined && spec.config.background.concurrency === 'adaptive';
    port.on('message', (message: unknown) => this.#onMessage(message));
    // `on`, not `once`: a port's `close` fires once, and `once` would hold a wrapper per job in flight.
    port.on('close', () => {
      this.#portClosed = true;
      this.#check();
    });
    const { owner } = this.#host;
    // A linked task has no port until its worker's loader sets one (see JobTask.port).
    const task = {
      spec,
      ...(linked ? { linkId: linked.id } : { port: remoteEnd }),
      ...(adaptiveGate ? { adaptiveGate } : {}),
      rateGateBuffer: this.#host.rateGateBuffer,
      ...(owner ? { owner } : {}),
    } as JobTask;
    const exclusive = this.number > 1 && executor.capabilities.exclusive;
    let run: Promise<void>;
    try {
      run = executor.run(task, { hardStop: this.#hardStop.signal, ...(exclusive ? { exclusive } : {}) });
    } catch (error) {
      run = Promise.reject(error);
    }
    // One reaction, not a then and a finally: each promise and closure here is held for as long as the job is in flight.
    run.then(
      () => this.#settled(undefined),
      (error: unknown) => this.#settled(error),
    );
  }

  /** Its run settled: `error`, what it rejected with. */
  #settled(error: unknown): void {
    this.#runError = error;
    this.#runSettled = true;
    this.#check();
  }

  /** Sends the job a message (a spawn's answer, its children's results). False once it cannot arrive. */
  post(message: MainMessage): boolean {
    if (this.#end || this.#portClosed || !this.#port) return false;
    try {
      this.#port.postMessage(message);
      return true;
    } catch {
      return false;
    }
  }

  /** A gated tool's question; a remote executor's job is refused, as its closed permission port always did. */
  #answerPermission(requestId: number, tool: string, callId: string | undefined): void {
    if (this.#executor.capabilities.remote === true) return void this.post({ type: 'permission-answer', requestId, granted: false });
    this.post({ type: 'permission-answer', requestId, ...this.#host.answerPermission(this.#job, tool, callId) });
  }

  /**
   * A model request asks the gate for a slot; the answer goes back once it has one. Without a
   * gate (a job that asks anyway) it goes at once: nothing waits for an answer that never comes.
   * The slot of a thread that dies holding it comes back with the lease's release (runner.ts).
   */
  #admitRequest(ticket: number): void {
    const gate = this.gate?.service;
    if (!gate) return void this.post({ type: 'gate-admitted', ticket });
    void gate.admitRequest(ticket).then(() => this.post({ type: 'gate-admitted', ticket }));
  }

  #startHostCall(requestId: number, call: { name: string; callId: string; args: unknown }): void {
    const host = this.#host;
    // A remote job's calls would come from another machine: host tools are refused at its spawn.
    if (this.#executor.capabilities.remote === true) {
      return void this.post({ type: 'tool-answer', requestId, ok: false, code: 'TOOL_UNKNOWN', message: `${call.name} is not a host tool of this job` });
    }
    (this.#hostCalls ??= new HostCalls()).start(
      requestId,
      (signal) => host.runHostTool(this.#job, call, signal),
      (answer) => this.post({ type: 'tool-answer', requestId, ...answer }),
    );
  }

  /**
   * The wall clock starts when the worker says `started` (queue time does not count): one timer
   * for the earlier of its timeout and its wall-clock budget (`budgetMs`, if it has one), which
   * the host hears of as {@link AttemptHost.expired}. Once either has stopped the job the other
   * could add nothing (a second stop request is refused), so the later one is never armed; on a
   * tie the timeout wins, as it did when both were armed, the timeout first.
   */
  armDeadline(timeoutMs: number, budgetMs?: number): void {
    const kind: DeadlineKind = budgetMs !== undefined && budgetMs < timeoutMs ? 'budget' : 'timeout';
    if (this.#deadlineTimer !== undefined) this.#host.scheduler.clear(this.#deadlineTimer);
    const ms = Math.min(timeoutMs, budgetMs ?? timeoutMs);
    this.#deadlineTimer = this.#host.scheduler.set(() => this.#host.expired(this.#job, this, kind), ms, { jobId: this.jobId, kind });
  }

  /**
   * Phase one of a stop: asks the job over its port; phase two, after the grace period, ends
   * its thread. Returns false when a stop was already under way or the attempt is over.
   */
  requestStop(reason: StopRequest): boolean {
    if (this.stopRequest || this.#end) return false;
    this.stopRequest = reason;
    // A host call runs here, not in the job's thread: it stops with the job's stop, not after it.
    this.#hostCalls?.abortAll(new JobError('ABORTED', this.jobId, `job ${reason}`));
    try {
      this.#port?.postMessage({ type: 'cancel', reason });
    } catch {
      // A port already closed: the hard stop below still comes.
    }
    this.#graceTimer = this.#host.scheduler.set(() => this.hardStop(), this.#cancelGraceMs, { jobId: this.jobId, kind: 'cancel-grace' });
    return true;
  }

  /** Ends the job's thread now and kills every child process group it registered. */
  hardStop(): void {
    if (this.#hardStopped || this.#end) return;
    // A child process group reported just now may still wait in the port: register it first.
    this.#drainPort();
    this.#hardStopped = true;
    this.#hostCalls?.abortAll(new JobError('ABORTED', this.jobId, 'hard stop'));
    this.#processes.killGroups();
    this.#sweepTagged();
    if (this.#end) return;
    if (!this.#executor.capabilities.hardStop) {
      // In-process jobs cannot be forced: the record says it was let go, not that it stopped.
      const error = new JobError(
        'ABORTED',
        this.jobId,
        'the executor cannot force a stop (it runs jobs on the main thread); the job was let go and may still be running',
      );
      return this.#finish({ kind: 'lost', error });
    }
    this.#hardStop.abort(new JobError('ABORTED', this.jobId, 'hard stop'));
  }

  /** Ends the attempt without a result (close(): its thread is gone and nothing more will come). */
  abandon(error: unknown): void {
    this.#drainPort();
    this.#finish({ kind: 'lost', error });
  }

  /** Clears its timers, closes its ports and kills what is left of its child processes. */
  dispose(): void {
    const { scheduler } = this.#host;
    for (const timer of [this.#deadlineTimer, this.#graceTimer, this.#fallbackTimer]) if (timer !== undefined) scheduler.clear(timer);
    this.#deadlineTimer = this.#graceTimer = this.#fallbackTimer = undefined;
    // Process groups reported after the ending are still in the port: read them before it closes.
    this.#drainPort();
    this.#port?.close();
    this.#processes.killGroups();
    // A thread that died or was stopped could not clean up after itself, and a tool aborted at
    // the job's end may still be stopping its command: nothing of a job outlives it. (Only jobs
    // that ever started a process pay for the sweep.)
    if (this.#processes.hadChildren || this.#hardStopped || this.#end?.kind === 'lost' || this.#end?.kind === 'protocol') this.#sweepTagged();
  }

  #onMessage(raw: unknown): void {
    if (this.#end) return this.#afterEnd(raw);
    // This runs in the host's event loop: nothing a worker sends may throw here.
    try {
      const parsed = workerMessageSchema.safeParse(raw);
      if (!parsed.success) return this.#violate(`it sent an invalid message (${z.prettifyError(parsed.error).split('\n')[0] ?? 'unknown shape'})`);
      const message = parsed.data;
      if (message.jobId !== this.jobId) return this.#violate(`it sent a message for job ${JSON.stringify(message.jobId)}`);
      switch (message.type) {
        case 'started':
          if (this.#started && !this.#executor.capabilities.reruns) return this.#violate('it sent "started" twice');
          this.#started = true;
          return this.#host.started(this.#job, this, message.threadId);
        case 'progress': {
          const event = message.event as LoopEvent;
          // An interrupted call is a model call too (its budget counts it): the live report says so.
          const counted =
            event.type === 'model_response' ? event : event.type === 'model_interrupted' && event.usage ? { ...event, usage: event.usage } : undefined;
          if (counted) {
            this.usage = addModelUsage(this.usage, counted.model ?? '', counted.usage);
            this.iterations = Math.max(this.iterations, counted.iteration);
          }
          if (event.type === 'assistant_text') this.lastText = event.text;
          return this.#host.progress(this.#job, event);
        }
        case 'process':
          return this.#processes.note(message.state, message.pgid);
        case 'alert':
          return this.#host.alert(this.#job, { message: message.message, severity: message.severity });
        case 'permission':
          return this.#answerPermission(message.requestId, message.tool, message.callId);
        case 'spawn':
          return this.#host.spawn(this.#job, this, message.requestId, message.request);
        case 'tool-call':
          return this.#startHostCall(message.requestId, { name: message.name, callId: message.callId, args: message.args });
        case 'tool-abort':
          return this.#hostCalls?.abort(message.requestId, new JobError('ABORTED', this.jobId, 'the job stopped waiting for this call'));
        case 'gate-admit':
          return this.#admitRequest(message.ticket);
        case 'gate-settle':
          return this.gate?.service?.settleRequest(message.ticket, message.outcome as RequestOutcome);
        case 'suspend':
          return this.#finish({ kind: 'suspended', state: message.state as Omit<ResumeState, 'childResults'>, seenChildren: message.seenChildren });
        case 'await-approval':
          return this.#finish({
            kind: 'awaiting-approval',
            state: message.state as Omit<ResumeState, 'childResults'>,
            calls: message.calls,
            seenChildren: message.seenChildren,
          });
        case 'sleep':
          return this.#finish({
            kind: 'sleeping',
            state: message.state as Omit<ResumeState, 'childResults'>,
            at: message.at,
            reason: message.reason,
            seenChildren: message.seenChildren,
          });
        case 'done':
          return this.#finish({ kind: 'done', outcome: message.outcome as JobOutcome });
      }
    } catch (error) {
      this.#host.logger?.error({ err: error, jobId: this.jobId }, 'a worker message could not be handled');
      this.#violate(`its message could not be handled (${errorMessage(error)})`);
    }
  }

  /** After its ending only one message still matters: a child process group, which must die. */
  #afterEnd(raw: unknown): void {
    const parsed = workerMessageSchema.safeParse(raw);
    if (!parsed.success || parsed.data.type !== 'process' || parsed.data.jobId !== this.jobId) return;
    this.#processes.note(parsed.data.state, parsed.data.pgid);
  }

  #violate(what: string): void {
    if (this.#end) return;
    const error = new JobError('PROTOCOL_INVALID', this.jobId, `the worker broke the job protocol: ${what}`);
    this.#finish({ kind: 'protocol', error });
    // A worker that breaks the protocol cannot be trusted to stop when asked.
    this.#hardStopped = true;
    this.#processes.killGroups();
    this.#hardStop.abort(error);
  }

  /** Ends once enough is known: its `done`, or its run settled and its port closed. */
  #check(): void {
    if (this.#end || (!this.#runSettled && !this.#portClosed)) return;
    // The worker may have posted `done` before its run settled, and the main thread not have
    // read it yet (it was busy): read what the port holds before saying "no result".
    this.#drainPort();
    if (this.#end) return;
    if (this.#runSettled && this.#portClosed) return this.#finish({ kind: 'lost', error: this.#noResultError() });
    if (this.#runSettled && !this.#fallbackArmed) {
      this.#fallbackArmed = true;
      const onFallback = () => {
        this.#drainPort();
        this.#portClosed = true;
        this.#check();
      };
      this.#fallbackTimer = this.#host.scheduler.set(onFallback, TIMINGS.portCloseFallbackMs, { jobId: this.jobId, kind: 'port-close' });
    }
  }

  #drainPort(): void {
    // Only an open port: once its `close` has fired every message was delivered, and
    // receiveMessageOnPort() on a closed port crashes Node 20 (a segmentation fault, seen here).
    if (!this.#port || this.#portClosed) return;
    for (let next = this.#port.receive(); next; next = this.#port.receive()) this.#onMessage(next.message);
  }

  #noResultError(): unknown {
    return this.#runError ?? new JobError('PROTOCOL_INVALID', this.jobId, 'the worker ended the job without reporting a result');
  }

  #finish(end: AttemptEnd): void {
    if (this.#end) return;
    this.#end = end;
    // Its thread died, was stopped, or the job ended: nobody waits for these calls any more.
    this.#hostCalls?.abortAll(new JobError('ABORTED', this.jobId, `the job's attempt ended (${end.kind})`));
    this.#resolve?.(end);
    const host = this.#host;
    if (host.ended) queueMicrotask(() => host.ended?.(this.#job, this, end));
  }

  /** After a hard stop or a lost thread, also every process still carrying this attempt's tag (see ChildProcesses.sweep). */
  #sweepTagged(): void {
    this.#processes.sweep(this.#executor.capabilities.remote === true);
  }
}
