import { randomUUID } from 'node:crypto';
import { configuredSecrets } from '../../shared/tools/secrets.js';
import { runHostCall } from '../tools/host-calls.js';
import type { ToolCatalog } from '../tools/catalog.js';
import type { Logger } from 'pino';
import type { ForkpoolConfig } from '../../shared/config.js';
import { JobError, serializeError } from '../../shared/errors.js';
import type { AlertSeverity, HostToolAnswer, JobSpec } from '../../shared/protocol.js';
import type { LoopEvent } from '../../shared/loop-events.js';
import { Attempt, type AttemptEnd, type AttemptHost } from '../executors/attempt.js';
import type { Executor } from '../executors/executor.js';
import type { JobScheduler } from '../executors/scheduler.js';
import type { JobBudgets } from '../limits/budgets.js';
import type { RequestGating } from '../limits/concurrency.js';
import type { PermissionStore } from '../limits/permissions.js';
import type { JobRecord } from '../ledger/ledger.js';
import type { Dispatcher } from './dispatcher.js';
import type { Job } from './job.js';
import { endingFromLostThread, endingFromOutcome, endingFromProtocol, endingFromQueue, type StopRequest } from './job-endings.js';
import { lastAssistantText, type Nesting } from './nesting.js';
import type { JobSteering } from './steering.js';
import type { JobApprovals } from './approvals.js';
import type { JobSleeps } from './sleeps.js';
import { isHookCall, type HookRunner } from '../hooks/hook-runner.js';

/** What running jobs needs of the manager. */
export interface RunnerHost {
  readonly config: ForkpoolConfig;
  readonly executor: Executor;
  /** Runs the jobs whose spec says `executor: "remote"`. */
  readonly remote?: Executor | undefined;
  readonly scheduler: JobScheduler;
  readonly permissions: PermissionStore;
  readonly gating: RequestGating;
  readonly budgets: Pick<JobBudgets, 'wallclockMs'>;
  readonly dispatcher: Dispatcher;
  readonly nesting: Nesting;
  readonly steering: JobSteering;
  readonly approvals: JobApprovals;
  readonly sleeps: JobSleeps;
  readonly logger: Logger | undefined;
  readonly tools: ToolCatalog;
  /** Its hooks: a job's PreToolUse, PostToolUse, SubagentStart and SubagentStop run here (docs/tools.md "Hooks"). */
  readonly hooks?: HookRunner | undefined;
  /** Names this manager's jobs apart on a shared executor (see JobTask.owner). */
  readonly owner?: string;
  started(record: Readonly<JobRecord>): void;
  progress(event: { jobId: string; event: LoopEvent; parentToolId?: string }): void;
  alert(job: Job, alert: { message: string; severity: AlertSeverity }): void;
  requeued(record: Readonly<JobRecord>): void;
  /** A job's `done` carried its final conversation: kept for a resume (conversations.ts), before its ending is told. */
  keepConversation(job: Job, messages: unknown[] | undefined): void;
  /** Awaited after a run that did not suspend, before its ending is decided: a worktree job's commit (never rejects); undefined when there is nothing to wait for. */
  beforeEnding(job: Job): Promise<void> | undefined;
  reportFault(what: string, error: unknown): void;
}

/**
 * Runs and stops jobs: each launch is an {@link Attempt} (its timeouts start at `started`),
 * and how it ends decides what the job does next: end, run again (a restart, a thread that
 * died under it), or wait for its children. Stopping covers every phase: a queued or waiting
 * job ends at once, a running one is asked to stop (then hard-stopped by its attempt).
 */
export class JobRunner {
  readonly #host: RunnerHost;
  /** Tags this manager's child processes apart from any other forkpool's on the machine. */
  readonly #processToken = randomUUID().slice(0, 8);
  /** Keys the config holds: a host tool's answer never shows them (the job's loop redacts again). */
  readonly #secrets: readonly string[];
  /** What every attempt of this runner reports to: one object, not closures per launch (attempt-host.ts). */
  readonly #attempts: AttemptHost<Job>;

