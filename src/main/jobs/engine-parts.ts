import type { ToolCatalog } from '../tools/catalog.js';
import type { Logger } from 'pino';
import type { ForkpoolConfig } from '../../shared/config.js';
import type { AlertSeverity } from '../../shared/protocol.js';
import type { Executor } from '../executors/executor.js';
import type { JobScheduler } from '../executors/scheduler.js';
import type { DeliveryLedger } from '../ledger/ledger.js';
import type { JobStore } from '../ledger/ledger-store.js';
import type { JobBudgets } from '../limits/budgets.js';
import type { RequestGating } from '../limits/concurrency.js';
import type { PermissionStore } from '../limits/permissions.js';
import type { HookRunner } from '../hooks/hook-runner.js';
import { SpawnDedup } from './dedup.js';
import { Dispatcher } from './dispatcher.js';
import type { Job } from './job.js';
import { jobContext, type JobBooks } from './job-books.js';
import { JobTable, storedSpecOf, type Nested } from './job-table.js';
import type { JobWorktree } from './worktrees.js';
import { WaveJoins } from './joins.js';
import type { Emit, JobHandle, SpawnRequest } from './manager-api.js';
import { Nesting } from './nesting.js';
import { Restarts } from './restarts.js';
import { JobRunner } from './runner.js';
import { KeptConversations } from './conversations.js';
import { JobSteering } from './steering.js';
import { JobSpeculation } from './speculation.js';
import { JobWorktrees } from './job-worktrees.js';
import { JobTranscripts } from './transcripts.js';
import { JobTraces } from './job-traces.js';
import { JobApprovals } from './approvals.js';
import { JobSleeps } from './sleeps.js';

export interface EngineOptions {
  config: ForkpoolConfig;
  /** The tool catalog: spawns name tools from it; its host tools answer jobs' calls. */
  tools: ToolCatalog;
  /** The host's hooks (hook-runner.ts): its jobs' hook calls run here. */
  hooks?: HookRunner | undefined;
  ledger: DeliveryLedger;
  store: JobStore | undefined;
  /** Where its jobs run; `owned`: closed with the engine. */
  executor: { executor: Executor; owned: boolean };
  /** Where a spawn's `executor: "remote"` runs (BackgroundManagerOptions.remote); none: such a spawn is EXECUTOR_UNAVAILABLE. */
  remote: { executor: Executor; owned: boolean } | undefined;
  scheduler: JobScheduler;
  permissions: PermissionStore;
  gating: RequestGating;
  budgets: JobBudgets;
  logger: Logger | undefined;
  emit: Emit;
  closed: () => boolean;
  reportFault: (what: string, error: unknown) => void;
}

/** The engine's parts, each the one owner of its piece of the jobs' state (README.md "Who owns what"). */
export interface EngineParts {
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
  /** A wave may have ended (a member ended, left, or its turn was sealed): `wave-done` or `wave-joined`. */
  checkWave(wave: number): void;
}

/**
 * Makes the engine's parts and wires them to one another, once: each gets what it needs of
 * the others as a narrow host. `spawn` is the engine's own (a child's spawn goes through it).
 */
