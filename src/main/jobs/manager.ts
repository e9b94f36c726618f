import { assertModelConfigured, type ForkpoolConfig } from '../../shared/config.js';
import { JobError } from '../../shared/errors.js';
import type { RateGate } from '../../shared/model-call.js';
import { RequestGating } from '../limits/concurrency.js';
import type { RequestGates } from '../limits/request-gate.js';
import { TypedEmitter } from '../../shared/typed-emitter.js';
import type { Executor } from '../executors/executor.js';
import { DeliveryLedger, type JobEnding, type JobRecord } from '../ledger/ledger.js';
import type { LedgerHealth } from '../ledger/ledger-writes.js';
import { checkSandbox, type SandboxStatus } from '../../shared/tools/bwrap.js';
import { hiddenPathsOf, sqliteFiles } from '../../shared/tools/hidden.js';
import { PermissionStore } from '../limits/permissions.js';
import { createExecutor } from './executor-factory.js';
import { remoteExecutorOf } from '../remote/spawner.js';
import { ToolCatalog } from '../tools/catalog.js';
import { resolveToolModules } from '../tools/tool-modules.js';
import { firstTimeInProcess } from '../setup/once-per-process.js';
import { shutDown, type CloseHow } from './shutdown.js';
import { realScheduler } from '../executors/scheduler.js';
import { JobBudgets } from '../limits/budgets.js';
import type { PoolSnapshot } from '../limits/budget-pool.js';
import type { BudgetReport } from '../../shared/budget.js';
import type { JobStore } from '../ledger/ledger-store.js';
import { recoverJobs, type RecoveryReport } from './recovery.js';
import { JobEngine, type CompletionAnswer } from './engine.js';
import { mcpServersOf, mcpToolSources, withProtectedMcpFiles } from '../tools/mcp/index.js';
import { configuredSecrets } from '../../shared/tools/secrets.js';
import { hookRunnerFor, type HookRunner } from '../hooks/hook-runner.js';
import { reportFault, reportStorage } from './host-reports.js';
import { recoveredResumeState, resumeJob, type ResumeRequest } from './resumes.js';
import type { JobWorktree, WorktreeAction } from './worktrees.js';
import type { TranscriptPage } from './transcripts.js';
import { waitForJobs, type WaitOptions, type WaitOutcome } from './waits.js';

export type { JobScheduler, TimerTag } from '../executors/scheduler.js';
export type { JobWorktree, WorktreeAction, WorkspaceMode } from './worktrees.js';
export type { BackgroundManagerOptions, DeliveryPort, SpawnRequest, SpawnOptions, JobAlert, JobHandle, CloseReport, ManagerEvents } from './manager-api.js';
import type { BackgroundManagerOptions, CloseReport, DeliveryPort, JobHandle, ManagerEvents, SpawnOptions, SpawnRequest } from './manager-api.js';
export type { SteerOptions, SteerReceipt } from './manager-api.js';
export type { WaitMode, WaitOptions, WaitOutcome } from './waits.js';
import type { SteerOptions, SteerReceipt } from './manager-api.js';
import type { ApprovalDecision, ApprovalRecord, PendingApproval } from '../../shared/approvals.js';

/**
 * Owns background jobs for the life of a session, not a turn: the facade over its
 * {@link JobEngine} (engine.ts). Each job is a `Job` (job.ts: its whole life) in the job table;
 * the dispatcher is the queue behind the cap; the runner runs and stops attempts; nesting and
 * restarts add depth and re-runs. See README.md in this folder.
 */
export class BackgroundManager extends TypedEmitter<ManagerEvents> {
  readonly #ledger: DeliveryLedger;
  readonly #config: ForkpoolConfig;
  readonly #executor: Executor;
  /** BackgroundManagerOptions.remote: where `executor: "remote"` spawns run; `owned`: made here from a spawner, closed with the manager. */
  readonly #remote: { executor: Executor; owned: boolean } | undefined;
  readonly #ownsExecutor: boolean;
  readonly #engine: JobEngine;
  /** The 429 gate of fixed mode, or adaptive concurrency's per-endpoint gates (concurrency.ts). */
  readonly #gating: RequestGating;
  /** Per-job limits, the session pool's leases, the wall-clock stop (see budgets.ts). */
  readonly #budgets: JobBudgets;
  /** The durable ledger's scope, when there is one (see recovery.ts, docs/durability.md). */
  readonly #store: JobStore | undefined;
  #closing: Promise<CloseReport> | undefined;
  /**
   * Set as close() begins, before its first step: a queued job it cancels ends at once, and that
   * ending must not launch the queue's others (2,000 launches, on their way to Redis, in a close).
   */
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

