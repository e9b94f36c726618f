import type { ForkpoolConfig } from '../../shared/config.js';
import { JobError } from '../../shared/errors.js';
import type { RateGate } from '../../shared/model-call.js';
import { RequestGating } from '../limits/concurrency.js';
import type { RequestGates } from '../limits/request-gate.js';
import { TypedEmitter } from '../../shared/typed-emitter.js';
import type { Executor } from '../executors/executor.js';
import { DeliveryLedger, type JobRecord } from '../ledger/ledger.js';
import type { LedgerHealth } from '../ledger/ledger-writes.js';
import { PermissionStore } from '../limits/permissions.js';
import type { ToolCatalog } from '../tools/catalog.js';
import type { SandboxStatus } from '../../shared/tools/bwrap.js';
import { setUpManager, type ManagerSetup } from './manager-setup.js';
import type { CloseHow } from './shutdown.js';
import { realScheduler } from '../executors/scheduler.js';
import { JobBudgets } from '../limits/budgets.js';
import type { PoolSnapshot } from '../limits/budget-pool.js';
import type { BudgetReport } from '../../shared/budget.js';
import type { JobStore } from '../ledger/ledger-store.js';
import type { RecoveryReport } from './recovery.js';
import { JobEngine } from './engine.js';
import { ParentControls } from './parent-controls.js';
import type { HookRunner } from '../hooks/hook-runner.js';
import { reportFault, reportStorage } from './host-reports.js';
import type { TranscriptPage } from './transcripts.js';

export type { JobScheduler, TimerTag } from '../executors/scheduler.js';
export type { JobWorktree, WorktreeAction, WorkspaceMode } from './worktrees.js';
export type { BackgroundManagerOptions, DeliveryPort, SpawnRequest, SpawnOptions, JobAlert, JobHandle, CloseReport, ManagerEvents } from './manager-api.js';
export type { SteerOptions, SteerReceipt } from './manager-api.js';
import type { BackgroundManagerOptions, CloseReport, DeliveryPort, JobHandle, ManagerEvents, SpawnOptions, SpawnRequest } from './manager-api.js';
export type { WaitMode, WaitOptions, WaitOutcome } from './waits.js';
export { ParentControls } from './parent-controls.js';
import type { ApprovalDecision, ApprovalRecord, PendingApproval } from '../../shared/approvals.js';

/** The engine behind each manager, for {@link engineOf}. */
const engines = new WeakMap<BackgroundManager, JobEngine>();

/**
 * Owns background jobs for the life of a session, not a turn: the embedder's verbs (spawn,
 * cancel, restart, read, approve, close) over its {@link JobEngine} (engine.ts). What a parent
 * does with its jobs besides (send, wait, resume, worktrees, speculation) is its
 * {@link parentControls}. Each job is a `Job` (job.ts: its whole life). See README.md in this folder.
 */
export class BackgroundManager extends TypedEmitter<ManagerEvents> {
  readonly #ledger: DeliveryLedger;
  readonly #config: ForkpoolConfig;
  /** Where its jobs run, and `executor: "remote"` spawns (see ManagerSetup). */
  readonly #executors: Pick<ManagerSetup, 'executor' | 'remote'>;
  readonly #engine: JobEngine;
  /** The 429 gate of fixed mode, or adaptive concurrency's per-endpoint gates (concurrency.ts). */
  readonly #gating: RequestGating;
  /** The durable ledger's scope, when there is one (see recovery.ts, docs/durability.md). */
  readonly #store: JobStore | undefined;
  #closing: Promise<CloseReport> | undefined;
  /** Set as close() begins: a queued job it cancels ends at once, and must not launch the queue's others. */
  #closeBegun = false;
  /** How bash runs in this manager's jobs, decided once (see checkSandbox). */
  readonly sandbox: SandboxStatus;
  /** Absolute paths no tool of its jobs opens (config files, ledger files, `hiddenPaths`; see tools/hidden.ts). */
  readonly hiddenPaths: readonly string[];
  /** What restart recovery found in the durable ledger; undefined without one. */
  readonly recovery: RecoveryReport | undefined;
  /** Its tool catalog: built-ins, host tools, tool modules' and tool sources' tools (`forkpool tools` lists it). */
  readonly tools: ToolCatalog;
  /** Its hooks (config `hooks` and the library's functions): its jobs' and its session's (docs/tools.md "Hooks"). */
  readonly hooks: HookRunner;
  /** What a parent does with its jobs besides spawning and cancelling them: send, wait, resume, worktrees, speculation. */
  readonly parentControls: ParentControls;

