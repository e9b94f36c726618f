import type { ModelClient } from '../../shared/model-client.js';
import type { Logger } from 'pino';
import type { ForkpoolConfig } from '../../shared/config.js';
import { LedgerWriteError, serializeError } from '../../shared/errors.js';
import type { FollowUpReason } from '../views/follow-up.js';
import { TurnInputs, endingDeliversAtOnce, endingStartsFollowUp } from './turn-inputs.js';
import { parentJobTools } from './parent-tools.js';
import type { SpawnToolRequest } from './background-tools.js';
import { Deliveries } from '../delivery/deliveries.js';
import { JobActivity } from './job-activity.js';
import { TurnSpeculation } from './speculation.js';
import { TypedEmitter } from '../../shared/typed-emitter.js';
import type { Executor } from '../executors/executor.js';
import type { JobRecord } from '../ledger/ledger.js';
import type { FunctionHooks } from '../hooks/hook-runner.js';
import { BackgroundManager, type CloseReport, type JobHandle, type JobScheduler, type SpawnRequest, type BackgroundManagerOptions } from '../jobs/manager.js';
import { ParentAgent, type AgentRole, type TurnResult } from './parent-agent.js';
import { PermissionStore, type PermissionAsker } from '../limits/permissions.js';
export type { SessionEvents } from './session-events.js';
import type { SessionEvents } from './session-events.js';
import type { ToolDefinition } from '../../shared/tool-contract.js';
import type { ToolSource } from '../tools/catalog.js';
import { closeDurableSession, openDurableSession, saveConversation, type DurableSession, type DurableSessionOptions } from './durable-session.js';
import { TurnQueue, type QueuedTurn } from './turn-queue.js';

