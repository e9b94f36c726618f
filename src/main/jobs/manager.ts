import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { assertModelConfigured, type ForkpoolConfig } from '../../shared/config.js';
import { errorForRecord } from '../../shared/error-detail.js';
import { AbortError, JobError, serializeError } from '../../shared/errors.js';
import { JobNames } from './job-names.js';
import type { JobTree } from './job-tree.js';
import { Nesting, lastAssistantText } from './nesting.js';
import { Restarts } from './restarts.js';
import type { AlertSeverity, JobSpec } from '../../shared/protocol.js';
import type { RateGate } from '../../shared/model-call.js';
import { RequestGating } from '../limits/concurrency.js';
import type { RequestGates } from '../limits/request-gate.js';
import { TypedEmitter } from '../../shared/typed-emitter.js';
import type { Executor } from '../executors/executor.js';
import { DeliveryLedger, type CompletionRefusal, type JobEnding, type JobRecord } from '../ledger/ledger.js';
import type { LedgerHealth, StorageReport } from '../ledger/ledger-writes.js';
import { checkSandbox, type SandboxStatus } from '../../shared/tools/bwrap.js';
import { hiddenPathsOf, sqliteFiles } from '../../shared/tools/hidden.js';
import { PermissionStore } from '../limits/permissions.js';
import { createExecutor } from './executor-factory.js';
import { Attempt, type AttemptEnd } from '../executors/attempt.js';
import { endingFromLostThread, endingFromOutcome, endingFromProtocol, type StopRequest } from './job-endings.js';
import { shutDown, type CloseHow } from './shutdown.js';
import { realScheduler, type JobScheduler } from '../executors/scheduler.js';
import { WaveJoins } from './joins.js';
import { JobBudgets } from '../limits/budgets.js';
import type { PoolSnapshot } from '../limits/budget-pool.js';
import type { BudgetReport } from '../../shared/budget.js';
import { SpawnDedup, type DedupMatch } from './dedup.js';
import type { JobStore } from '../ledger/ledger-store.js';
import { recoverJobs, takeBackDeliveries, type RecoveryReport } from './recovery.js';

export type { JobScheduler, TimerTag } from '../executors/scheduler.js';
export type { BackgroundManagerOptions, SpawnRequest, SpawnOptions, JobAlert, JobHandle, CloseReport, ManagerEvents } from './manager-api.js';
import { admitSpawn, isWellFormedSpawn, type BackgroundManagerOptions, type CloseReport, type JobAlert, type JobHandle, type ManagerEvents, type SpawnOptions, type SpawnRequest } from './manager-api.js';

/**
 * Owns background jobs for the life of a session, not a turn: a FIFO queue behind a
 * concurrency cap, a timeout that starts when a worker picks the job up, two-phase cancel,
 * waves, and the ledger every view reads from. Each launch of a job is an {@link Attempt}.
 */
