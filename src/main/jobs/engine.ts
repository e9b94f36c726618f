import { JobError, serializeError } from '../../shared/errors.js';
import type { JobSpec } from '../../shared/protocol.js';
import type { BudgetReport } from '../../shared/budget.js';
import type { PoolSnapshot } from '../limits/budget-pool.js';
import type { ApprovalDecision, ApprovalRecord, PendingApproval } from '../../shared/approvals.js';
import type { CompletionRefusal, JobEnding, JobRecord } from '../ledger/ledger.js';
import type { StoredJob } from '../ledger/ledger-store.js';
import type { InvalidRow } from '../ledger/ledger-rows.js';
import type { Job } from './job.js';
import { wireEngine, type EngineOptions, type EngineParts } from './engine-parts.js';
import { configInCopy, type Nested } from './job-table.js';
import { endingFromQueue } from './job-endings.js';
import { worktreeBase, type JobWorktree, type WorktreeAction } from './worktrees.js';
import type { CloseReport, DeliveryPort, JobHandle, SpawnOptions, SpawnRequest, SteerOptions, SteerReceipt } from './manager-api.js';
import { recoveredResumeState, resumeJob, type ResumeOrigin, type ResumeRequest } from './resumes.js';
import { recoverJobs, type RecoveryReport } from './recovery.js';
import { shutDown, type CloseHow } from './shutdown.js';
import type { TranscriptPage } from './transcripts.js';

export type { EngineOptions } from './engine-parts.js';

/** What completeAttempt answers: the ended record, or why nothing changed. */
export type CompletionAnswer = { accepted: true; record: Readonly<JobRecord> } | { accepted: false; reason: CompletionRefusal; error: JobError };

/**
 * The manager's private engine: the job table, the dispatcher, the runner, nesting, restarts,
 * waves, dedup and the rest, wired to one another once and kept private. Callers (the facade
 * {@link BackgroundManager} and its {@link ParentControls}) use its verbs: spawn, find,
 * cancel, restart, resume, send, close... and never reach into its parts.
 */
export class JobEngine {
  /** Its parts, wired once (engine-parts.ts); only its own methods reach into them. */
  readonly #p: EngineParts;
  readonly #o: EngineOptions;
  /** See JobTask.owner: the ledger scope, stable across restarts; none without a ledger. */
  readonly owner: string | undefined;

  constructor(o: EngineOptions) {
    this.#o = o;
    this.owner = o.store?.scope;
    this.#p = wireEngine(o, (request, nested) => this.spawn(request, {}, nested));
  }