export interface AgentSessionOptions extends DurableSessionOptions {
  config: ForkpoolConfig;
  /** The parent's model client; defaults to one built from `config`. An `openai` client of yours sends the parent's requests itself. */
  client?: ModelClient;
  executor?: Executor;
  /** Where `executor: "remote"` spawns run; the parent gets `spawn_remote_agent` (see BackgroundManagerOptions.remote). */
  remote?: BackgroundManagerOptions['remote'];
  /** Close the executor when the session closes. Default: only when the session created it. */
  closeExecutor?: boolean;
  logger?: Logger;
  asker?: PermissionAsker;
  role?: AgentRole;
  /** Offer the background tools to the parent (default: when `background.maxDepth` ≥ 1). */
  background?: boolean;
  /** The manager's timers (job timeouts, wave deadlines); tests drive them by hand. */
  scheduler?: JobScheduler;
  /** Host tools for the parent's own loop and its jobs (see BackgroundManagerOptions.tools). */
  tools?: readonly ToolDefinition[];
  /** Tool sources with a life (MCP servers), owned by the session's manager. */
  toolSources?: readonly ToolSource[];
  /** Library hooks for the parent and its jobs (see BackgroundManagerOptions.hooks; docs/tools.md "Hooks"). */
  hooks?: FunctionHooks;
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
  /** A person's turns in order, then the follow-up owed: one at a time (turn-queue.ts). */
  readonly #turns = new TurnQueue({
    run: (turn, signal) => this.#runTurn(turn, signal),
    onFailed: (turn, error) => this.#turnFailed(turn, error),
    followUpHasWork: () => this.deliveries.undeliveredCount > 0,
    onDrained: () => this.#checkIdle(),
  });
  readonly activity: JobActivity;
  readonly #logger: Logger | undefined;
  #currentTurn = 0;
  /** Alerts, results and follow-up reasons: what each turn is handed besides a person's words. */
  readonly #inputs: TurnInputs;
  /** The jobs the turn about to start delivers: the `delivered` event follows its `turn_start`. */
  #deliveredNow: JobRecord[] = [];
  /** Jobs the running turn's stopped `agent_<name>` calls cancelled (for its `turn-result`). */
  #cancelledWithTurn: string[] = [];
  /** Jobs of `agent_<name>` calls a stopped turn cancelled (Esc), by that turn: see #answeredByStoppedCall. */
  readonly #stoppedCalls = new Map<string, number>();
  /** Results the last turn had no room for: a follow-up delivers them. */
  #deferred = 0;
  #idleWaiters: Array<() => void> = [];

  constructor(options: AgentSessionOptions) {
    const logger = options.logger;
    super(logger ? (error, event) => logger.warn({ err: error, event }, 'session event listener threw') : undefined);
    this.#durable = openDurableSession(options.config, options);
    this.id = this.#durable.id;
    this.permissions = new PermissionStore(options.config.grantedTools);
    try {
      this.manager = new BackgroundManager({
        config: options.config,
        permissions: this.permissions,
        ...(this.#durable.jobs ? { store: this.#durable.jobs } : {}),
        ...(options.executor ? { executor: options.executor } : {}),
        ...(options.remote !== undefined ? { remote: options.remote } : {}),
        ...(options.closeExecutor !== undefined ? { closeExecutor: options.closeExecutor } : {}),
        ...(options.logger ? { logger: options.logger } : {}),
        ...(options.scheduler ? { scheduler: options.scheduler } : {}),
        ...(options.tools ? { tools: options.tools } : {}),
        ...(options.toolSources ? { toolSources: options.toolSources } : {}),
        ...(options.hooks ? { hooks: options.hooks } : {}),
      });
    } catch (error) {
      // The session's claim on its scope (and a ledger it opened) must not outlive the error.
      closeDurableSession(this.#durable);
      throw error;
    }
    this.#logger = logger;
    this.deliveries = new Deliveries(this.manager);
    this.#inputs = new TurnInputs({
      manager: this.manager,
      deliveries: this.deliveries,
      config: options.config,
      logger,
      onAlertDropped: (alert) => this.emit('alert-dropped', alert),
    });
    this.activity = new JobActivity(this.manager);
    const withBackground = options.background ?? options.config.background.maxDepth >= 1;
    this.agent = new ParentAgent({
      // The manager has decided how bash runs; the parent's tools need not probe again.
      // ... and which files no tool opens (the ledger store among them).
      config: { ...options.config, sandbox: this.manager.sandbox.mode, hiddenPaths: [...this.manager.hiddenPaths] },
      permissions: this.permissions,
      ...(options.client ? { client: options.client } : {}),
      ...(options.asker ? { asker: options.asker } : {}),
      // The library's option, else the config's `role` (`--role` on the CLI).
      role: options.role ?? options.config.role,
      // The same catalog serves the parent's own loop: host tools run here, module tools too; read
      // at each turn, so MCP tools that connect after the session starts (or change) are offered.
      turnTools: () => this.manager.tools.parentTools(options.config.tools, { jobId: 'parent', agent: 'parent' }),
      extraTools: [
        ...(withBackground
          ? parentJobTools({
              config: options.config,
              manager: this.manager,
              deliveries: this.deliveries,
              activity: this.activity,
              currentTurn: () => this.#currentTurn,
              spawnFromAgent: (r) => this.#spawnFromAgent(r),
              // An agent_<name> call waits on its own job: never one an identical spawn joined.
              spawnForAgentTool: (request) =>
                this.manager.spawnReady(
                  { ...request, role: this.agent.role, wave: this.#currentTurn, ...this.agent.traceparentFor(request.parentToolId) },
                  { dedup: false },
                ),
              cancelledWithCall: (id) => {
                this.#cancelledWithTurn.push(id);
                this.#stoppedCalls.set(id, this.#currentTurn);
              },
            })
          : []),
      ],
      // The parent takes part in the jobs' 429 gate, and with adaptive concurrency goes first.
      rateGate: this.manager.parentRateGate(),
      hooks: this.manager.hooks,
      onEvent: (event) => {
        this.emit('parent', event);
        // A turn's deliveries are told after its start, as a surface shows them.
        const delivered = event.type === 'turn_start' ? this.#deliveredNow.splice(0) : [];
        if (delivered.length > 0) this.emit('delivered', { turn: event.turn, jobs: delivered });
      },
    });
    this.manager.on('alert', (alert) => {
      this.#inputs.addAlert(alert);
      this.emit('alert', alert);
    });
    // Its speculative spawns: kept when a turn refers to them, dropped when it ends without (speculation.ts).
    new TurnSpeculation(this.manager, this);
    this.manager.on('done', (job) => {
      this.agent.session.addUsage(`${job.role}:subagent`, job.usage);
      this.#answeredByStoppedCall(job);
      // A result re-run because it was stale (out of its wave, which has fired): said as such.
      // Which other endings start a turn of their own (not wave-gated ones): see endingStartsFollowUp.
      if (this.#inputs.isRerun(job.id)) this.#requestFollowUp({ kind: 'rerun' });
      else if (endingStartsFollowUp(job)) this.#requestFollowUp({ kind: 'user-job' });
      else if (endingDeliversAtOnce(job, options.config.delivery.format, this.#turns.idle)) this.#requestFollowUp({ kind: 'idle' });
      this.#checkIdle();
    });
    this.manager.on('wave-done', ({ wave }) => this.#requestFollowUp({ kind: 'wave', wave }));
    // A follow-up the disk refused delivered nothing (its results wait): once writes work again, they go out.
    this.manager.on('ledger-recovered', () => this.#requestFollowUp({ kind: 'ledger-recovered' }));
    // A join let the wave's follow-up come early: it also lists, once, what is still running.
    this.manager.on('wave-joined', ({ wave, reason, ended, pending }) => {
      this.#inputs.joinedEarly(
        wave,
        reason,
        ended.length,
        pending.map((job) => job.id),
      );
      this.#requestFollowUp(undefined, reason);
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
    this.#turns.oweFollowUp();
    this.#inputs.addReason({ kind: 'restart' });
    setImmediate(() => {
      this.emit('follow-up', { reason: 'restart', queued: !this.#turns.idle });
      void this.#turns.drain();
    });
  }

  /** Keeps the conversation in the ledger (see saveConversation): after every committed turn, and before a person's turn runs. */
  #saveSession(pendingInput?: string): void {
    saveConversation(this.#durable, this.agent.session, this.#logger, pendingInput);
  }

  /**
   * Runs a person's turn now, or after the turns already queued. Aborting `options.signal`
   * takes a queued turn off the queue (the promise rejects with `ABORTED`) and ends a running
   * one at once (it resolves with stop reason `aborted`). Background jobs live on either way.
   */
  submit(input: string, options: { signal?: AbortSignal } = {}): Promise<TurnResult> {
    return this.#turns.submit(input, options.signal);
  }

  /**
   * A job a person started (`/bg start`): role `user`, no wave, its own usage bucket. It runs
   * `options.agent`, else `background.defaultAgent`, else a fork of the parent.
   */
  /** `options`: the agent it runs as, a name, and the spawn's own spec (tools, model, systemPrompt, workspace). */
  startUserJob(task: string, label?: string, options: Pick<SpawnRequest, 'agent' | 'name' | 'tools' | 'model' | 'systemPrompt' | 'workspace'> = {}): JobHandle {
    return this.manager.spawn({ task, label: label ?? task.slice(0, 40), role: 'user', wave: null, ...options });
  }

  /** {@link startUserJob} for a caller that can wait (`/bg start`): a worktree job's refusal comes before anything is booked (spawnReady). */
  startUserJobReady(
    task: string,
    label?: string,
    options: Pick<SpawnRequest, 'agent' | 'name' | 'tools' | 'model' | 'systemPrompt' | 'workspace'> = {},
  ): Promise<JobHandle> {
    return this.manager.spawnReady({ task, label: label ?? task.slice(0, 40), role: 'user', wave: null, ...options });
  }

  cancel(id: string): JobHandle {
    return this.manager.cancel(id);
  }

  /**
   * Ends the turn that runs now (a person's or a follow-up) with stop reason `aborted`; queued
   * turns and background jobs are left alone. False when no turn runs.
   */
  cancelTurn(reason: unknown = 'cancelled by the user'): boolean {
    return this.#turns.cancelTurn(reason);
  }

  /** True while a turn runs or is queued, a follow-up is owed, or a job is pending. */
  get busy(): boolean {
    return this.#turns.busy || this.manager.pending > 0;
  }

  /** Resolves when the parent is idle, no follow-up is owed and no job is left. */
  onIdle(): Promise<void> {
    if (!this.busy) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  /** Ends the running turn, drops queued ones, and closes the manager (see its close()). */
  async close(options: { drain?: boolean; timeoutMs?: number } = {}): Promise<CloseReport> {
    // First: jobs the manager's close cancels must not start a follow-up turn.
    this.#turns.close();
    const report = await this.manager.close(options);
    this.#saveSession();
    closeDurableSession(this.#durable);
    this.#turns.forgetFollowUp();
    this.#checkIdle();
    return report;
  }

  /** Awaits a worktree job's worktree (spawnReady): a refusal is the tool's error. */
  #spawnFromAgent(request: SpawnToolRequest): Promise<JobHandle> {
    const { fullContext, ...fields } = request;
    return this.manager.spawnReady({
      ...fields,
      role: this.agent.role,
      wave: this.#currentTurn,
      ...(fullContext ? { parentSummary: this.agent.summary() } : {}),
      // The job's span is a child of the tool call's that spawned it (docs/observability.md).
      ...this.agent.traceparentFor(fields.parentToolId),
    });
  }

  /**
   * A job cancelled with its stopped `agent_<name>` call (Esc) was answered there: the call's tool
   * error told the model and the chat's notice the person. Marked delivered in that turn, so its
   * wave's end spends no follow-up model turn on it. One that ended otherwise meanwhile (its result
   * raced the cancel) is delivered like any result.
   */
  #answeredByStoppedCall(job: Readonly<JobRecord>): void {
    const turn = this.#stoppedCalls.get(job.id);
    if (turn === undefined) return;
    this.#stoppedCalls.delete(job.id);
    if (job.status !== 'cancelled') return;
    try {
      this.deliveries.markDelivered(job.id, turn);
    } catch (error) {
      if (!(error instanceof LedgerWriteError)) throw error;
      this.#logger?.error({ err: error, jobId: job.id }, "durable ledger: a cancelled call's job could not be marked delivered; it waits for a turn");
    }
  }

  /** `reason` is noted for the follow-up's cause (an early join has noted its own: `kind` only). */
  #requestFollowUp(reason: FollowUpReason | undefined, kind = reason?.kind): void {
    if (this.#turns.closed || this.manager.closed || this.deliveries.undeliveredCount === 0 || !kind) return;
    if (reason) this.#inputs.addReason(reason);
    this.emit('follow-up', { reason: kind, queued: !this.#turns.idle });
    this.#turns.oweFollowUp();
    void this.#turns.drain();
  }

  /** One turn of the queue (turn-queue.ts): undefined when it did not run (a follow-up left with nothing to deliver). */
  async #runTurn(next: QueuedTurn, signal: AbortSignal): Promise<TurnResult | undefined> {
    // A person's prompt is kept before its turn runs: a crash during the turn must not lose it.
    if (!next.followUp) this.#saveSession(next.input);
    // Delivered before the model is called (in the turn's number): results that ended before
    // this turn are in its context. A follow-up left with nothing to deliver does not run.
    this.#currentTurn = this.agent.session.turns + 1;
    const prepared = await this.#inputs.prepare(this.#currentTurn, next.followUp ? undefined : next.input);
    if (!prepared) return undefined;
    this.#deferred = prepared.deferred;
    this.#deliveredNow = [...prepared.delivered];
    this.#cancelledWithTurn = [];
    const result = await this.agent.runTurn(prepared.input, {
      followUp: next.followUp,
      signal,
      preamble: { text: prepared.preamble, apart: prepared.apart },
      ...(prepared.cause ? { cause: prepared.cause } : {}),
    });
    // Committed: from here on its deliveries are part of the kept conversation.
    this.#saveSession();
    // The spawning turn is over: its wave may now end (and fire its follow-up).
    this.deliveries.sealWave(result.turn);
    // Results the budget had no room for come in a follow-up of their own.
    if (this.#deferred > 0) this.#requestFollowUp({ kind: 'deferred' });
    this.emit('turn-result', { ...result, followUp: next.followUp, cancelledJobs: this.#cancelledWithTurn.splice(0) });
    return result;
  }

  /**
   * A turn that threw (the queue tells this before the turn's promise rejects) is reported (a
   * follow-up has nobody to reject to), its wave sealed (the jobs it spawned may still end it),
   * and the results delivered into it put back: the turn never committed, so the conversation
   * never kept them, and the next turn delivers them.
   */
  #turnFailed(turn: QueuedTurn, error: unknown): void {
    const failed = this.agent.session.turns + 1;
    const redelivered = this.deliveries.takeBackUncommitted(this.agent.session);
    this.#logger?.error({ err: error, turn: failed, followUp: turn.followUp, redelivered }, 'a parent turn threw; its results wait for the next turn');
    this.emit('turn-error', { turn: failed, followUp: turn.followUp, error: serializeError(error), redelivered });
    if (this.#currentTurn === failed) this.deliveries.sealWave(failed);
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
