import type OpenAI from 'openai';
import type { Logger } from 'pino';
import type { ForkpoolConfig } from '../../shared/config.js';
import { linkedAbort } from '../../shared/abort.js';
import { AbortError, ForkpoolError, LedgerWriteError, serializeError } from '../../shared/errors.js';
import { BACKGROUND_FOLLOWUP_PROMPT } from '../../shared/prompts.js';
import { formatBackgroundReports } from '../views/delivery-format.js';
import { TurnDelivery } from '../delivery/turn-delivery.js';
import { parentJobTools } from './parent-tools.js';
import type { SpawnToolRequest } from './background-tools.js';
import { Deliveries } from '../delivery/deliveries.js';
import { JobActivity } from './job-activity.js';
import { TurnSpeculation } from './speculation.js';
import { TypedEmitter } from '../../shared/typed-emitter.js';
import type { Executor } from '../executors/executor.js';
import { BackgroundManager, type CloseReport, type JobAlert, type JobHandle, type JobScheduler } from '../jobs/manager.js';
import { formatStillRunning } from '../jobs/joins.js';
import { ParentAgent, type AgentRole, type TurnResult } from './parent-agent.js';
import { PermissionStore, type PermissionAsker } from '../limits/permissions.js';
export type { SessionEvents } from './session-events.js';
import type { SessionEvents } from './session-events.js';
import { closeDurableSession, openDurableSession, type DurableSession, type DurableSessionOptions } from './durable-session.js';

export interface AgentSessionOptions extends DurableSessionOptions {
  config: ForkpoolConfig;
  client?: OpenAI;
  executor?: Executor;
  /** Close the executor when the session closes. Default: only when the session created it. */
  closeExecutor?: boolean;
  logger?: Logger;
  asker?: PermissionAsker;
  role?: AgentRole;
  /** Offer the background tools to the parent (default: when `background.maxDepth` ≥ 1). */
  background?: boolean;
  /** The manager's timers (job timeouts, wave deadlines); tests drive them by hand. */
  scheduler?: JobScheduler;
}

interface QueuedTurn {
  input: string;
  followUp: boolean;
  signal?: AbortSignal | undefined;
  resolve: (result: TurnResult) => void;
  reject: (error: unknown) => void;
}

/**
 * A parent agent and its background jobs: drains ended jobs into each turn exactly once,
 * turns a finished wave (or a user job) into one follow-up turn — at once when idle, after
 * the current turn when busy — and books every job's usage under `<role>:subagent`.
 */
export class AgentSession extends TypedEmitter<SessionEvents> {
  readonly agent: ParentAgent;
  readonly manager: BackgroundManager;
  /** The manager's delivery side: what this session's turns were handed, and what they take back. */
  readonly deliveries: Deliveries;
  readonly permissions: PermissionStore;
  /** This session's id: under it a durable ledger keeps its conversation and jobs (docs/durability.md). */
  readonly id: string;
  readonly #durable: DurableSession;
  readonly #config: ForkpoolConfig;
  readonly #queue: QueuedTurn[] = [];
  readonly activity: JobActivity;
  /** Alerts not yet shown to the model; bounded by `background.alertBufferMax`. */
  readonly #alerts: JobAlert[] = [];
  #alertsDropped = 0;
  /** Per wave that joined early: its jobs still running then, listed at the next delivery. */
  readonly #stillRunning = new Map<number, string[]>();
  readonly #logger: Logger | undefined;
  #currentTurn = 0;
  #followUpPending = false;
  readonly #delivery: TurnDelivery;
  /** Results the last turn had no room for: a follow-up delivers them. */
  #deferred = 0;
  /** Set as close() begins: jobs it cancels must not start a follow-up turn. */
  #closed = false;
  #running = false;
  #idleWaiters: Array<() => void> = [];
  /** Aborts the turn that runs now (close() does; so does the caller's signal). */
  #turnAbort: AbortController | undefined;