  constructor(host: RunnerHost) {
    this.#host = host;
    this.#secrets = configuredSecrets(host.config);
    this.#attempts = {
      scheduler: host.scheduler,
      rateGateBuffer: host.gating.rateGateBuffer,
      logger: host.logger,
      ...(host.owner !== undefined ? { owner: host.owner } : {}),
      started: (job, attempt, threadId) => this.#started(job, attempt, threadId),
      progress: (job, event) => {
        const parentToolId = job.spec?.parentToolId;
        host.progress({ jobId: job.id, event, ...(parentToolId !== undefined ? { parentToolId } : {}) });
      },
      alert: (job, alert) => host.alert(job, alert),
      spawn: (job, _attempt, requestId, request) => host.nesting.spawnChild(job, requestId, request),
      answerPermission: (job, tool, callId) => host.approvals.answer(job, tool, callId),
      runHostTool: (job, call, signal) => this.#runHostTool(job, call, signal),
      expired: (job, _attempt, kind) => this.stop(job, kind),
      ended: (job, attempt, end) => this.#attemptEnded(job, attempt, end),
    };
  }

  /** A remote spawn's executor, else the manager's (admission refused a remote spawn without one; a recovered one falls back). */
  #executorOf(spec: Pick<JobSpec, 'executor'>): Executor {
    return spec.executor === 'remote' ? (this.#host.remote ?? this.#host.executor) : this.#host.executor;
  }

  launch(job: Job): void {
    const { config, gating } = this.#host;
    job.takeHeldResults();
    const spec = job.spec as JobSpec;
    const executor = this.#executorOf(spec);
    const id = job.id;
    const attempt = new Attempt<Job>({
      job,
      jobId: id,
      number: job.launches + 1,
      executor,
      host: this.#attempts,
      gate: gating.leaseFor(spec),
      cancelGraceMs: config.background.cancelGraceMs,
    });
    job.dispatch(attempt);
    attempt.launch({
      ...spec,
      attempt: attempt.number,
      processTag: `${this.#processToken}.${id}.${attempt.number}`,
      ...this.#host.steering.forLaunch(job, spec.resume !== undefined),
      ...this.#hookEvents(),
    });
  }

  /**
   * An attempt's end (AttemptHost.ended: a microtask after it, as a reaction to its `ended`
   * would be). A throw here must not escape: that exits the host.
   */
  #attemptEnded(job: Job, attempt: Attempt<Job>, end: AttemptEnd): void {
    const fault = (error: unknown) => this.#host.reportFault(`ending job ${job.id}`, error);
    try {
      // A thread that died mid-request never gives its gate slot back itself.
      attempt.gate?.release();
      // A restart runs it again in the same worktree; a suspended job's children may still write there.
      // Only a worktree job waits: every other ending stays in the same tick as its attempt's end.
      const paused = end.kind === 'suspended' || end.kind === 'awaiting-approval' || end.kind === 'sleeping';
      const before = !paused && !job.restartPending && job.attempt === attempt ? this.#host.beforeEnding(job) : undefined;
      if (before) return void before.then(() => this.#ended(job, attempt, end)).catch(fault);
      this.#ended(job, attempt, end);
    } catch (error) {
      fault(error);
    }
  }

  /** A host tool call of `job`'s (a hook's, or a tool this job was offered), run on this thread. */
  #runHostTool(job: Job, call: { name: string; callId: string; args: unknown }, signal: AbortSignal): Promise<HostToolAnswer> {
    if (isHookCall(call.name)) {
      const hooks = this.#host.hooks;
      return hooks
        ? hooks.answerCall(job.id, call.name, call.args, signal)
        : Promise.resolve({ ok: false as const, code: 'TOOL_UNKNOWN', message: 'no hooks here' });
    }
    const spec = job.spec;
    const def = this.#host.tools.hostTool(call.name);
    // Only a tool this job was offered: a worker cannot make the host run another.
    if (!def || !spec?.hostTools?.some((stub) => stub.name === call.name)) {
      return Promise.resolve({ ok: false as const, code: 'TOOL_UNKNOWN', message: `${call.name} is not a host tool of this job` });
    }
    const { toolLimits } = this.#host.config;
    const limits = { timeoutMs: toolLimits.toolTimeoutMs, outputMaxChars: toolLimits.outputMaxChars, secrets: this.#secrets };
    return runHostCall(def, call.args, { jobId: job.id, callId: call.callId, agent: spec.agent ?? 'fork' }, signal, limits);
  }

  /** The job events with hooks here; none for a remote executor's job (its worker runs its own config's). */
  #hookEvents(): Pick<JobSpec, 'hooks'> {
    if (this.#host.executor.capabilities.remote === true) return {};
    const events = this.#host.hooks?.jobEvents() ?? [];
    return events.length > 0 ? { hooks: events } : {};
  }

  /**
   * Stops a job and its tree: a queued job ends as cancelled, one waiting for its children as
   * cancelled (or timed out) with what it last said, a running one is asked to stop. A child
   * ending meanwhile must not wake its parent again (Job.stopping).
   */
  stop(job: Job, reason: StopRequest): void {
    if (job.isOver) return;
    job.stopping = true;
    for (const child of [...job.links.children]) if (!child.isOver) this.stop(child, reason === 'close' ? 'close' : 'cancel');
    // Paused for approvals: it ends now, with what it last said (approvals.ts).
    if (this.#host.approvals.stop(job, reason)) return;
    // Asleep: it ends now, with what it last said (sleeps.ts).
    if (this.#host.sleeps.stop(job, reason)) return;
    const suspension = job.suspension;
    if (suspension) {
      const timedOut = reason === 'timeout';
      const error = serializeError(
        new JobError(timedOut ? 'JOB_TIMEOUT' : 'JOB_CANCELLED', job.id, `${timedOut ? 'timed out' : 'cancelled'} while waiting for its children (${reason})`),
      );
      const text = lastAssistantText(suspension.state.messages);
      job.end({
        status: timedOut ? 'timed_out' : 'cancelled',
        endedBy: 'cooperative',
        resultText: text,
        usage: suspension.state.usage,
        iterations: suspension.state.iterations,
        error,
        ...(reason === 'close' ? { byClose: true as const } : {}),
      });
    } else if (this.#host.dispatcher.remove(job)) {
      const error = serializeError(new JobError('JOB_CANCELLED', job.id, `cancelled while queued (${reason})`));
      job.end({ ...endingFromQueue(error), ...(reason === 'close' ? { byClose: true as const } : {}) });
    } else {
      job.attempt?.requestStop(reason);
    }
  }

  #started(job: Job, attempt: Attempt<Job>, threadId: number | undefined): void {
    const { config } = this.#host;
    const executor = this.#executorOf(job.spec as JobSpec);
    // A remote executor re-ran the job (its worker died or lost it): one more attempt, same clock.
    const rerun = job.phase === 'running';
    job.started(
      threadId,
      rerun ? `attempt ${job.record.attempts + 1}: run again by the ${executor.kind} executor (the previous run's worker died or lost the job)` : undefined,
    );
    // The wall clock starts now: time spent queued does not count, nor time spent waiting for approvals (ranMs ran before).
    if (!rerun) {
      job.runningSince = Date.now();
      // Its wall-clock budget, from its first start: cooperative stop, then the hard stop path.
      // One timer for whichever comes first (Attempt.armDeadline).
      const wallMs = this.#host.budgets.wallclockMs(job.spec?.budget, job.record.startedAt ?? Date.now());
      attempt.armDeadline(Math.max(1, config.background.timeoutMinutes * 60_000 - job.ranMs), wallMs);
    }
    this.#host.started(job.record);
  }

  #ended(job: Job, attempt: Attempt<Job>, end: AttemptEnd): void {
    // Identity: after a re-queue the same job is live again under a new attempt.
    if (job.attempt !== attempt) return;
    if (job.restartPending) {
      job.restartPending = false;
      return this.#requeue(job, `attempt ${attempt.number}: restarted on request while running`, true);
    }
    if (end.kind === 'suspended') {
      this.#host.nesting.suspend(job, end.state, end.seenChildren);
      // Its `suspend` crossed a stop (it answered before it saw the `cancel`): a stopping job is
      // never resumed, so it ends now, as a job stopped while waiting does, with what it said.
      if (job.stopping && job.phase === 'suspended') this.stop(job, attempt.stopRequest ?? 'cancel');
      return;
    }
    if (end.kind === 'awaiting-approval') {
      this.#host.approvals.paused(job, end.state, end.calls, end.seenChildren);
      // Its pause crossed a stop (it paused before it saw the `cancel`): it ends now, as a job stopped while waiting does.
      if (job.stopping) this.stop(job, attempt.stopRequest ?? 'cancel');
      return;
    }
    if (end.kind === 'sleeping') {
      this.#host.sleeps.asleep(job, end.state, { at: end.at, reason: end.reason }, end.seenChildren);
      // Its sleep crossed a stop (it slept before it saw the `cancel`): it ends now, as a job stopped while asleep does.
      if (job.stopping) this.stop(job, attempt.stopRequest ?? 'cancel');
      return;
    }
    if (end.kind === 'done') {
      this.#host.keepConversation(job, end.outcome.conversation);
      // A remote worker may have stopped it on its own (its timeout fired first): the same ending.
      return void job.end(endingFromOutcome(end.outcome, attempt.stopRequest ?? end.outcome.stoppedBy));
    }
    if (end.kind === 'protocol') return void job.end(endingFromProtocol(end.error, attempt));
    // In shared isolation a dead thread takes its neighbours along and the culprit is unknown:
    // each gets another try on a thread of its own (so a poison job can only kill itself), a
    // bounded number of times, so a job that kills every thread it lands on still ends.
    const threadDied =
      !attempt.hardStopped && !attempt.stopRequest && this.#executorOf(job.spec as JobSpec).capabilities.isolation === 'shared' && isThreadDeath(end.error);
    if (threadDied && attempt.number <= this.#host.config.background.maxRequeues) {
      return this.#requeue(
        job,
        `attempt ${attempt.number}: its thread died under it (${serializeError(end.error).message}); re-queued to run on a thread of its own`,
        false,
      );
    }
    job.end(endingFromLostThread(job.id, end.error, attempt, threadDied));
  }

  #requeue(job: Job, note: string, fresh: boolean): void {
    job.requeue(note, fresh);
    this.#host.dispatcher.enqueueFirst(job);
    this.#host.requeued(job.record);
    this.#host.dispatcher.pump();
  }
}

/** A lost attempt whose thread died (not a task that threw, which leaves its thread alive). */
function isThreadDeath(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'THREAD_LOST' || code === 'WORKER_OUT_OF_MEMORY';
}