export class BackgroundManager extends TypedEmitter<ManagerEvents> {
  readonly #ledger: DeliveryLedger;
  readonly #config: ForkpoolConfig;
  readonly #executor: Executor;
  readonly #ownsExecutor: boolean;
  readonly #permissions: PermissionStore;
  readonly #logger: Logger | undefined;
  readonly #scheduler: JobScheduler;
  readonly #specs = new Map<string, JobSpec>();
  /** Times each job was handed to the executor; bounds re-queues even before a `started`. */
  readonly #launches = new Map<string, number>();
  readonly #queue: string[] = [];
  readonly #live = new Map<string, Attempt>();
  readonly #waves: WaveJoins;
  readonly #names = new JobNames();
  /** Depth above 1: who spawned whom, suspended parents, children's results (see nesting.ts). */
  readonly #nesting: Nesting;
  readonly #tree: JobTree;
  readonly #restarts: Restarts;
  readonly #dedup: SpawnDedup;
  /** Alerts each live job has sent (bounded by `maxAlertsPerJob`; a restart does not reset it). */
  readonly #alertCounts = new Map<string, number>();
  /** The 429 gate of fixed mode, or adaptive concurrency's per-endpoint gates (concurrency.ts). */
  readonly #gating: RequestGating;
  /** Callers of result(id) waiting for a job to end. */
  readonly #waiters = new Map<string, Array<(record: Readonly<JobRecord>) => void>>();
  /** Removes a spawn's AbortSignal listener once its job has ended. */
  readonly #signalCleanups = new Map<string, () => void>();
  /** How bash runs in this manager's jobs, decided once (see checkSandbox). */
  readonly sandbox: SandboxStatus;
  /** Absolute paths no tool of its jobs opens (config files, ledger files, `hiddenPaths`; see tools/hidden.ts). */
  readonly hiddenPaths: readonly string[];
  #closing: Promise<CloseReport> | undefined;
  #pumpScheduled = false;
  /** Tags this manager's child processes apart from any other forkpool's on the machine. */
  readonly #processToken = randomUUID().slice(0, 8);
  /** Per-job limits, the session pool's leases, the wall-clock stop (see budgets.ts). */
  readonly #budgets: JobBudgets;
  /** The durable ledger's scope, when there is one (see recovery.ts, README "Durability"). */
  readonly #store: JobStore | undefined;
  /** What restart recovery found in the durable ledger; undefined without one. */
  readonly recovery: RecoveryReport | undefined;

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
      this.#config = { ...options.config, sandbox: this.sandbox.mode, hiddenPaths: [...this.hiddenPaths] };
      this.#gating = new RequestGating(this.#config);
      if (this.sandbox.notice) logger ? logger.warn(this.sandbox.notice) : process.emitWarning(this.sandbox.notice, { code: 'FORKPOOL_NO_SANDBOX' });
      this.#store = options.store;
      this.#ledger = new DeliveryLedger(options.config.background.retention, options.store, (report) => this.#onStorage(report));
      this.#budgets = new JobBudgets(this.#config);
      this.#nesting = new Nesting({
        config: this.#config,
        ledger: this.#ledger,
        specs: this.#specs,
        live: this.#live,
        book: (request, spawnOptions, nesting) => this.#book(request, spawnOptions, nesting),
        stop: (id, reason) => void this.#stop(id, reason),
        requeueFirst: (id) => {
          this.#launches.delete(id);
          this.#queue.unshift(id);
          this.#schedulePump();
        },
        pump: () => this.#pump(),
      });
      this.#tree = this.#nesting.tree;
      this.#dedup = new SpawnDedup(this.#config);
      this.#restarts = new Restarts({
        ledger: this.#ledger,
        names: this.#names,
        specs: this.#specs,
        live: this.#live,
        enqueue: (record) => {
          this.#queue.push(record.id);
          this.emit('requeued', record);
          this.#schedulePump();
        },
      });
      this.#permissions = options.permissions ?? new PermissionStore(options.config.grantedTools);
      this.#logger = logger;
      this.#scheduler = options.scheduler ?? realScheduler;
      this.#waves = new WaveJoins(this.#scheduler, options.config.background.join, (wave) => this.#checkWave(wave));
      this.#ownsExecutor = options.closeExecutor ?? options.executor === undefined;
      // Its own executor runs model calls: no endpoint configured is an error now, not in every job.
      if (options.executor === undefined) assertModelConfigured(options.config);
      this.#executor = executor = options.executor ?? createExecutor(options.config, logger, options.config.executor, undefined, options.store?.scope);
      if (options.store) this.recovery = this.#recover(options.store);
    } catch (error) {
      // A given executor with closeExecutor is this manager's to close, whether or not it got this far.
      const owned = executor ?? options.executor;
      if ((options.closeExecutor ?? options.executor === undefined) && owned) void owned.close().catch(() => {});
      options.store?.release();
      throw error;
    }
  }

  /** Reads the durable ledger back and re-queues what must run again; launching waits for the pump's microtask. */
  #recover(store: JobStore): RecoveryReport {
    const host = { config: this.#config, ledger: this.#ledger, names: this.#names, specs: this.#specs, waves: this.#waves, enqueue: (id: string) => this.#queue.push(id), keepSpec: (spec: JobSpec) => this.#restarts.keep(spec) };
    const report = recoverJobs(host, store.load());
    if (this.#queue.length > 0) this.#schedulePump();
    return report;
  }

  get executor(): Executor {
    return this.#executor;
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
    return this.#closing !== undefined;
  }

  /** The session's pooled budget now (remaining, leased, spent), or undefined without `sessionBudget`. */
  budgetPool(): PoolSnapshot | undefined {
    return this.#budgets.pool();
  }

  /** A job's limits, spent and remaining: at its end from its record, while it runs from what it has reported. */
  budgetOf(id: string): BudgetReport | undefined {
    return this.#budgets.reportNow(this.#ledger.get(id), this.#live.get(id));
  }

  /**
   * Queues a job and returns at once. Its cancel handle exists from now on, and aborting
   * `options.signal` cancels it. Throws `MANAGER_CLOSED`, `QUEUE_FULL`, `ABORTED` (the signal
   * was already aborted) or `TOOL_ARGUMENTS_INVALID` (a clear message the model can read).
   */
  spawn(request: SpawnRequest, options: SpawnOptions = {}): JobHandle {
    return this.#book(request, options, undefined);
  }

  #book(request: SpawnRequest, options: SpawnOptions, nesting: { parentJobId: string; depth: number } | undefined): JobHandle {
    if (this.closed) throw new JobError('MANAGER_CLOSED', '-', 'the background manager is closed; no new jobs are accepted');
    if (options.signal?.aborted) throw new AbortError(options.signal.reason);
    // An identical request joins the running job or reuses a fresh result (see dedup.ts).
    const dedupKey = isWellFormedSpawn(request) ? this.#dedup.keyFor(request, nesting !== undefined) : undefined;
    const match = dedupKey === undefined ? undefined : this.#dedup.find(dedupKey, (id) => this.#ledger.get(id));
    if (match) return this.#joined(match);
    // Jobs about to take a free slot (launched at the next microtask) are not waiting.
    const waiting = this.#queue.length - Math.max(0, this.#config.background.maxConcurrent - this.#live.size);
    const { data, role, agent } = admitSpawn(request, this.#config, waiting, (name) => this.#names.holder(name), (id) => this.#ledger.get(id)?.state);
    const budget = this.#budgets.admit(agent, data.budget);
    const name = data.name;
    const id = this.#ledger.newId();
    const wave = data.wave ?? null;
    const record = this.#ledger.add({
      id,
      label: data.label || name || id,
      task: data.task,
      role,
      wave,
      ...(agent !== undefined ? { agent } : {}),
      ...(name !== undefined ? { name } : {}),
      ...(data.parentToolId !== undefined ? { parentToolId: data.parentToolId } : {}),
      ...(nesting ? nesting : {}),
      budget: budget.limits,
    });
    // After the ledger took it: a spawn the durable ledger refused (LEDGER_WRITE_FAILED) holds no lease.
    budget.hold(id);
    if (name !== undefined) this.#names.claim(name, id);
    if (dedupKey !== undefined) this.#dedup.booked(id, dedupKey);
    if (nesting) this.#tree.add(nesting.parentJobId, id);
    this.#specs.set(id, {
      id,
      label: record.label,
      task: record.task,
      role: record.role,
      config: this.#config,
      attempt: 1,
      ...(data.parentSummary ? { parentSummary: data.parentSummary } : {}),
      ...(agent !== undefined ? { agent } : {}),
      ...(data.parentToolId !== undefined ? { parentToolId: data.parentToolId } : {}),
      ...(nesting ? { depth: nesting.depth } : {}),
      budget: budget.limits,
    });
    if (wave !== null) this.#waves.add(wave, id, data.join);
    const { config: _config, ...storedSpec } = this.#specs.get(id) as JobSpec;
    // Beside the record, lenient: without it a restart rebuilds the spec from the record.
    const store = this.#store;
    if (store) this.#ledger.writeAside(`job ${id}'s spec`, () => store.putSpec(storedSpec));
    if (options.signal) this.#cancelOnAbort(id, options.signal);
    this.#queue.push(id);
    this.emit('spawned', record);
    this.#schedulePump();
    return { id, label: record.label, state: 'queued' };
  }

  #joined(match: DedupMatch): JobHandle {
    const record = this.#ledger.get(match.id) as JobRecord;
    this.#logger?.debug({ jobId: match.id, joined: match.kind }, 'an identical spawn joined an existing job');
    return { id: record.id, label: record.label, state: record.state, joined: match.kind, ...(match.kind === 'reused' ? { ageMs: match.ageMs } : {}) };
  }

  /** Resolves with the job's final record once it has ended (at once if it already has). */
  result(id: string): Promise<Readonly<JobRecord>> {
    const record = this.#ledger.get(id);
    if (!record) return Promise.reject(new JobError('JOB_UNKNOWN', id, `no background job with id "${id}"`));
    if (record.state === 'ended') return Promise.resolve(record);
    return new Promise((resolve) => {
      const waiting = this.#waiters.get(id) ?? [];
      waiting.push(resolve);
      this.#waiters.set(id, waiting);
    });
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
    const byId = this.#ledger.get(idOrName);
    if (byId) return byId;
    const id = this.#names.holder(idOrName) ?? this.#names.lastHolder(idOrName);
    return id === undefined ? undefined : this.#ledger.get(id);
  }

  /** How many jobs are in a state. */
  count(state: JobRecord['state']): number {
    return this.#ledger.count(state);
  }

  /** How many ended jobs wait for delivery. */
  get undeliveredCount(): number {
    return this.#ledger.undeliveredCount;
  }

  /** Ended jobs not yet delivered. */
  undelivered(): Readonly<JobRecord>[] {
    return this.#ledger.undelivered();
  }

  /**
   * Marks one ended job delivered (in `turn`) without a drain: for a program that hands each
   * result on by itself, as `fanout` prints it. Its full text then falls under retention.
   */
  markDelivered(id: string, turn = 0, unread?: [number, number]): Readonly<JobRecord> | undefined {
    return this.#ledger.markDelivered(id, turn, Date.now(), unread);
  }

  /** The parent read characters `[from, to)` of a result delivered in part (read_background_result). */
  noteResultRead(id: string, from: number, to: number): Readonly<JobRecord> | undefined {
    return this.#ledger.markShown(id, from, to);
  }

  /**
   * Cancels a job: at once while queued; while running, cooperatively over its port and after
   * the grace period by stopping its thread. Idempotent; an unknown id throws `JOB_UNKNOWN`.
   */
  cancel(idOrName: string): JobHandle {
    return this.#stop(this.find(idOrName)?.id ?? idOrName, 'cancel');
  }

  /** Marks a running job `backgrounded` (its `agent_<name>` call returned early) and says so. */
  markBackgrounded(id: string): Readonly<JobRecord> | undefined {
    const before = this.#ledger.get(id);
    const record = this.#ledger.markBackgrounded(id);
    if (record && before !== record) this.emit('backgrounded', record);
    return record;
  }

  /**
   * Runs a job again with the same spec under the same id (and name): a running job is stopped
   * and re-queued, an ended one goes back to the queue and its undelivered result is superseded
   * (never delivered). A queued job is left as it is. Throws `JOB_UNKNOWN`, `NAME_TAKEN` (its
   * name went to another live job meanwhile) or `MANAGER_CLOSED`.
   */
  restart(idOrName: string, reason?: string): JobHandle {
    if (this.closed) throw new JobError('MANAGER_CLOSED', '-', 'the background manager is closed; no job can be restarted');
    const record = this.find(idOrName);
    if (!record) throw new JobError('JOB_UNKNOWN', idOrName, `no background job with id or name "${idOrName}"`);
    return this.#restarts.restart(record, reason);
  }

  /**
   * Ended jobs not yet delivered (those `accept` takes), handed over once and marked delivered
   * in `turn`; `unread`: per job delivered in part, the characters left out (see planDelivery).
   */
  drain(turn: number, options: { accept?: (record: Readonly<JobRecord>) => boolean; unread?: ReadonlyMap<string, [number, number]> } = {}): Readonly<JobRecord>[] {
    return this.#ledger.drain(turn, options.accept, Date.now(), options.unread);
  }

  /**
   * A resumed session's turns after `committedTurns` died with the process: results delivered in
   * them never reached the kept conversation, so they wait for delivery again. Returns their ids.
   */
  takeBackDeliveries(committedTurns: number): string[] {
    return takeBackDeliveries(this.#ledger, committedTurns);
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
  completeAttempt(id: string, attempt: number, ending: JobEnding): { accepted: true; record: Readonly<JobRecord> } | { accepted: false; reason: CompletionRefusal; error: JobError } {
    const refused = this.#ledger.refuseCompletion(id, attempt);
    if (refused) return { accepted: false, reason: refused, error: completionRefused(id, attempt, refused, this.#ledger.get(id)) };
    this.#live.get(id)?.hardStop();
    this.#finish(id, ending);
    return { accepted: true, record: this.#ledger.get(id) as Readonly<JobRecord> };
  }

  /**
   * The durable ledger's side: ok, or degraded since a write failed (what failed, since when,
   * how many records wait to be written again). Always ok without a durable ledger.
   */
  ledgerHealth(): LedgerHealth {
    return this.#ledger.health();
  }

  /** The spawning turn is over: its wave can now end. Fires `wave-done` if it already has. */
  sealWave(wave: number): void {
    if (this.#waves.seal(wave)) this.#checkWave(wave);
  }

  /** Queued, handed to the executor, or waiting for its children. */
  get pending(): number {
    return this.#queue.length + this.#live.size + this.#tree.suspendedCount;
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
   */
  close(options: { drain?: boolean; timeoutMs?: number } = {}): Promise<CloseReport> {
    this.#closing ??= this.#close(options.drain ? 'drain' : 'cancel', options.timeoutMs ?? this.#config.background.closeTimeoutMs);
    return this.#closing;
  }

  /** Hard-stops every job now (no cooperative cancel, no grace), then closes as {@link close} does. */
  destroy(): Promise<CloseReport> {
    const closing = (this.#closing ??= this.#close('hard', 0));
    // A close already under way with a longer bound is cut short here.
    for (const attempt of this.#live.values()) {
      attempt.stopRequest ??= 'close';
      attempt.hardStop();
    }
    return closing;
  }

  #close(how: CloseHow, timeoutMs: number): Promise<CloseReport> {
    // Durable: unfinished jobs stay unfinished in the ledger for the next process (see detachStore).
    if (how !== 'drain') this.#ledger.detachStore();
    const report = shutDown(how, timeoutMs, {
      waiting: () => [...this.#queue, ...this.#tree.suspendedIds()],
      live: this.#live,
      stop: (id) => void this.#stop(id, 'close'),
      onIdle: () => this.onIdle(),
      closeExecutor: () => {
        this.#gating.close();
        this.#waves.dispose();
        return this.#ownsExecutor ? this.#executor.close() : Promise.resolve();
      },
    });
    return report.finally(() => this.#store?.release());
  }

  #stop(id: string, reason: StopRequest): JobHandle {
    const record = this.#ledger.get(id);
    if (!record) throw new JobError('JOB_UNKNOWN', id, `no background job with id "${id}"`);
    const handle = (): JobHandle => ({ id, label: record.label, state: this.#ledger.get(id)?.state ?? 'ended' });
    if (record.state === 'ended') return handle();
    // Stopping a job stops its tree; a child ending now must not wake it up again.
    this.#tree.markStopping(id);
    for (const child of this.#tree.childrenOf(id)) {
      if (this.#ledger.get(child)?.state !== 'ended') this.#stop(child, reason === 'close' ? 'close' : 'cancel');
    }
    const suspension = this.#tree.resume(id);
    const queuedAt = this.#queue.indexOf(id);
    if (suspension) {
      const error = serializeError(new JobError(reason === 'timeout' ? 'JOB_TIMEOUT' : 'JOB_CANCELLED', id, `${reason === 'timeout' ? 'timed out' : 'cancelled'} while waiting for its children (${reason})`));
      const text = lastAssistantText(suspension.state.messages);
      this.#finish(id, { status: reason === 'timeout' ? 'timed_out' : 'cancelled', endedBy: 'cooperative', resultText: text, usage: suspension.state.usage, iterations: suspension.state.iterations, error });
    } else if (queuedAt >= 0) {
      this.#queue.splice(queuedAt, 1);
      const error = serializeError(new JobError('JOB_CANCELLED', id, `cancelled while queued (${reason})`));
      this.#finish(id, { status: 'cancelled', endedBy: 'queue', resultText: '', usage: {}, iterations: 0, error });
    } else {
      this.#live.get(id)?.requestStop(reason);
    }
    return handle();
  }

  #cancelOnAbort(id: string, signal: AbortSignal): void {
    const onAbort = () => {
      if (this.#ledger.get(id)?.state !== 'ended') this.cancel(id);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    this.#signalCleanups.set(id, () => signal.removeEventListener('abort', onAbort));
  }

  /**
   * Launching waits for a microtask: spawn() only books the job and returns, and the spawns of
   * one batch (a parent's tool calls, a fan-out loop) are launched together right after it.
   */
  #schedulePump(): void {
    if (this.#pumpScheduled) return;
    this.#pumpScheduled = true;
    queueMicrotask(() => {
      this.#pumpScheduled = false;
      this.#pump();
    });
  }

  #pump(): void {
    // After close nothing launches; a job re-queued meanwhile ends as cancelled instead.
    if (this.closed) for (const id of [...this.#queue]) this.#stop(id, 'close');
    const cap = this.#config.background.maxConcurrent;
    while (this.#live.size < cap && this.#queue.length > 0) {
      // The session pool decides first: the head waits for leases to return (FIFO), or is refused.
      const head = this.#queue[0] as string;
      const spec = this.#specs.get(head);
      const gate = this.#budgets.gate(head, spec?.budget, spec?.agent, (holder) => this.#live.has(holder));
      if (gate.kind === 'wait') break;
      this.#queue.shift();
      if (gate.kind === 'go') this.#launch(head);
      else this.#finish(head, { status: 'cancelled', endedBy: 'queue', resultText: '', usage: {}, iterations: 0, error: serializeError(gate.error) });
    }
    if (this.pending === 0) this.emit('idle');
  }

  #launch(id: string): void {
    const spec = this.#specs.get(id) as JobSpec;
    const number = (this.#launches.get(id) ?? 0) + 1;
    this.#launches.set(id, number);
    const gateLease = this.#gating.leaseFor(spec);
    const attempt: Attempt = new Attempt({
      jobId: id,
      number,
      executor: this.#executor,
      scheduler: this.#scheduler,
      permissions: { isGranted: (tool) => this.#permissions.isGranted(tool), ...gateLease.service },
      rateGateBuffer: this.#gating.rateGateBuffer,
      cancelGraceMs: this.#config.background.cancelGraceMs,
      logger: this.#logger,
      onStarted: (threadId) => {
        // A remote executor re-ran the job (its worker died or lost it): one more attempt, same clock.
        const rerun = this.#ledger.get(id)?.state === 'running';
        if (rerun) this.#ledger.requeue(id, `attempt ${(this.#ledger.get(id)?.attempts ?? 0) + 1}: run again by the ${this.#executor.kind} executor (the previous run's worker died or lost the job)`);
        this.#ledger.markRunning(id, threadId);
        // The wall clock starts now: time spent queued does not count.
        if (!rerun) {
          attempt.armTimeout(this.#config.background.timeoutMinutes * 60_000, () => this.#stop(id, 'timeout'));
          // Its wall-clock budget, from its first start: cooperative stop, then the hard stop path.
          const wallMs = this.#budgets.wallclockMs(spec.budget, this.#ledger.get(id)?.startedAt ?? Date.now());
          if (wallMs !== undefined) attempt.armTimeout(wallMs, () => this.#stop(id, 'budget'), 'budget');
        }
        this.emit('started', this.#ledger.get(id) as JobRecord);
      },
      onProgress: (event) => this.emit('progress', { jobId: id, event, ...(spec.parentToolId !== undefined ? { parentToolId: spec.parentToolId } : {}) }),
      onAlert: (alert) => this.#onAlert(id, alert),
      onSpawn: (requestId, request) => this.#nesting.spawnChild(attempt, requestId, request),
    });
    this.#live.set(id, attempt);
    // Durable ledger: recorded before the thread can begin, so a restart knows it may have run.
    if (this.#store) this.#ledger.markDispatched(id, number);
    // A thread that died mid-request never gives its gate slot back itself.
    void attempt.ended
      .then((end) => (gateLease.release(), this.#onAttemptEnded(attempt, end)))
      // A throw at a job's end must not become an unhandled rejection: that exits the host.
      .catch((error: unknown) => this.#reportFault(`ending job ${id}`, error));
    attempt.launch({ ...spec, attempt: number, processTag: `${this.#processToken}.${id}.${number}` });
  }

  #onAttemptEnded(attempt: Attempt, end: AttemptEnd): void {
    // Identity, not id: after a re-queue the same id is live again under a new attempt.
    if (this.#live.get(attempt.jobId) !== attempt) return;
    const id = attempt.jobId;
    if (this.#restarts.takePending(id)) {
      this.#launches.delete(id);
      return this.#requeue(attempt, `attempt ${attempt.number}: restarted on request while running`);
    }
    if (end.kind === 'suspended') return this.#nesting.suspend(attempt, end.state, end.seenChildren);
    if (end.kind === 'done') return this.#finish(id, endingFromOutcome(end.outcome, attempt.stopRequest));
    if (end.kind === 'protocol') return this.#finish(id, endingFromProtocol(end.error, attempt));
    // In shared isolation a dead thread takes its neighbours along and the culprit is unknown:
    // each gets another try on a thread of its own (so a poison job can only kill itself), a
    // bounded number of times, so a job that kills every thread it lands on still ends.
    const threadDied = !attempt.hardStopped && !attempt.stopRequest && this.#executor.capabilities.isolation === 'shared' && isThreadDeath(end.error);
    if (threadDied && attempt.number <= this.#config.background.maxRequeues) {
      return this.#requeue(attempt, `attempt ${attempt.number}: its thread died under it (${serializeError(end.error).message}); re-queued to run on a thread of its own`);
    }
    this.#finish(id, endingFromLostThread(id, end.error, attempt, threadDied));
  }

  /** A storage failure is logged once per degraded spell (then at debug), and its end too; each one is an event. */
  #onStorage(report: StorageReport): void {
    if (report.kind === 'recovered') {
      this.#logger?.warn({ failedWrites: report.failedWrites }, 'durable ledger: writes go through again; nothing is left unsaved');
      this.emit('ledger-recovered', { failedWrites: report.failedWrites });
      return;
    }
    const { kind: _kind, ...event } = report;
    const line = `durable ledger: a write failed (${report.operation}): ${report.error.message}; the process goes on, what it could not write is kept in memory and written again`;
    if (report.first) this.#reportFault(line, undefined, { sqliteCode: report.sqliteCode, unsaved: report.unsaved });
    else this.#logger?.debug({ sqliteCode: report.sqliteCode, operation: report.operation, unsaved: report.unsaved }, 'durable ledger: another write failed');
    this.emit('ledger-error', event);
  }

  /** An error in an event-loop path (no caller to throw to): logged, or a process warning without a logger. Never thrown. */
  #reportFault(what: string, error: unknown, fields: Record<string, unknown> = {}): void {
    if (this.#logger) this.#logger.error({ ...fields, ...(error === undefined ? {} : { err: error }) }, what);
    else process.emitWarning(error === undefined ? what : `${what}: ${error instanceof Error ? error.message : String(error)}`, { code: 'FORKPOOL_HOST_FAULT' });
  }

  #onAlert(id: string, alert: { message: string; severity: AlertSeverity }): void {
    const number = (this.#alertCounts.get(id) ?? 0) + 1;
    if (number > this.#config.background.maxAlertsPerJob) {
      this.#logger?.warn({ jobId: id }, 'a job sent more alerts than background.maxAlertsPerJob; dropped');
      return;
    }
    this.#alertCounts.set(id, number);
    const record = this.#ledger.get(id);
    const stored = { jobId: id, message: alert.message, severity: alert.severity, number, at: Date.now() };
    const store = this.#store;
    if (store) this.#ledger.writeAside(`job ${id}'s alert`, () => store.putAlert(stored));
    this.emit('alert', { ...stored, label: record?.label ?? id });
  }

  #requeue(attempt: Attempt, note: string): void {
    attempt.dispose();
    this.#live.delete(attempt.jobId);
    if (this.#ledger.get(attempt.jobId)?.state === 'running') this.#ledger.requeue(attempt.jobId, note);
    this.#queue.unshift(attempt.jobId);
    this.emit('requeued', this.#ledger.get(attempt.jobId) as JobRecord);
    this.#pump();
  }

  #finish(id: string, ending: JobEnding): void {
    const attempt = this.#live.get(id);
    if (attempt) {
      attempt.dispose();
      this.#live.delete(id);
    }
    // Its spend is charged to the session pool (the rest of its lease returns); its record gets the report.
    ending = { ...ending, ...this.#budgets.atEnd(id, this.#ledger.get(id), ending) };
    const error = ending.error && errorForRecord(ending.error, this.#config.errorDetail, this.#config.workspaceRoot);
    const record = this.#ledger.markEnded(id, { ...ending, ...(error ? { error } : {}), ...this.#nesting.childrenAtEnd(id, ending) });
    this.#tree.ended(id);
    this.#dedup.ended(record);
    this.#nesting.deliverToParent(record);
    this.#names.release(id);
    this.#alertCounts.delete(id);
    const spec = this.#specs.get(id);
    this.#specs.delete(id);
    if (spec) this.#restarts.keep(spec);
    this.#launches.delete(id);
    this.#signalCleanups.get(id)?.();
    this.#signalCleanups.delete(id);
    this.emit('done', record);
    for (const resolve of this.#waiters.get(id) ?? []) resolve(record);
    this.#waiters.delete(id);
    if (record.wave !== null) this.#checkWave(record.wave);
    this.#pump();
  }

  #checkWave(wave: number): void {
    // hasEnded: a member delivered early may since have been forgotten by retention.
    const check = this.#waves.check(wave, (id) => this.#ledger.hasEnded(id));
    const records = (ids: string[]) => ids.flatMap((id) => this.#ledger.get(id) ?? []);
    if (check?.kind === 'all') this.emit('wave-done', { wave, jobs: records(check.members) });
    else if (check) this.emit('wave-joined', { wave, reason: check.reason, ended: records(check.ended), pending: records(check.pending) });
  }
}

function completionRefused(id: string, attempt: number, reason: CompletionRefusal, record: Readonly<JobRecord> | undefined): JobError {
  if (reason === 'unknown') return new JobError('JOB_UNKNOWN', id, `no background job with id "${id}"`);
  const now = record?.state === 'running' ? `attempt ${record.attempts} is running` : record?.state === 'ended' ? 'it has ended' : 'it is queued (no attempt of it runs)';
  return new JobError('ATTEMPT_NOT_RUNNING', id, `job ${id}: a completion of attempt ${attempt} is refused (${reason}): ${now}`);
}

/** A lost attempt whose thread died (not a task that threw, which leaves its thread alive). */
function isThreadDeath(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'THREAD_LOST' || code === 'WORKER_OUT_OF_MEMORY';
}