  constructor(options: AgentSessionOptions) {
    const logger = options.logger;
    super(logger ? (error, event) => logger.warn({ err: error, event }, 'session event listener threw') : undefined);
    this.#config = options.config;
    this.#durable = openDurableSession(options.config, options);
    this.id = this.#durable.id;
    this.permissions = new PermissionStore(options.config.grantedTools);
    try {
      this.manager = new BackgroundManager({
        config: options.config,
        permissions: this.permissions,
        ...(this.#durable.jobs ? { store: this.#durable.jobs } : {}),
        ...(options.executor ? { executor: options.executor } : {}),
        ...(options.closeExecutor !== undefined ? { closeExecutor: options.closeExecutor } : {}),
        ...(options.logger ? { logger: options.logger } : {}),
        ...(options.scheduler ? { scheduler: options.scheduler } : {}),
      });
    } catch (error) {
      // The session's claim on its scope (and a ledger it opened) must not outlive the error.
      closeDurableSession(this.#durable);
      throw error;
    }
    this.#logger = logger;
    this.deliveries = new Deliveries(this.manager);
    this.#delivery = new TurnDelivery(this.manager, this.deliveries, options.config, logger);
    this.activity = new JobActivity(this.manager);
    const withBackground = options.background ?? options.config.background.maxDepth >= 1;
    this.agent = new ParentAgent({
      // The manager has decided how bash runs; the parent's tools need not probe again.
      // ... and which files no tool opens (the ledger store among them).
      config: { ...options.config, sandbox: this.manager.sandbox.mode, hiddenPaths: [...this.manager.hiddenPaths] },
      permissions: this.permissions,
      ...(options.client ? { client: options.client } : {}),
      ...(options.asker ? { asker: options.asker } : {}),
      ...(options.role ? { role: options.role } : {}),
      extraTools: withBackground
        ? parentJobTools({
            config: options.config,
            manager: this.manager,
            deliveries: this.deliveries,
            activity: this.activity,
            currentTurn: () => this.#currentTurn,
            spawnFromAgent: (r) => this.#spawnFromAgent(r),
            spawnForAgentTool: (request) => this.manager.spawn({ ...request, role: this.agent.role, wave: this.#currentTurn }),
          })
        : [],
      turnPreamble: (turn) => this.#deliver(turn),
      // The parent takes part in the jobs' 429 gate, and with adaptive concurrency goes first.
      rateGate: this.manager.parentRateGate(),
      onEvent: (event) => this.emit('parent', event),
    });
    // Its speculative spawns: kept when a turn refers to them, dropped when it ends without (speculation.ts).
    new TurnSpeculation(this.manager, this);
    this.manager.on('alert', (alert) => this.#onAlert(alert));
    this.manager.on('done', (job) => {
      this.agent.session.addUsage(`${job.role}:subagent`, job.usage);
      // A user's job is not wave-gated: it reaches the parent as soon as the parent is free. So
      // does a job in no wave (a restarted one, one spawned through the manager directly).
      // A nested job's result went to its parent job, not here.
      if (job.parentJobId === undefined && (job.role === 'user' || job.wave === null)) this.#requestFollowUp('user-job');
      this.#checkIdle();
    });
    this.manager.on('wave-done', () => this.#requestFollowUp('wave'));
    // A join let the wave's follow-up come early: it also lists, once, what is still running.
    this.manager.on('wave-joined', ({ wave, pending }) => {
      this.#stillRunning.set(
        wave,
        pending.map((job) => job.id),
      );
      this.#requestFollowUp('wave');
    });
    this.#resume();
  }

  /**
   * A session that continues: {@link AgentSessionOptions.sessionId} names one the ledger holds
   * (else `SESSION_UNKNOWN`). Its conversation and turn count come back, results that ended
   * while it was down are delivered once at its next turn, and its interrupted jobs are re-run
   * or delivered as interrupted (docs/durability.md).
   */
  static resume(sessionId: string, options: AgentSessionOptions): AgentSession {
    return new AgentSession({ ...options, sessionId, resume: true });
  }

  #resume(): void {
    const { snapshot, store } = this.#durable;
    if (!store) return;
    if (!snapshot) {
      store.saveSession(this.agent.session.snapshot(this.id));
      return;
    }
    this.agent.session.restore(snapshot);
    // Results handed to a turn that never committed were never kept: they wait for delivery again.
    this.deliveries.takeBackUncommitted(this.agent.session);
    // A person's prompt whose turn the crash cut: kept in the conversation, with a note for its answer.
    if (snapshot.pendingInput !== undefined) {
      this.agent.session.commitInterrupted(snapshot.pendingInput);
      this.#saveSession();
    }
    // Results waiting from before the restart reach the parent at its next turn: a follow-up
    // when it stays idle, or the caller's own turn when one is submitted in the same tick.
    if (this.deliveries.undeliveredCount === 0) return;
    this.#followUpPending = true;
    setImmediate(() => {
      this.emit('follow-up', { reason: 'restart', queued: this.#running || this.#queue.length > 0 });
      void this.#runQueue();
    });
  }

  /**
   * Keeps the conversation in the ledger; called after every committed turn, and before a
   * person's turn runs (with its prompt as `pendingInput`). A failed write is logged and the
   * session goes on: the turn is committed in memory, and should the process die before a later
   * save lands, a resume takes back what was delivered in the turns it lost.
   */
  #saveSession(pendingInput?: string): void {
    const { store } = this.#durable;
    if (!store || store.closed) return;
    try {
      const snapshot = this.agent.session.snapshot(this.id);
      store.saveSession(pendingInput === undefined ? snapshot : { ...snapshot, pendingInput });
    } catch (error) {
      if (!(error instanceof LedgerWriteError)) throw error;
      this.#logger?.error({ err: error, sessionId: this.id }, 'durable ledger: the conversation could not be saved; the session goes on in memory');
    }
  }

  /**
   * Runs a person's turn now, or after the turns already queued. Aborting `options.signal`
   * takes a queued turn off the queue (the promise rejects with `ABORTED`) and ends a running
   * one at once (it resolves with stop reason `aborted`). Background jobs live on either way.
   */
  submit(input: string, options: { signal?: AbortSignal } = {}): Promise<TurnResult> {
    const { signal } = options;
    if (signal?.aborted) return Promise.reject(new AbortError(signal.reason));
    return new Promise((resolve, reject) => {
      const turn: QueuedTurn = { input, followUp: false, signal, resolve, reject };
      signal?.addEventListener(
        'abort',
        () => {
          const at = this.#queue.indexOf(turn);
          if (at < 0) return;
          this.#queue.splice(at, 1);
          reject(new AbortError(signal.reason));
        },
        { once: true },
      );
      this.#queue.push(turn);
      void this.#runQueue();
    });
  }

  /**
   * A job a person started (`/bg start`): role `user`, no wave, its own usage bucket. It runs
   * `options.agent`, else `background.defaultAgent`, else a fork of the parent.
   */
  startUserJob(task: string, label?: string, options: { agent?: string; name?: string } = {}): JobHandle {
    return this.manager.spawn({ task, label: label ?? task.slice(0, 40), role: 'user', wave: null, ...options });
  }

  cancel(id: string): JobHandle {
    return this.manager.cancel(id);
  }

  /**
   * Ends the turn that runs now (a person's or a follow-up) with stop reason `aborted`; queued
   * turns and background jobs are left alone. False when no turn runs.
   */
  cancelTurn(reason: unknown = 'cancelled by the user'): boolean {
    if (!this.#turnAbort || this.#turnAbort.signal.aborted) return false;
    this.#turnAbort.abort(reason);
    return true;
  }

  /** True while a turn runs or is queued, a follow-up is owed, or a job is pending. */
  get busy(): boolean {
    return this.#running || this.#queue.length > 0 || this.#followUpPending || this.manager.pending > 0;
  }

  /** Resolves when the parent is idle, no follow-up is owed and no job is left. */
  onIdle(): Promise<void> {
    if (!this.busy) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  /** Ends the running turn, drops queued ones, and closes the manager (see its close()). */
  async close(options: { drain?: boolean; timeoutMs?: number } = {}): Promise<CloseReport> {
    this.#closed = true;
    for (const turn of this.#queue.splice(0)) turn.reject(new ForkpoolError('MANAGER_CLOSED', 'the session was closed before this turn ran'));
    this.#turnAbort?.abort(new ForkpoolError('MANAGER_CLOSED', 'the session was closed'));
    const report = await this.manager.close(options);
    this.#saveSession();
    closeDurableSession(this.#durable);
    this.#followUpPending = false;
    this.#checkIdle();
    return report;
  }

  #spawnFromAgent(request: SpawnToolRequest): JobHandle {
    return this.manager.spawn({
      task: request.task,
      label: request.label,
      role: this.agent.role,
      wave: this.#currentTurn,
      ...(request.agent !== undefined ? { agent: request.agent } : {}),
      ...(request.name !== undefined ? { name: request.name } : {}),
      ...(request.budget !== undefined ? { budget: request.budget } : {}),
      ...(request.fullContext ? { parentSummary: this.agent.summary() } : {}),
      ...(request.join ? { join: request.join } : {}),
      ...(request.workspace ? { workspace: request.workspace } : {}),
      ...(request.speculative ? { speculative: true } : {}),
    });
  }

  /**
   * The turn preamble: alerts sent since the last turn (one `[Background reports]` block), then
   * every ended, undelivered job, marked delivered in this turn.
   */
  #deliver(turn: number): string | undefined {
    this.#currentTurn = turn;
    const reports = formatBackgroundReports(this.#alerts.splice(0), this.#alertsDropped);
    this.#alertsDropped = 0;
    // One budget for everything this turn injects: the alerts first, then the results.
    let delivery: ReturnType<TurnDelivery['deliver']>;
    try {
      delivery = this.#delivery.deliver(turn, reports ? reports.length + 2 : 0);
    } catch (error) {
      if (!(error instanceof LedgerWriteError)) throw error;
      // The delivery could not be recorded, so none was made: the results wait (not lost) for a
      // later turn, and this one runs without them. No follow-up is asked for: on a full disk it
      // would fail the same way, turn after turn.
      this.#logger?.error({ err: error, turn }, 'durable ledger: results could not be marked delivered; they wait for a later turn');
      delivery = { block: '', jobs: [], deferred: 0, rerun: [] };
    }
    const { block, jobs, deferred } = delivery;
    this.#deferred = deferred;
    if (jobs.length > 0) this.emit('delivered', { turn, jobs });
    const parts = [reports, block, this.#takeStillRunning()].filter((p) => p);
    return parts.length > 0 ? parts.join('\n\n') : undefined;
  }

  /** The early-joined waves' jobs that have not ended yet, once per wave. */
  #takeStillRunning(): string {
    const blocks = [...this.#stillRunning].map(([wave, ids]) =>
      formatStillRunning(
        wave,
        ids.flatMap((id) => {
          const job = this.manager.get(id);
          return job && job.state !== 'ended' ? [job] : [];
        }),
      ),
    );
    this.#stillRunning.clear();
    return blocks.filter((b) => b).join('\n');
  }

  #onAlert(alert: JobAlert): void {
    this.#alerts.push(alert);
    this.emit('alert', alert);
    if (this.#alerts.length > this.#config.background.alertBufferMax) {
      const dropped = this.#alerts.shift() as JobAlert;
      this.#alertsDropped++;
      this.#logger?.warn({ jobId: dropped.jobId, bound: this.#config.background.alertBufferMax }, 'alert buffer full: the oldest alert was dropped');
      this.emit('alert-dropped', dropped);
    }
  }

  #requestFollowUp(reason: 'wave' | 'user-job' | 'deferred'): void {
    if (this.#closed || this.manager.closed || this.deliveries.undeliveredCount === 0) return;
    const queued = this.#running || this.#queue.length > 0;
    this.emit('follow-up', { reason, queued });
    this.#followUpPending = true;
    void this.#runQueue();
  }

  async #runQueue(): Promise<void> {
    if (this.#running) return;
    this.#running = true;
    try {
      for (;;) {
        const next = this.#queue.shift() ?? this.#takeFollowUp();
        if (!next) break;
        const abort = linkedAbort(next.signal);
        this.#turnAbort = abort.controller;
        try {
          // A person's prompt is kept before its turn runs: a crash during the turn must not lose it.
          if (!next.followUp) this.#saveSession(next.input);
          const result = await this.agent.runTurn(next.input, { followUp: next.followUp, signal: abort.signal });
          // Committed: from here on its deliveries are part of the kept conversation.
          this.#saveSession();
          // The spawning turn is over: its wave may now end (and fire its follow-up).
          this.deliveries.sealWave(result.turn);
          // Results the budget had no room for come in a follow-up of their own.
          if (this.#deferred > 0) this.#requestFollowUp('deferred');
          this.emit('turn-result', { ...result, followUp: next.followUp });
          next.resolve(result);
        } catch (error) {
          this.#turnFailed(next, error);
          next.reject(error);
        } finally {
          abort.dispose();
          this.#turnAbort = undefined;
        }
      }
    } finally {
      this.#running = false;
      this.#checkIdle();
    }
  }

  /**
   * A turn that threw is reported (a follow-up has nobody to reject to), its wave sealed (the jobs
   * it spawned may still end it), and the results delivered into it put back: the turn never
   * committed, so the conversation never kept them, and the next turn delivers them.
   */
  #turnFailed(turn: QueuedTurn, error: unknown): void {
    const failed = this.agent.session.turns + 1;
    const redelivered = this.deliveries.takeBackUncommitted(this.agent.session);
    this.#logger?.error({ err: error, turn: failed, followUp: turn.followUp, redelivered }, 'a parent turn threw; its results wait for the next turn');
    this.emit('turn-error', { turn: failed, followUp: turn.followUp, error: serializeError(error), redelivered });
    if (this.#currentTurn === failed) this.deliveries.sealWave(failed);
  }

  /** One follow-up for whatever ended meanwhile; none if a turn already delivered it all. */
  #takeFollowUp(): QueuedTurn | undefined {
    if (!this.#followUpPending || this.#closed) return undefined;
    this.#followUpPending = false;
    if (this.deliveries.undeliveredCount === 0) return undefined;
    return { input: BACKGROUND_FOLLOWUP_PROMPT, followUp: true, resolve: () => {}, reject: () => {} };
  }

  /**
   * Deferred a tick: a job's `done` arrives before its wave's `wave-done`, and the follow-up
   * that the latter starts must count as work, or a waiter would wake too early.
   */
  #checkIdle(): void {
    setImmediate(() => {
      if (this.busy) return;
      for (const resolve of this.#idleWaiters.splice(0)) resolve();
    });
  }
}