export function wireEngine(o: EngineOptions, spawn: (request: SpawnRequest, nested: Nested) => JobHandle): EngineParts {
  const { config, ledger, budgets, emit } = o;
  const executor = o.executor.executor;
  const remoteExecutor = executor.capabilities.remote === true;
  // Filled in below: the closures read it only once a job runs, after every part is made.
  const p = {} as { -readonly [K in keyof EngineParts]: EngineParts[K] };
  let books: JobBooks | undefined;
  p.checkWave = (wave) => {
    // hasEnded: a member delivered early may since have been forgotten by retention.
    const check = p.waves.check(wave, (id) => ledger.hasEnded(id));
    const records = (ids: string[]) => ids.flatMap((id) => ledger.get(id) ?? []);
    if (check?.kind === 'all') emit('wave-done', { wave, jobs: records(check.members) });
    else if (check) emit('wave-joined', { wave, reason: check.reason, ended: records(check.ended), pending: records(check.pending) });
  };
  p.dedup = new SpawnDedup(config);
  p.traces = new JobTraces({ config, remote: remoteExecutor });
  p.conversations = new KeptConversations(config, ledger, o.store);
  p.transcripts = new JobTranscripts(config, ledger, o.store);
  p.worktrees = new JobWorktrees({
    dir: config.background.worktreeDir,
    persist: (tree) => keepWorktree(o, p.table.get(tree.jobId), tree),
    reportFault: o.reportFault,
  });
  p.waves = new WaveJoins(o.scheduler, config.background.join, (wave) => p.checkWave(wave));
  const dispatcher = (p.dispatcher = new Dispatcher({
    maxConcurrent: config.background.maxConcurrent,
    budgets,
    launch: (job) => p.runner.launch(job),
    closed: o.closed,
    stopQueued: (job) => p.runner.stop(job, 'close'),
    idle: () => emit('idle'),
    preempt: (waiting, live, need) => p.speculation.preempt(waiting, live, need),
  }));
  p.speculation = new JobSpeculation({
    ledger,
    stop: (job) => p.runner.stop(job, 'cancel'),
    schedulePump: () => dispatcher.schedulePump(),
    reportFault: o.reportFault,
  });
  const table = (p.table = new JobTable({
    config,
    ledger,
    store: o.store,
    dedup: p.dedup,
    budgets,
    waves: p.waves,
    worktrees: p.worktrees,
    context: jobContext(ledger, o.store !== undefined, () => (books ??= { ...o, ...p })),
    tools: o.tools,
    remoteExecutor,
    remote: o.remote === undefined ? undefined : { refusal: (o.remote.executor as { refusal?: string }).refusal },
    waitingForSlot: () => dispatcher.waitingForSlot,
  }));
  p.nesting = new Nesting({ config, ledger, table, dispatcher, book: spawn, stop: (job, reason) => p.runner.stop(job, reason) });
  const steering = (p.steering = new JobSteering({
    config,
    ledger,
    reachesRunning: !remoteExecutor || executor.capabilities.steering === true,
    store: o.store,
    sent: (receipt) => emit('message', receipt),
  }));
  p.approvals = new JobApprovals({
    config,
    ledger,
    store: o.store,
    table,
    dispatcher,
    permissions: o.permissions,
    scheduler: o.scheduler,
    emit,
    note: (jobId, text) => p.transcripts.note(jobId, text),
  });
  p.sleeps = new JobSleeps({ ...o, dispatcher, note: (jobId, text) => p.transcripts.note(jobId, text) });
  p.restarts = new Restarts({
    table,
    dispatcher,
    requeued: (record) => emit('requeued', record),
    leaveWave: (wave, id) => {
      if (p.waves.leave(wave, id)) p.checkWave(wave);
    },
    sleeps: p.sleeps,
    approvals: p.approvals,
  });
  const owner = o.store?.scope;
  p.runner = new JobRunner({
    ...o,
    executor,
    remote: o.remote?.executor,
    approvals: p.approvals,
    sleeps: p.sleeps,
    ...(owner !== undefined ? { owner } : {}),
    dispatcher,
    nesting: p.nesting,
    steering,
    started: (record) => {
      p.traces.started(record);
      emit('started', record);
    },
    progress: (event) => {
      p.traces.progress(event.jobId, event.event);
      const job = table.get(event.jobId);
      steering.onProgress(job, event.event);
      p.transcripts.record(event.jobId, event.event);
      if (event.event.type === 'model_request' && job?.firstModelRequest()) ledger.markModelReached(job.id);
      emit('progress', event);
    },
    alert: (job, alert) => onAlert(o, job, alert),
    requeued: (record) => emit('requeued', record),
    keepConversation: (job, messages) => p.conversations.keep(job.id, messages),
    // A worktree job's changes are committed before its ending is recorded, off the main thread (job-worktrees.ts).
    beforeEnding: (job) => p.worktrees.commit(job.id, job.record.label),
  });
  return p;
}

/** A worktree's new state goes beside its job's spec in the durable ledger (recovery.ts finds it again); lenient, as the spec's own write. */
function keepWorktree(o: EngineOptions, job: Job | undefined, tree: Readonly<JobWorktree>): void {
  const store = o.store;
  if (!store || !job?.spec) return;
  const stored = storedSpecOf(job.spec, job.dedupKey, tree);
  o.ledger.writeAside(`job ${tree.jobId}'s worktree`, () => store.putSpec(stored));
}

/** A job's `report_alert`: counted (at most `maxAlertsPerJob`), kept beside its row, and the `alert` event. */
function onAlert(o: EngineOptions, job: Job, alert: { message: string; severity: AlertSeverity }): void {
  const number = job.countAlert(o.config.background.maxAlertsPerJob);
  if (number === undefined) return void o.logger?.warn({ jobId: job.id }, 'a job sent more alerts than background.maxAlertsPerJob; dropped');
  const stored = { jobId: job.id, message: alert.message, severity: alert.severity, number, at: Date.now() };
  const store = o.store;
  if (store) o.ledger.writeAside(`job ${job.id}'s alert`, () => store.putAlert(stored));
  o.emit('alert', { ...stored, label: job.record?.label ?? job.id });
}
