import type { ToolCatalog } from '../tools/catalog.js';
import type { Logger } from 'pino';
import type { ForkpoolConfig } from '../../shared/config.js';
import { errorForRecord } from '../../shared/error-detail.js';
import { JobError, serializeError } from '../../shared/errors.js';
import type { AlertSeverity, JobSpec } from '../../shared/protocol.js';
import type { Executor } from '../executors/executor.js';
import type { JobScheduler } from '../executors/scheduler.js';
import type { CompletionRefusal, DeliveryLedger, JobEnding, JobRecord } from '../ledger/ledger.js';
import type { JobStore } from '../ledger/ledger-store.js';
import type { JobBudgets } from '../limits/budgets.js';
import type { RequestGating } from '../limits/concurrency.js';
import type { PermissionStore } from '../limits/permissions.js';
import { SpawnDedup } from './dedup.js';
import { Dispatcher } from './dispatcher.js';
import type { Job, JobContext } from './job.js';
import { configInCopy, JobTable, storedSpecOf, type Nested } from './job-table.js';
import { endingFromQueue } from './job-endings.js';
import { worktreeBase, type JobWorktree } from './worktrees.js';
import { WaveJoins } from './joins.js';
import type { DeliveryPort, JobHandle, ManagerEvents, SpawnOptions, SpawnRequest } from './manager-api.js';
import { Nesting } from './nesting.js';
import { Restarts } from './restarts.js';
import { JobRunner } from './runner.js';
import { KeptConversations } from './conversations.js';
import type { ResumeOrigin } from './resumes.js';
import { JobSteering } from './steering.js';
import { JobSpeculation } from './speculation.js';
import { JobWorktrees } from './job-worktrees.js';
import { JobTranscripts } from './transcripts.js';
import { JobTraces } from './job-traces.js';
import type { Attempt } from '../executors/attempt.js';
import { JobApprovals } from './approvals.js';
import { JobSleeps } from './sleeps.js';
import type { HookRunner } from '../hooks/hook-runner.js';

/** What completeAttempt answers: the ended record, or why nothing changed. */
export type CompletionAnswer = { accepted: true; record: Readonly<JobRecord> } | { accepted: false; reason: CompletionRefusal; error: JobError };

/** Fires one of the manager's events. */
export type Emit = <K extends keyof ManagerEvents>(event: K, ...args: ManagerEvents[K]) => void;

export interface EngineOptions {
  config: ForkpoolConfig;
  /** The tool catalog: spawns name tools from it; its host tools answer jobs' calls. */
  tools: ToolCatalog;
  /** The host's hooks (hook-runner.ts): its jobs' hook calls run here. */
  hooks?: HookRunner | undefined;
  ledger: DeliveryLedger;
  store: JobStore | undefined;
  executor: Executor;
  /** Where a spawn's `executor: "remote"` runs (BackgroundManagerOptions.remote); none: such a spawn is EXECUTOR_UNAVAILABLE. */
  remote?: Executor;
  scheduler: JobScheduler;
  permissions: PermissionStore;
  gating: RequestGating;
  budgets: JobBudgets;
  logger: Logger | undefined;
  emit: Emit;
  closed(): boolean;
  reportFault(what: string, error: unknown): void;
}

/**
 * The manager's private engine: the job table, the dispatcher, the runner, nesting, restarts,
 * waves and dedup, wired to one another once. {@link BackgroundManager} is the facade over it.
 */