  constructor(options: BackgroundManagerOptions) {
    const logger = options.logger;
    super(logger ? (error, event) => logger.warn({ err: error, event }, 'background event listener threw') : undefined);
    // One owner per durable scope (LEDGER_BUSY), before anything starts: released when close() is done,
    // or here when the constructor throws (a sandbox, model or ledger error), with the executor it owns.
    options.store?.claim();
    let executor: Executor | undefined;
    try {
      // Decided once here, not per thread; an explicit "bwrap" that does not work is a ConfigError.
      this.sandbox = checkSandbox(options.config);
      // Resolved here, on the main thread, and carried to every job in its spec's config.
      this.hiddenPaths = hiddenPathsOf(options.config, options.store?.path === undefined ? [] : sqliteFiles(options.store.path));
      // Tool modules by absolute path (a config built in code names them from the working
      // directory); loaded here once, so one that fails is a config error now, not in a job.
      const config = (this.#config = {
        ...withProtectedMcpFiles(resolveToolModules(options.config, process.cwd()), process.cwd()),
        sandbox: this.sandbox.mode,
        hiddenPaths: [...this.hiddenPaths],
      });
      // The config's MCP servers (top level and per agent) are one more tool source each, on one hub.
      const mcp = mcpToolSources(mcpServersOf(config), { logger, secrets: configuredSecrets(config), outputMaxChars: config.toolLimits.outputMaxChars });
      this.tools = new ToolCatalog(config, options.tools, [...(options.toolSources ?? []), ...mcp]);
      this.tools.checkConfig(config);
      this.hooks = hookRunnerFor(config, options.hooks, options.store?.scope, logger);
      this.#gating = new RequestGating(config);
      // Once per process, not per manager (see once-per-process.ts); `sandbox.notice` still says it to whoever asks.
      if (this.sandbox.notice && firstTimeInProcess(this.sandbox.notice)) {
        if (logger) logger.warn(this.sandbox.notice);
        else process.emitWarning(this.sandbox.notice, { code: 'FORKPOOL_NO_SANDBOX' });
      }
      this.#store = options.store;
      const ledger = (this.#ledger = new DeliveryLedger(
        options.config.background.retention,
        options.store,
        reportStorage(logger, (event, ...args) => this.emit(event, ...args)),
        (id) => this.#engine.forget(id),
        (id) => this.#engine.transcripts.drop(id),
      ));
      this.#budgets = new JobBudgets(config);
      this.#ownsExecutor = options.closeExecutor ?? options.executor === undefined;
      // Its own executor runs model calls: no endpoint configured is an error now, not in every job.
      if (options.executor === undefined) assertModelConfigured(options.config);
      this.#executor = executor = options.executor ?? createExecutor(options.config, logger, options.config.executor, undefined, options.store?.scope);
      this.#remote = remoteExecutorOf(options.remote);
      this.#engine = new JobEngine({
        config,
        tools: this.tools,
        hooks: this.hooks,
        ledger,
        store: options.store,
        executor,
        ...(this.#remote ? { remote: this.#remote.executor } : {}),
        scheduler: options.scheduler ?? realScheduler,
        permissions: options.permissions ?? new PermissionStore(options.config.grantedTools),
        gating: this.#gating,
        budgets: this.#budgets,
        logger,
        emit: (event, ...args) => this.emit(event, ...args),
        closed: () => this.closed,
        reportFault: (what, error) => reportFault(logger, what, error),
      });
      // Reads the durable ledger back and re-queues what must run again; launching waits for the pump's microtask.
      const { table, dispatcher, waves, restarts, conversations, dedup } = this.#engine;
      const resumeStateOf = (record: Readonly<JobRecord>) => recoveredResumeState(record, conversations);
      // MCP connections start now, in the background: a source that fails is reported, its tools are missing.
      void this.tools.start().catch((error: unknown) => reportFault(logger, 'starting a tool source', error));
      const { worktrees, approvals, sleeps } = this.#engine;
      if (options.store)
        this.recovery = recoverJobs(
          { config, ledger, table, dispatcher, waves, restarts, resumeStateOf, dedup, worktrees, approvals, sleeps },
          options.store.load(),
        );
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

  /** Names this manager's jobs on an executor it may share (see JobTask.owner): its ledger scope, if it has one. */
  get owner(): string | undefined {
    return this.#engine.owner;
  }

  get executor(): Executor {
    return this.#executor;
  }

  /** The executor for `executor: "remote"` spawns (BackgroundManagerOptions.remote), if any; its `refusal` when it refuses them all. */
  get remoteExecutor(): (Executor & { readonly refusal?: string }) | undefined {
    return this.#remote?.executor;
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
    return this.#budgets.pool();
  }

  /** A job's limits, spent and remaining: at its end from its record, while it runs from what it has reported. */
  budgetOf(id: string): BudgetReport | undefined {
    return this.#budgets.reportNow(this.#ledger.get(id), this.#engine.table.get(id)?.attempt);
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
    return this.#engine.book(request, options, undefined);
  }

  /**
   * {@link spawn}, resolved once the job can run: a `workspace: "worktree"` spawn's repository is
   * checked first (a refusal, `WORKTREE_UNAVAILABLE` "nothing was started", books nothing), then
   * its worktree made, off the main thread. A spawn that needs no git throws at once what spawn
   * throws; otherwise the promise rejects with it, or with `WORKTREE_UNAVAILABLE` ("nothing was
   * run") when making the worktree failed after all (the job has then ended `failed`).
   */
  spawnReady(request: SpawnRequest, options: SpawnOptions = {}): Promise<JobHandle> {
    const booked = (): Promise<JobHandle> => {
      const handle = this.spawn(request, options);
      return this.#engine.ready(handle.id).then(() => handle);
    };
    if (this.closed) throw new JobError('MANAGER_CLOSED', '-', 'the background manager is closed; no new jobs are accepted');
    // Awaited only when there is git to wait for: the spawns of one batch are still booked together.
    const check = this.#engine.checkWorktreeFor(request);
    return check ? check.then(booked) : booked();
  }

  /** Resolves with the job's final record once it has ended (at once if it already has). */
  result(id: string): Promise<Readonly<JobRecord>> {
    return this.#engine.table.get(id)?.result() ?? Promise.reject(unknownJob(id));
  }

  /**
   * Waits until the jobs named (ids or names) have ended — every one (`mode: "all"`, the
   * default) or the first (`"any"`) — or `timeoutMs` passes, or `signal` aborts (rejects
   * `ABORTED`). Resolves with what ended and what still runs (see waits.ts); delivers nothing.
   * Rejects `JOB_UNKNOWN` or `TOOL_ARGUMENTS_INVALID` before anything waits.
   */
  wait(jobs: readonly string[], options: WaitOptions): Promise<WaitOutcome> {
    const table = this.#engine.table;
    return waitForJobs(
      { idOf: (name) => table.find(name)?.id, get: (id) => this.#ledger.get(id), onDone: (listener) => this.on('done', listener) },
      jobs,
      options,
    );
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
    return this.#engine.table.find(idOrName)?.record;
  }

  /**
   * One page of a job's transcript (by id or name): its steps from `offset` (among the kept
   * ones), at most `limit`. Undefined for a job this manager does not know (never, or forgotten).
   */
  transcript(idOrName: string, page: { offset?: number; limit?: number } = {}): TranscriptPage | undefined {
    const record = this.find(idOrName);
    return record && this.#engine.transcripts.read(record.id, page.offset, page.limit);
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
    return this.#stop(this.#engine.table.find(idOrName)?.id ?? idOrName, 'cancel');
  }

  /**
   * Sends a message to a live job (see docs/agents.md "Steering a running job"): a running one
   * gets it before its next model call, or with `interrupt` at once (its model call in flight
   * is cancelled, not failed); a queued one as it starts, one waiting for its children when it
   * resumes. Recorded on its record (`messages`) and as a `message` event. Throws `JOB_UNKNOWN`,
   * `JOB_ENDED` (naming its state), `TOOL_ARGUMENTS_INVALID` (an empty or too long message) or
   * `QUEUE_FULL` (more than 100 messages to one job).
   */
  send(idOrName: string, text: string, options: SteerOptions = {}): SteerReceipt {
    const job = this.#engine.table.find(idOrName);
    if (!job) throw new JobError('JOB_UNKNOWN', idOrName, `no background job with id or name "${idOrName}"`);
    return this.#engine.steering.send(job, text, options);
  }

  /**
   * A speculative job was referred to (docs/delivery.md "Speculative jobs"): it is an ordinary
   * job from now on, never cancelled as a guess, and delivered as usual. False when it is no
   * pending guess (never speculative, kept already, or dropped). Throws `JOB_UNKNOWN`.
   */
  keepSpeculative(idOrName: string): boolean {
    return this.#engine.speculation.keep(this.#found(idOrName));
  }

  /**
   * Drops a pending guess: cancelled (its error reads "cancelled (`why`)"), or, if it has ended,
   * its result set aside; never delivered (its record: `speculative: "dropped"`, delivered in
   * turn 0). False when it is no pending guess. Throws `JOB_UNKNOWN`.
   */
  dropSpeculative(idOrName: string, why = 'speculative, dropped'): boolean {
    return this.#engine.speculation.drop(this.#found(idOrName), why);
  }

  /**
   * Runs a job again with the same spec under the same id (and name): a running job is stopped
   * and re-queued, an ended one goes back to the queue and its undelivered result is superseded
   * (never delivered). A queued job is left as it is. Throws `JOB_UNKNOWN`, `NAME_TAKEN` (its
   * name went to another live job meanwhile) or `MANAGER_CLOSED`.
   */
  restart(idOrName: string, reason?: string): JobHandle {
    if (this.closed) throw new JobError('MANAGER_CLOSED', '-', 'the background manager is closed; no job can be restarted');
    const job = this.#engine.table.find(idOrName);
    if (!job) throw new JobError('JOB_UNKNOWN', idOrName, `no background job with id or name "${idOrName}"`);
    // Asked for again by name: no longer a guess (a dropped one runs again as an ordinary job).
    if (job.speculation !== undefined) {
      job.speculation = 'kept';
      this.#ledger.markSpeculation(job.id, 'kept');
    }
    // Its worktree was never made: it cannot run where it should, and never runs in the workspace instead.
    if (this.#engine.worktrees.unmade(job.id) && job.isOver)
      throw new JobError('WORKTREE_UNAVAILABLE', job.id, `job ${job.id} never got its worktree, so it cannot run again there; spawn it again`);
    const handle = this.#engine.restarts.restart(job, reason);
    // It runs again in its worktree: no merge or drop until that run ended and was committed.
    this.#engine.worktrees.reopen(job.id);
    return handle;
  }

  /**
   * Resumes an ended job: a NEW job (its own id, `resumedFrom` the old one; own budget, own
   * delivery, once) that continues the old job's kept conversation with `message` as the next
   * user message (see resumes.ts, docs/delivery.md "Resuming a finished job"). Throws
   * `JOB_UNKNOWN`, `RESUME_UNAVAILABLE` (not ended, or no conversation kept),
   * `TOOL_ARGUMENTS_INVALID` (the message), `MANAGER_CLOSED`, or any spawn's refusals.
   */
  resume(idOrName: string, message: string, request: ResumeRequest = {}, options: SpawnOptions = {}): JobHandle {
    const engine = this.#engine;
    return resumeJob(
      {
        table: engine.table,
        conversations: engine.conversations,
        worktree: (id) => engine.worktrees.get(id),
        closed: () => this.closed,
        book: (r, o, resume) => engine.book(r, o, undefined, resume),
      },
      idOrName,
      message,
      request,
      options,
    );
  }

  /**
   * Records a completion reported from outside this process (a remote executor) for attempt
   * `attempt` of job `id` — its record's `attempts` when that run started — and ends the job
   * as any ending does. Only a running job's current attempt is accepted: an unknown job, a
   * duplicate (it has ended), a job no attempt of which runs (queued, waiting for its children)
   * and a stale attempt are refused, with the reason and a typed error (`JOB_UNKNOWN`,
   * `ATTEMPT_NOT_RUNNING`), and change nothing. Never throws. If this process runs that attempt
   * itself, its thread is stopped: the reported ending wins.
   */
  completeAttempt(id: string, attempt: number, ending: JobEnding): CompletionAnswer {
    return this.#engine.completeAttempt(id, attempt, ending);
  }

  /** A `workspace: "worktree"` job's worktree: branch, base, path, state and (once ended) the files it changed. */
  worktree(idOrName: string): Readonly<JobWorktree> | undefined {
    return this.#engine.worktrees.get(this.#engine.table.find(idOrName)?.id ?? idOrName);
  }

  /**
   * Merges, keeps or drops an ended job's worktree (worktrees.ts): a merge conflict is aborted,
   * nothing half-merged. Resolves with what was done (git runs in child processes, awaited, after
   * any commit still under way); rejects with `WORKTREE_ACTION_FAILED` or `JOB_UNKNOWN`.
   */
  async worktreeAction(idOrName: string, action: WorktreeAction): Promise<string> {
    const job = this.#engine.table.find(idOrName);
    if (!job) throw unknownJob(idOrName);
    return this.#engine.worktrees.act(job.id, action);
  }

  /** Every gated call of a job that waits for an answer (`approvals: "ask"`), oldest first. */
  approvals(): PendingApproval[] {
    return this.#engine.approvals.list();
  }

  /**
   * Answers a job's waiting call (`callId` undefined: its oldest). `allow` runs that exact call
   * once and the job goes on; `deny` gives the model a tool error with `reason`; `remember`
   * grants the tool to the job (`true`, `'job'`) or to the session (`'session'`) from now on.
   * Throws `APPROVAL_UNKNOWN` (no such job, or it waits for no such call) or `APPROVAL_INVALID`.
   */
  approve(jobRef: string, callId: string | undefined, decision: ApprovalDecision): ApprovalRecord {
    return this.#engine.approvals.approve(jobRef, callId, decision);
  }

  /** Queued, handed to the executor, or waiting for its children. */
  get pending(): number {
    return this.#engine.dispatcher.pending;
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
    for (const job of this.#engine.dispatcher.live()) {
      if (!job.attempt) continue;
      job.attempt.stopRequest ??= 'close';
      job.attempt.hardStop();
    }
    return closing;
  }

  #close(how: CloseHow, timeoutMs: number, keepUnfinished = false): Promise<CloseReport> {
    this.#closeBegun = true;
    // Durable: the jobs this close stops stay unfinished in the ledger for the next process (see keepUnfinishedOnClose).
    if (how !== 'drain' || keepUnfinished) this.#ledger.keepUnfinishedOnClose();
    const report = shutDown(how, timeoutMs, {
      waiting: () => this.#engine.dispatcher.waiting().map((job) => job.id),
      live: () => this.#engine.dispatcher.live().flatMap((job) => job.attempt ?? []),
      stop: (id) => void this.#stop(id, 'close'),
      onIdle: () => this.onIdle(),
      closeExecutor: async () => {
        this.#gating.close();
        this.#engine.waves.dispose();
        // A worktree being made for a job this close stopped is removed again before close() resolves.
        await this.#engine.worktrees.prepared();
        // After the jobs: a host call still running was aborted with its job.
        await Promise.all([
          this.tools.close(),
          this.#ownsExecutor ? this.#executor.close() : Promise.resolve(),
          this.#remote?.owned ? this.#remote.executor.close() : Promise.resolve(),
        ]);
      },
    });
    return report.finally(() => {
      // Last: what a failing disk kept in memory is tried once more, so a clean close leaves the disk as memory is.
      this.#ledger.closeWrites();
      this.#store?.release();
      // A job a close abandoned still ends its span, marked so (a durable one runs again later, in a new span).
      this.#engine.traces.closeAll();
    });
  }

  #found(idOrName: string) {
    const job = this.#engine.table.find(idOrName);
    if (!job) throw unknownJob(idOrName);
    return job;
  }

  #stop(id: string, reason: 'cancel' | 'close'): JobHandle {
    const job = this.#engine.table.get(id);
    if (!job) throw unknownJob(id);
    this.#engine.runner.stop(job, reason);
    return { id, label: job.record.label, state: this.#ledger.get(id)?.state ?? 'ended' };
  }
}

function unknownJob(id: string): JobError {
  return new JobError('JOB_UNKNOWN', id, `no background job with id "${id}"`);
}