  constructor(options: BackgroundManagerOptions) {
    const logger = options.logger;
    super(logger ? (error, event) => logger.warn({ err: error, event }, 'background event listener threw') : undefined);
    // One owner per durable scope (LEDGER_BUSY), before anything starts: released when close() is done,
    // or here when the constructor throws (a sandbox, model or ledger error), with the executor it owns.
    options.store?.claim();
    let executor: Executor | undefined;
    try {
      const setup = (this.#executors = setUpManager(options));
      ({ sandbox: this.sandbox, hiddenPaths: this.hiddenPaths, tools: this.tools, hooks: this.hooks } = setup);
      executor = setup.executor.executor;
      const config = (this.#config = setup.config);
      this.#gating = new RequestGating(config);
      this.#store = options.store;
      const ledger = (this.#ledger = new DeliveryLedger(
        options.config.background.retention,
        options.store,
        reportStorage(logger, (event, ...args) => this.emit(event, ...args)),
        (id) => this.#engine.forget(id),
        (id) => this.#engine.resultDropped(id),
      ));
      this.#engine = new JobEngine({
        ...setup,
        ledger,
        store: options.store,
        scheduler: options.scheduler ?? realScheduler,
        permissions: options.permissions ?? new PermissionStore(options.config.grantedTools),
        gating: this.#gating,
        // Per-job limits, the session pool's leases, the wall-clock stop (see budgets.ts).
        budgets: new JobBudgets(config),
        logger,
        emit: (event, ...args) => this.emit(event, ...args),
        closed: () => this.closed,
        reportFault: (what, error) => reportFault(logger, what, error),
      });
      engines.set(this, this.#engine);
      this.parentControls = new ParentControls(this.#engine, { get: (id) => ledger.get(id), onDone: (listener) => this.on('done', listener) });
      // MCP connections start now, in the background: a source that fails is reported, its tools are missing.
      void this.tools.start().catch((error: unknown) => reportFault(logger, 'starting a tool source', error));
      // Reads the durable ledger back and re-queues what must run again; launching waits for the pump's microtask.
      if (options.store) this.recovery = this.#engine.recover(options.store.load());
    } catch (error) {
      // A given executor with closeExecutor is this manager's to close, whether or not it got this far.
      const owned = executor ?? options.executor;
      if ((options.closeExecutor ?? options.executor === undefined) && owned) void owned.close().catch(() => {});
      options.store?.release();
      throw error;
    }
  }

  /** For {@link Deliveries} (src/main/delivery/deliveries.ts): the ledger's hand-over side and the waves' end. */
  get deliveryPort(): DeliveryPort {
    return this.#engine.deliveryPort();
  }

  get executor(): Executor {
    return this.#executors.executor.executor;
  }

  /** The executor for `executor: "remote"` spawns (BackgroundManagerOptions.remote), if any; its `refusal` when it refuses them all. */
  get remoteExecutor(): (Executor & { readonly refusal?: string }) | undefined {
    return this.#executors.remote?.executor;
  }

  /** The gate the parent agent's model requests should go through: with adaptive concurrency, ahead of every job's. */
  parentRateGate(): RateGate {
    return this.#gating.parentGate();
  }

  /** Adaptive concurrency's per-endpoint gates (limits, events); undefined in fixed mode. */
  get requestGates(): RequestGates | undefined {
    return this.#gating.gates;
  }

  get closed(): boolean {
    return this.#closeBegun;
  }

  /** The session's pooled budget now (remaining, leased, spent), or undefined without `sessionBudget`. */
  budgetPool(): PoolSnapshot | undefined {
    return this.#engine.budgetPool();
  }

  /** A job's limits, spent and remaining: at its end from its record, while it runs from what it has reported. */
  budgetOf(id: string): BudgetReport | undefined {
    return this.#engine.budgetOf(id);
  }

  /**
   * The durable ledger's side: ok, or degraded since a write failed (what failed, since when,
   * how many records wait to be written again). Always ok without a durable ledger.
   */
  ledgerHealth(): LedgerHealth {
    return this.#ledger.health();
  }

  /**
   * Queues a job and returns at once. Its cancel handle exists from now on, and aborting
   * `options.signal` cancels it. Throws `MANAGER_CLOSED`, `QUEUE_FULL`, `ABORTED` (the signal
   * was already aborted) or `TOOL_ARGUMENTS_INVALID` (a clear message the model can read).
   */
  spawn(request: SpawnRequest, options: SpawnOptions = {}): JobHandle {
    return this.#engine.spawn(request, options);
  }

  /**
   * {@link spawn}, resolved once the job can run: a `workspace: "worktree"` spawn's repository is
   * checked first (a refusal, `WORKTREE_UNAVAILABLE` "nothing was started", books nothing), then
   * its worktree made, off the main thread (a failure: `WORKTREE_UNAVAILABLE`, "nothing was run").
   */
  spawnReady(request: SpawnRequest, options: SpawnOptions = {}): Promise<JobHandle> {
    return this.#engine.spawnReady(request, options);
  }

  /** Resolves with the job's final record once it has ended (at once if it already has). */
  result(id: string): Promise<Readonly<JobRecord>> {
    return this.#engine.find(id)?.result() ?? Promise.reject(new JobError('JOB_UNKNOWN', id, `no background job with id "${id}"`));
  }

  /** A cheap snapshot of every job: records are frozen values, replaced (not changed) as jobs move. */
  jobs(): Readonly<JobRecord>[] {
    return this.#ledger.snapshot();
  }

  get(id: string): Readonly<JobRecord> | undefined {
    return this.#ledger.get(id);
  }

  /** A job by id or by name (the live holder of a name first, else the newest job that had it). */
  find(idOrName: string): Readonly<JobRecord> | undefined {
    return this.#engine.find(idOrName)?.record;
  }

  /**
   * One page of a job's transcript (by id or name): its steps from `offset` (among the kept
   * ones), at most `limit`. Undefined for a job this manager does not know (never, or forgotten).
   */
  transcript(idOrName: string, page: { offset?: number; limit?: number } = {}): TranscriptPage | undefined {
    return this.#engine.transcript(idOrName, page.offset, page.limit);
  }

  /** How many jobs are in a state. */
  count(state: JobRecord['state']): number {
    return this.#ledger.count(state);
  }

  /**
   * Cancels a job: at once while queued; while running, cooperatively over its port and after
   * the grace period by stopping its thread. Idempotent; an unknown id throws `JOB_UNKNOWN`.
   */
  cancel(idOrName: string): JobHandle {
    return this.#engine.cancel(idOrName);
  }

  /**
   * Runs a job again with the same spec under the same id (and name): a running job is stopped
   * and re-queued, an ended one goes back to the queue and its undelivered result is superseded
   * (never delivered). One asleep, paused for approvals or waiting for its children drops what it
   * waits on (its pending calls answered as void, `approval-resolved`) and is re-queued to run from
   * its task; its children go on. A queued job is left as it is. Throws `JOB_UNKNOWN`, `NAME_TAKEN` (its
   * name went to another live job meanwhile) or `MANAGER_CLOSED`.
   */
  restart(idOrName: string, reason?: string): JobHandle {
    return this.#engine.restart(idOrName, reason);
  }

  /** Every gated call of a job that waits for an answer (`approvals: "ask"`), oldest first. */
  approvals(): PendingApproval[] {
    return this.#engine.pendingApprovals();
  }

  /**
   * Answers a job's waiting call (`callId` undefined: its oldest). `allow` runs that exact call
   * once and the job goes on; `deny` gives the model a tool error with `reason`; `remember`
   * grants the tool to the job (`true`, `'job'`) or to the session (`'session'`) from now on.
   * Throws `APPROVAL_UNKNOWN` (no such job, or it waits for no such call) or `APPROVAL_INVALID`.
   */
  approve(jobRef: string, callId: string | undefined, decision: ApprovalDecision): ApprovalRecord {
    return this.#engine.approve(jobRef, callId, decision);
  }

  /** Queued, handed to the executor, or waiting for its children. */
  get pending(): number {
    return this.#engine.pending;
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
   * `keepUnfinished` (with a durable store): the queued jobs a drain cancels stay unfinished in
   * the ledger, for the next process to run (as a cancelling close always leaves them).
   */
  close(options: { drain?: boolean; timeoutMs?: number; keepUnfinished?: boolean } = {}): Promise<CloseReport> {
    this.#closing ??= this.#close(
      options.drain ? 'drain' : 'cancel',
      options.timeoutMs ?? this.#config.background.closeTimeoutMs,
      options.keepUnfinished === true,
    );
    return this.#closing;
  }

  /** Hard-stops every job now (no cooperative cancel, no grace), then closes as {@link close} does. */
  destroy(): Promise<CloseReport> {
    const closing = (this.#closing ??= this.#close('hard', 0));
    // A close already under way with a longer bound is cut short here.
    this.#engine.hardStopAll();
    return closing;
  }

  #close(how: CloseHow, timeoutMs: number, keepUnfinished = false): Promise<CloseReport> {
    this.#closeBegun = true;
    // Durable: the jobs this close stops stay unfinished in the ledger for the next process (see keepUnfinishedOnClose).
    if (how !== 'drain' || keepUnfinished) this.#ledger.keepUnfinishedOnClose();
    return this.#engine.shutDown(how, timeoutMs, () => this.onIdle()).finally(() => this.#store?.release());
  }
}

/** Its engine, outside the package's API (src/index.ts does not export it): `completeAttempt` (engine.ts) is used by tests only. */
export function engineOf(manager: BackgroundManager): JobEngine {
  return engines.get(manager) as JobEngine;
}