  /** Reads a durable ledger back: re-queues what must run again (launching waits for the pump's microtask). */
  recover(stored: { jobs: StoredJob[]; nextId: number; invalid?: InvalidRow[] }): RecoveryReport {
    const { config, ledger } = this.#o;
    const resumeStateOf = (record: Readonly<JobRecord>) => recoveredResumeState(record, this.#p.conversations);
    return recoverJobs({ ...this.#p, config, ledger, resumeStateOf }, stored);
  }

  /** Books a spawn and queues it; an identical spawn joins the job it matches (see dedup.ts). */
  spawn(request: SpawnRequest, options: SpawnOptions, nested?: Nested, resume?: ResumeOrigin): JobHandle {
    if (this.#o.closed()) throw closedError('no new jobs are accepted');
    const booking = this.#p.table.book(request, options, nested, resume);
    if (booking.kind === 'joined') {
      const { match } = booking;
      const record = (this.#p.table.get(match.id) as Job).record;
      this.#o.logger?.debug({ jobId: match.id, joined: match.kind }, 'an identical spawn joined an existing job');
      return { id: record.id, label: record.label, state: record.state, joined: match.kind, ...(match.kind === 'reused' ? { ageMs: match.ageMs } : {}) };
    }
    const { job, worktreeFrom } = booking;
    // Its span opens before it can run: the spec it runs with carries the span's traceparent.
    if (job.spec) job.spec = this.#p.traces.open(job.spec, request, nested?.parent.id);
    if (options.signal) job.cancelOnAbort(options.signal, () => this.#p.runner.stop(job, 'cancel'));
    if (worktreeFrom === undefined) this.#p.dispatcher.enqueue(job);
    else this.#prepareWorktree(job, worktreeFrom);
    this.#o.emit('spawned', job.record);
    return { id: job.id, label: job.record.label, state: 'queued' };
  }

  /**
   * {@link spawn}, resolved once the job can run (BackgroundManager.spawnReady): a spawn that
   * will need a new worktree has its repository checked first, off the main thread, so a
   * refusal (WORKTREE_UNAVAILABLE, "nothing was started") comes before anything is booked.
   */
  spawnReady(request: SpawnRequest, options: SpawnOptions): Promise<JobHandle> {
    const booked = (): Promise<JobHandle> => {
      const handle = this.spawn(request, options);
      return (this.#p.table.get(handle.id)?.worktreeReady ?? Promise.resolve()).then(() => handle);
    };
    if (this.#o.closed()) throw closedError('no new jobs are accepted');
    const { config } = this.#o;
    // Awaited only when there is git to wait for: the spawns of one batch are still booked together.
    if ((request.workspace ?? config.background.workspace) !== 'worktree') return booked();
    return worktreeBase(config.workspaceRoot).then(booked, (error: unknown) => {
      throw new JobError('WORKTREE_UNAVAILABLE', '-', `${errorText(error)}; nothing was started`);
    });
  }

  /** A job by id or by name (the live holder of a name first, else the newest job that had it). */
  find(idOrName: string): Job | undefined {
    return this.#p.table.find(idOrName);
  }

  /** Cancels (or, for close, stops) a job in any phase; see JobRunner.stop. Throws JOB_UNKNOWN. */
  cancel(idOrName: string, reason: 'cancel' | 'close' = 'cancel'): JobHandle {
    const job = this.#found(idOrName);
    this.#p.runner.stop(job, reason);
    return { id: job.id, label: job.record.label, state: this.#o.ledger.get(job.id)?.state ?? 'ended' };
  }

  /** See BackgroundManager.restart. */
  restart(idOrName: string, reason?: string): JobHandle {
    if (this.#o.closed()) throw closedError('no job can be restarted');
    const job = this.#found(idOrName, true);
    // Asked for again by name: no longer a guess (a dropped one runs again as an ordinary job).
    if (job.speculation !== undefined) {
      job.speculation = 'kept';
      this.#o.ledger.markSpeculation(job.id, 'kept');
    }
    // Its worktree was never made: it cannot run where it should, and never runs in the workspace instead.
    if (this.#p.worktrees.unmade(job.id) && job.isOver)
      throw new JobError('WORKTREE_UNAVAILABLE', job.id, `job ${job.id} never got its worktree, so it cannot run again there; spawn it again`);
    const handle = this.#p.restarts.restart(job, reason);
    // It runs again in its worktree: no merge or drop until that run ended and was committed.
    this.#p.worktrees.reopen(job.id);
    return handle;
  }

  /** See ParentControls.resume (resumes.ts). */
  resume(idOrName: string, message: string, request: ResumeRequest, options: SpawnOptions): JobHandle {
    return resumeJob(
      {
        find: (ref) => this.#p.table.find(ref),
        conversations: this.#p.conversations,
        worktree: (id) => this.#p.worktrees.get(id),
        closed: () => this.#o.closed(),
        book: (r, o, origin) => this.spawn(r, o, undefined, origin),
      },
      idOrName,
      message,
      request,
      options,
    );
  }

  /** See ParentControls.send (steering.ts). */
  send(idOrName: string, text: string, options: SteerOptions): SteerReceipt {
    return this.#p.steering.send(this.#found(idOrName, true), text, options);
  }

  /** See ParentControls.keepSpeculative (speculation.ts). */
  keepSpeculative(idOrName: string): boolean {
    return this.#p.speculation.keep(this.#found(idOrName));
  }

  /** See ParentControls.dropSpeculative (speculation.ts). */
  dropSpeculative(idOrName: string, why: string): boolean {
    return this.#p.speculation.drop(this.#found(idOrName), why);
  }

  /** A `workspace: "worktree"` job's worktree (by id or name), if it has one. */
  worktree(idOrName: string): Readonly<JobWorktree> | undefined {
    return this.#p.worktrees.get(this.#p.table.find(idOrName)?.id ?? idOrName);
  }

  /** See ParentControls.worktreeAction (job-worktrees.ts). */
  async worktreeAction(idOrName: string, action: WorktreeAction): Promise<string> {
    return this.#p.worktrees.act(this.#found(idOrName).id, action);
  }

  /** One page of a job's transcript; undefined for a job this engine does not know. */
  transcript(idOrName: string, offset?: number, limit?: number): TranscriptPage | undefined {
    const job = this.#p.table.find(idOrName);
    return job && this.#p.transcripts.read(job.id, offset, limit);
  }

  /** The session's pooled budget now (remaining, leased, spent), or undefined without `sessionBudget`. */
  budgetPool(): PoolSnapshot | undefined {
    return this.#o.budgets.pool();
  }

  /** A job's limits, spent and remaining: at its end from its record, while it runs from what it has reported. */
  budgetOf(id: string): BudgetReport | undefined {
    return this.#o.budgets.reportNow(this.#o.ledger.get(id), this.#p.table.get(id)?.attempt);
  }

  /** Every gated call waiting for an answer, oldest first (approvals.ts). */
  pendingApprovals(): PendingApproval[] {
    return this.#p.approvals.list();
  }

  /** Answers a waiting call (approvals.ts). */
  approve(jobRef: string, callId: string | undefined, decision: ApprovalDecision): ApprovalRecord {
    return this.#p.approvals.approve(jobRef, callId, decision);
  }

  /** Queued, handed to the executor, or waiting for its children. */
  get pending(): number {
    return this.#p.dispatcher.pending;
  }

  /** Retention forgot a record: its job goes from the table and the tree, and from what restarts keep. */
  forget(id: string): void {
    this.#p.transcripts.drop(id);
    const job = this.#p.table.get(id);
    if (!job) return;
    this.#p.restarts.forget(job);
    this.#p.approvals.ended(id);
    this.#p.sleeps.ended(id);
    this.#p.conversations.forget(id);
    this.#p.worktrees.forgetUnmade(id);
    this.#p.table.forget(id);
  }

  /** Retention dropped a job's result: its transcript goes with it. */
  resultDropped(id: string): void {
    this.#p.transcripts.drop(id);
  }

  /**
   * A completion reported from outside this process for attempt `attempt` of job `id` (its
   * record's `attempts` when that run started): only a running job's current attempt ends the
   * job, as any ending does (its own thread, if any, is stopped). An unknown job, a duplicate,
   * a job no attempt of which runs and a stale attempt are refused with the reason and a typed
   * error (`JOB_UNKNOWN`, `ATTEMPT_NOT_RUNNING`), and change nothing. Never throws.
   */
  completeAttempt(id: string, attempt: number, ending: JobEnding): CompletionAnswer {
    const { ledger } = this.#o;
    const refused = ledger.refuseCompletion(id, attempt);
    const job = this.#p.table.get(id);
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
        if (this.#p.waves.seal(wave)) this.#p.checkWave(wave);
      },
      markBackgrounded: (id) => {
        const before = ledger.get(id);
        const record = ledger.markBackgrounded(id);
        if (record && before !== record) emit('backgrounded', record);
        return record;
      },
    };
  }

  /**
   * Stops every job as `how` says (shutdown.ts), then closes what it runs on (the request gates,
   * the tool sources, the executors it owns) once no worktree is still being made. Every span is
   * ended last, and the ledger's writes tried once more.
   */
  shutDown(how: CloseHow, timeoutMs: number, onIdle: () => Promise<void>): Promise<CloseReport> {
    const { gating, tools, executor, remote, ledger } = this.#o;
    const dispatcher = this.#p.dispatcher;
    return shutDown(how, timeoutMs, {
      waiting: () => dispatcher.waiting().map((job) => job.id),
      live: () => dispatcher.live().flatMap((job) => job.attempt ?? []),
      stop: (id) => void this.cancel(id, 'close'),
      onIdle,
      closeExecutor: async () => {
        this.#p.waves.dispose();
        // A worktree being made for a job this close stopped is removed again before close() resolves.
        await this.#p.worktrees.prepared();
        gating.close();
        // After the jobs: a host call still running was aborted with its job.
        await Promise.all([tools.close(), executor.owned && executor.executor.close(), remote?.owned && remote.executor.close()]);
      },
    }).finally(() => {
      // Last: what a failing disk kept in memory is tried once more, so a clean close leaves the disk as memory is.
      ledger.closeWrites();
      // A job a close abandoned still ends its span, marked so (a durable one runs again later, in a new span).
      this.#p.traces.closeAll();
    });
  }

  /** Every running attempt is stopped now: no cooperative cancel, no grace (destroy). */
  hardStopAll(): void {
    for (const job of this.#p.dispatcher.live()) {
      if (!job.attempt) continue;
      job.attempt.stopRequest ??= 'close';
      job.attempt.hardStop();
    }
  }

  /**
   * A worktree job is held (no slot) while its worktree is checked for and made, off the main
   * thread (job-worktrees.ts `prepare`), then queued to run in it. A refusal ends it `failed`
   * with WORKTREE_UNAVAILABLE before anything ran; one stopped meanwhile ended as a queued job
   * does, and leaves no worktree. `job.worktreeReady` hands the outcome to spawnReady.
   */
  #prepareWorktree(job: Job, from: string): void {
    this.#p.dispatcher.hold(job);
    const ready = this.#p.worktrees
      .prepare(job.id, from, () => !job.isOver)
      .then(
        (tree) => {
          if (!tree) return;
          job.spec = { ...(job.spec as JobSpec), config: configInCopy(this.#o.config, tree.workspaceRoot) };
          this.#p.dispatcher.release(job);
        },
        (error: unknown) => {
          const refusal = new JobError('WORKTREE_UNAVAILABLE', job.id, `${errorText(error)}; nothing was run`);
          if (this.#p.dispatcher.remove(job)) job.end({ ...endingFromQueue(serializeError(refusal)), status: 'failed' });
          throw refusal;
        },
      );
    job.worktreeReady = ready;
    // The outcome is the job's ending; `worktreeReady` only hands it to a caller that asks.
    void ready.catch(() => undefined).finally(() => (job.worktreeReady = undefined));
  }

  /** The job by id or name, else JOB_UNKNOWN (its message says "id or name" where names were always meant). */
  #found(idOrName: string, named = false): Job {
    const job = this.#p.table.find(idOrName);
    if (!job) throw new JobError('JOB_UNKNOWN', idOrName, `no background job with id${named ? ' or name' : ''} "${idOrName}"`);
    return job;
  }
}

function closedError(what: string): JobError {
  return new JobError('MANAGER_CLOSED', '-', `the background manager is closed; ${what}`);
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function completionRefused(id: string, attempt: number, reason: CompletionRefusal, record: Readonly<JobRecord> | undefined): JobError {
  if (reason === 'unknown') return new JobError('JOB_UNKNOWN', id, `no background job with id "${id}"`);
  const now =
    record?.state === 'running' ? `attempt ${record.attempts} is running` : record?.state === 'ended' ? 'it has ended' : 'it is queued (no attempt of it runs)';
  return new JobError('ATTEMPT_NOT_RUNNING', id, `job ${id}: a completion of attempt ${attempt} is refused (${reason}): ${now}`);
}