export class JobEngine {
  readonly table: JobTable;
  readonly dispatcher: Dispatcher;
  readonly runner: JobRunner;
  readonly nesting: Nesting;
  readonly restarts: Restarts;
  readonly waves: WaveJoins;
  /** Ended jobs' conversations, for resume_background_agent (conversations.ts). */
  readonly conversations: KeptConversations;
  readonly steering: JobSteering;
  /** The worktrees of `workspace: "worktree"` jobs (worktrees.ts). */
  readonly worktrees: JobWorktrees;
  /** Speculative jobs: kept, dropped, preempted (speculation.ts). */
  readonly speculation: JobSpeculation;
  /** Identical spawns (dedup.ts); restart recovery rebuilds it. */
  readonly dedup: SpawnDedup;
  /** Every job's steps, from its progress events (transcripts.ts). */
  readonly transcripts: JobTranscripts;
  /** Each job's spans, when a tracer provider is registered (job-traces.ts). */
  readonly traces: JobTraces;
  /** Jobs paused for approvals, their answers and job-wide grants (approvals.ts). */
  readonly approvals: JobApprovals;
  /** Jobs asleep until their scheduled turn (sleeps.ts). */
  readonly sleeps: JobSleeps;
  /** Attempts that have sent a model request (each is counted once in its record's modelRuns). */
  readonly #reachedModel = new WeakSet<Attempt>();
  /** Worktrees being made, by job (see {@link ready}). */
  readonly #preparations = new Map<string, Promise<void>>();
  readonly #o: EngineOptions;
  /** See JobTask.owner: the ledger scope, stable across restarts; none without a ledger. */
  readonly owner: string | undefined;

  constructor(o: EngineOptions) {
    this.#o = o;
    this.owner = o.store?.scope;
    const { config, ledger, budgets, emit } = o;
    this.dedup = new SpawnDedup(config);
    this.traces = new JobTraces({ config, remote: o.executor.capabilities.remote === true });
    this.conversations = new KeptConversations(config, ledger, o.store);
    this.transcripts = new JobTranscripts(config, ledger, o.store);
    this.worktrees = new JobWorktrees({
      dir: config.background.worktreeDir,
      persist: (tree) => this.#keepWorktree(tree),
      reportFault: (what, error) => o.reportFault(what, error),
    });
    this.waves = new WaveJoins(o.scheduler, config.background.join, (wave) => this.checkWave(wave));
    const dispatcher = (this.dispatcher = new Dispatcher({
      maxConcurrent: config.background.maxConcurrent,
      budgets,
      launch: (job) => this.runner.launch(job),
      closed: () => o.closed(),
      stopQueued: (job) => this.runner.stop(job, 'close'),
      idle: () => emit('idle'),
      preempt: (waiting, live, need) => this.speculation.preempt(waiting, live, need),
    }));
    this.speculation = new JobSpeculation({
      ledger,
      stop: (job) => this.runner.stop(job, 'cancel'),
      schedulePump: () => dispatcher.schedulePump(),
      reportFault: (what, error) => o.reportFault(what, error),
    });
    const table = (this.table = new JobTable({
      config,
      ledger,
      store: o.store,
      dedup: this.dedup,
      budgets,
      waves: this.waves,
      worktrees: this.worktrees,
      context: this.#jobContext(),
      tools: o.tools,
      remoteExecutor: o.executor.capabilities.remote === true,
      remote: o.remote === undefined ? undefined : { refusal: (o.remote as { refusal?: string }).refusal },
      waitingForSlot: () => dispatcher.waitingForSlot,
    }));
    this.nesting = new Nesting({
      config,
      ledger,
      table,
      dispatcher,
      book: (request, nested) => this.book(request, {}, nested),
      stop: (job, reason) => this.runner.stop(job, reason),
    });
    const steering = (this.steering = new JobSteering({
      config,
      ledger,
      reachesRunning: o.executor.capabilities.remote !== true || o.executor.capabilities.steering === true,
      store: o.store,
      sent: (receipt) => emit('message', receipt),
    }));
    this.restarts = new Restarts({
      table,
      dispatcher,
      requeued: (record) => emit('requeued', record),
      leaveWave: (wave, id) => {
        if (this.waves.leave(wave, id)) this.checkWave(wave);
      },
    });
    this.approvals = new JobApprovals({
      config,
      ledger,
      store: o.store,
      table,
      dispatcher,
      permissions: o.permissions,
      scheduler: o.scheduler,
      emit,
      note: (jobId, text) => this.transcripts.note(jobId, text),
    });
    this.sleeps = new JobSleeps({ ...o, dispatcher, note: (jobId, text) => this.transcripts.note(jobId, text) });
    this.runner = new JobRunner({
      ...o,
      approvals: this.approvals,
      sleeps: this.sleeps,
      ...(this.owner !== undefined ? { owner: this.owner } : {}),
      dispatcher,
      nesting: this.nesting,
      steering,
      started: (record) => {
        this.traces.started(record);
        emit('started', record);
      },
      progress: (event) => {
        this.traces.progress(event.jobId, event.event);
        const job = table.get(event.jobId);
        steering.onProgress(job, event.event);
        this.transcripts.record(event.jobId, event.event);
        if (event.event.type === 'model_request' && job?.attempt && !this.#reachedModel.has(job.attempt)) {
          this.#reachedModel.add(job.attempt);
          ledger.markModelReached(job.id);
        }
        emit('progress', event);
      },
      alert: (job, alert) => this.#onAlert(job, alert),
      requeued: (record) => emit('requeued', record),
      keepConversation: (job, messages) => this.conversations.keep(job.id, messages),
      // A worktree job's changes are committed before its ending is recorded, off the main thread (job-worktrees.ts).
      beforeEnding: (job) => this.worktrees.commit(job.id, job.record.label),
    });
  }

  /** Books a spawn and queues it; an identical spawn joins the job it matches (see dedup.ts). */
  book(request: SpawnRequest, options: SpawnOptions, nested: Nested | undefined, resume?: ResumeOrigin): JobHandle {
    if (this.#o.closed()) throw new JobError('MANAGER_CLOSED', '-', 'the background manager is closed; no new jobs are accepted');
    const booking = this.table.book(request, options, nested, resume);
    if (booking.kind === 'joined') {
      const { match } = booking;
      const record = (this.table.get(match.id) as Job).record;
      this.#o.logger?.debug({ jobId: match.id, joined: match.kind }, 'an identical spawn joined an existing job');
      return { id: record.id, label: record.label, state: record.state, joined: match.kind, ...(match.kind === 'reused' ? { ageMs: match.ageMs } : {}) };
    }
    const { job, worktreeFrom } = booking;
    // Its span opens before it can run: the spec it runs with carries the span's traceparent.
    if (job.spec) job.spec = this.traces.open(job.spec, request, nested?.parent.id);
    if (options.signal) job.cancelOnAbort(options.signal, () => this.runner.stop(job, 'cancel'));
    if (worktreeFrom === undefined) this.dispatcher.enqueue(job);
    else this.#prepareWorktree(job, worktreeFrom);
    this.#o.emit('spawned', job.record);
    return { id: job.id, label: job.record.label, state: 'queued' };
  }

  /**
   * A worktree job is held (no slot) while its worktree is checked for and made, off the main
   * thread (job-worktrees.ts `prepare`), then queued to run in it. A refusal ends it `failed`
   * with WORKTREE_UNAVAILABLE before anything ran; one stopped meanwhile ended as a queued job
   * does, and leaves no worktree. {@link ready} hands the outcome to an async caller.
   */
  #prepareWorktree(job: Job, from: string): void {
    this.dispatcher.hold(job);
    const ready = this.worktrees
      .prepare(job.id, from, () => !job.isOver)
      .then(
        (tree) => {
          if (!tree) return;
          job.spec = { ...(job.spec as JobSpec), config: configInCopy(this.#o.config, tree.workspaceRoot) };
          this.dispatcher.release(job);
        },
        (error: unknown) => {
          const refusal = new JobError('WORKTREE_UNAVAILABLE', job.id, `${error instanceof Error ? error.message : String(error)}; nothing was run`);
          if (this.dispatcher.remove(job)) job.end({ ...endingFromQueue(serializeError(refusal)), status: 'failed' });
          throw refusal;
        },
      );
    this.#preparations.set(job.id, ready);
    // The outcome is the job's ending; `ready` only hands it to a caller that asks.
    void ready.catch(() => undefined).finally(() => this.#preparations.delete(job.id));
  }

  /**
   * For a caller that can wait (spawnReady): a top-level spawn that will need a new worktree is
   * checked first, off the main thread, so a refusal comes before anything is booked. Rejects
   * WORKTREE_UNAVAILABLE; undefined (nothing to wait for) when the spawn needs no worktree.
   */
  checkWorktreeFor(request: SpawnRequest): Promise<void> | undefined {
    const { config } = this.#o;
    if ((request.workspace ?? config.background.workspace) !== 'worktree') return undefined;
    return worktreeBase(config.workspaceRoot).then(
      () => undefined,
      (error: unknown) => {
        throw new JobError('WORKTREE_UNAVAILABLE', '-', `${error instanceof Error ? error.message : String(error)}; nothing was started`);
      },
    );
  }

  /** Settles when job `id`'s worktree is made (at once for a job that needs none); rejects WORKTREE_UNAVAILABLE when it was refused. */
  ready(id: string): Promise<void> {
    return this.#preparations.get(id) ?? Promise.resolve();
  }

  /** Retention forgot a record: its job goes from the table and the tree, and from what restarts keep. */
  forget(id: string): void {
    this.transcripts.drop(id);
    const job = this.table.get(id);
    if (!job) return;
    this.restarts.forget(job);
    this.approvals.ended(id);
    this.sleeps.ended(id);
    this.conversations.forget(id);
    this.worktrees.forgetUnmade(id);
    this.table.forget(id);
  }

  /** A completion reported from outside (see BackgroundManager.completeAttempt): only a running job's current attempt ends the job. */
  completeAttempt(id: string, attempt: number, ending: JobEnding): CompletionAnswer {
    const { ledger } = this.#o;
    const refused = ledger.refuseCompletion(id, attempt);
    const job = this.table.get(id);
    if (refused || !job) return { accepted: false, reason: refused ?? 'unknown', error: completionRefused(id, attempt, refused ?? 'unknown', ledger.get(id)) };
    job.attempt?.hardStop();
    job.end(ending);
    return { accepted: true, record: job.record };
  }

  /** For Deliveries (src/main/delivery/deliveries.ts): the ledger's hand-over side and the waves' end. */
  deliveryPort(): DeliveryPort {
    const { ledger, emit } = this.#o;
    return {
      ledger,
      sealWave: (wave) => {
        if (this.waves.seal(wave)) this.checkWave(wave);
      },
      markBackgrounded: (id) => {
        const before = ledger.get(id);
        const record = ledger.markBackgrounded(id);
        if (record && before !== record) emit('backgrounded', record);
        return record;
      },
    };
  }

  checkWave(wave: number): void {
    const { ledger, emit } = this.#o;
    // hasEnded: a member delivered early may since have been forgotten by retention.
    const check = this.waves.check(wave, (id) => ledger.hasEnded(id));
    const records = (ids: string[]) => ids.flatMap((id) => ledger.get(id) ?? []);
    if (check?.kind === 'all') emit('wave-done', { wave, jobs: records(check.members) });
    else if (check) emit('wave-joined', { wave, reason: check.reason, ended: records(check.ended), pending: records(check.pending) });
  }

  /** What each Job needs of the manager (see JobContext): the books its moves and its end touch. */
  #jobContext(): JobContext {
    const { config, ledger, budgets } = this.#o;
    return {
      ledger,
      durable: this.#o.store !== undefined,
      moved: (job, from, to) => this.dispatcher.moved(job, from, to),
      completeEnding: (job, given) => {
        // Its spend is charged to the session pool (the rest of its lease returns); its record gets the report; a dropped guess's error says why.
        const ending = { ...given, ...budgets.atEnd(job.id, job.record, given), ...this.speculation.atEnd(job, given) };
        const error = ending.error && errorForRecord(ending.error, config.errorDetail, config.workspaceRoot);
        // A worktree job's changes are committed on its branch now, and its result says so.
        const tree = this.worktrees.finish(job.id, job.record.label, ending.byClose === true);
        if (tree !== undefined) ending.resultText = ending.resultText ? `${ending.resultText}\n\n${tree}` : tree;
        return { ...ending, ...(error ? { error } : {}), ...this.nesting.childrenAtEnd(job, ending) };
      },
      ended: (job, ended) => {
        // Each book in its own try: one that throws (a parent's delivery the disk refused) must
        // not keep the others from hearing of the ending (its name, `done`, its wave, the queue).
        const step = (what: string, run: () => void) => {
          try {
            run();
          } catch (error) {
            this.#o.reportFault(`job ${job.id} ended, but ${what} failed`, error);
          }
        };
        let record = ended;
        // First: a dropped guess is set aside before anyone (its wave, a follow-up) counts it as undelivered.
        step('setting a dropped guess aside', () => (record = this.speculation.ended(job, ended)));
        step('ending its dedup entry', () => this.dedup.ended(record, job.dedupKey));
        step('delivering it to its parent job', () => this.nesting.deliverToParent(job, record));
        step('releasing its name', () => this.table.releaseName(job));
        step('keeping its spec for a restart', () => this.restarts.keep(job));
        step('ending its transcript', () => this.transcripts.ended(job.id));
        step('ending its span', () => this.traces.ended(record));
        step('dropping its approvals', () => this.approvals.ended(job.id));
        step('dropping its sleep', () => this.sleeps.ended(job.id));
        step('the done event', () => this.#o.emit('done', record));
        if (record.wave !== null) step(`checking wave ${record.wave}`, () => this.checkWave(record.wave as number));
        step('launching the queue', () => this.dispatcher.pump());
      },
      reportFault: (what, error) => this.#o.reportFault(what, error),
    };
  }

  /** A worktree's new state goes beside its job's spec in the durable ledger (recovery.ts finds it again); lenient, as the spec's own write. */
  #keepWorktree(tree: Readonly<JobWorktree>): void {
    const store = this.#o.store;
    const job = this.table.get(tree.jobId);
    if (!store || !job?.spec) return;
    const stored = storedSpecOf(job.spec, job.dedupKey, tree);
    this.#o.ledger.writeAside(`job ${tree.jobId}'s worktree`, () => store.putSpec(stored));
  }

  #onAlert(job: Job, alert: { message: string; severity: AlertSeverity }): void {
    const number = job.countAlert(this.#o.config.background.maxAlertsPerJob);
    if (number === undefined) return void this.#o.logger?.warn({ jobId: job.id }, 'a job sent more alerts than background.maxAlertsPerJob; dropped');
    const stored = { jobId: job.id, message: alert.message, severity: alert.severity, number, at: Date.now() };
    const store = this.#o.store;
    if (store) this.#o.ledger.writeAside(`job ${job.id}'s alert`, () => store.putAlert(stored));
    this.#o.emit('alert', { ...stored, label: job.record?.label ?? job.id });
  }
}

function completionRefused(id: string, attempt: number, reason: CompletionRefusal, record: Readonly<JobRecord> | undefined): JobError {
  if (reason === 'unknown') return new JobError('JOB_UNKNOWN', id, `no background job with id "${id}"`);
  const now =
    record?.state === 'running' ? `attempt ${record.attempts} is running` : record?.state === 'ended' ? 'it has ended' : 'it is queued (no attempt of it runs)';
  return new JobError('ATTEMPT_NOT_RUNNING', id, `job ${id}: a completion of attempt ${attempt} is refused (${reason}): ${now}`);
}
