/**
 * Restart recovery for a durable ledger: what a manager opened on a ledger that a previous
 * process wrote does with each job it finds. Ended and undelivered: kept for the next drain
 * (delivered once). Queued and never started: queued again, in spawn order. Started (running,
 * or re-queued after a start) when the process died: "interrupted by a restart", then re-run,
 * or delivered as interrupted when the policy says so, when it was re-run too often already, or
 * when its agent can write files or run commands (never re-run silently).
 */
import type { ForkpoolConfig } from '../../shared/config.js';
import { GATED_TOOLS } from '../../shared/fixed-limits.js';
import { JobError, serializeError } from '../../shared/errors.js';
import type { JobSpec } from '../../shared/protocol.js';
import type { DeliveryLedger, JobEnding, JobRecord } from '../ledger/ledger.js';
import type { Job, JobPhase } from './job.js';
import type { JobTable } from './job-table.js';
import type { Dispatcher } from './dispatcher.js';
import type { Restarts } from './restarts.js';
import type { StoredJob, StoredSpec } from '../ledger/ledger-store.js';
import type { InvalidRow } from '../ledger/ledger-rows.js';
import type { WaveJoins } from './joins.js';
import type { SpawnDedup } from './dedup.js';
import type { JobWorktrees } from './job-worktrees.js';
import type { JobApprovals } from './approvals.js';
import type { JobSleeps } from './sleeps.js';

/** Opens every note recovery leaves on a job it found running; counting them bounds re-runs. */
export const INTERRUPTED_NOTE = 'interrupted by a restart';

export interface RecoveryHost {
  readonly config: ForkpoolConfig;
  readonly ledger: DeliveryLedger;
  readonly table: JobTable;
  readonly dispatcher: Dispatcher;
  readonly waves: WaveJoins;
  readonly restarts: Restarts;
  /** Rebuilt from the keys the stored specs hold: an identical spawn after a restart joins or reuses as before it. */
  readonly dedup?: SpawnDedup;
  /** Worktrees kept beside their jobs' specs are taken back (job-worktrees.ts `adopt`). */
  readonly worktrees?: Pick<JobWorktrees, 'adopt' | 'markUnmade'>;
  /** Jobs the last process left paused for approvals go on waiting (approvals.ts). */
  readonly approvals?: Pick<JobApprovals, 'restore'>;
  /** Jobs the last process left asleep wake at their own time (sleeps.ts). */
  readonly sleeps?: Pick<JobSleeps, 'restore'>;
  /** A resumed job's state, rebuilt from the old job's kept conversation (resumes.ts); StoredSpec does not hold it. */
  readonly resumeStateOf?: (record: Readonly<JobRecord>) => JobSpec['resume'];
}

/** What recovery did, by job id, for logs and the CLI. */
export interface RecoveryReport {
  /** Ended before the restart and waiting for delivery. */
  undelivered: string[];
  /** Queued, never started: queued again. */
  requeued: string[];
  /** Started when the process died: re-run. */
  rerun: string[];
  /** Started when the process died: ended as interrupted, delivered as such. */
  interrupted: string[];
  /** Paused for approvals when the process died: still waiting on the same calls (or queued with their answers). */
  awaitingApproval: string[];
  /** Asleep (`sleep` scheduler) when the process died: they wake at their own time (or were woken: queued). */
  sleeping: string[];
  /** Rows that failed their check when read back (edited or broken on disk): not recovered, reported with what was found. */
  invalid: InvalidRow[];
}

export function recoverJobs(host: RecoveryHost, stored: { jobs: StoredJob[]; nextId: number; invalid?: InvalidRow[] }): RecoveryReport {
  const { config, ledger } = host;
  ledger.restore(stored.jobs, stored.nextId);
  const report: RecoveryReport = {
    undelivered: [],
    requeued: [],
    rerun: [],
    interrupted: [],
    awaitingApproval: [],
    sleeping: [],
    invalid: [...(stored.invalid ?? [])],
  };
  const keyed: Array<{ id: string; key: string }> = [];
  /** Where each worktree job, and each child working in its parent's worktree, works: parents come first (spawn order). */
  const treeRoots = new Map<string, string>();
  for (const { record, spec: saved, messages } of stored.jobs) {
    const { dedupKey, worktree, worktreePending, ...storedSpec } = saved ?? {};
    // A worktree job runs (and, restarted, runs again) in its worktree, never in the workspace.
    const treeRoot = worktree?.workspaceRoot ?? (record.parentJobId !== undefined ? treeRoots.get(record.parentJobId) : undefined);
    if (treeRoot !== undefined) treeRoots.set(record.id, treeRoot);
    const jobConfig = treeRoot !== undefined ? { ...config, workspaceRoot: treeRoot } : config;
    const spec: JobSpec = { ...specFromRecord(record), ...storedSpec, config: jobConfig, attempt: 1 };
    // A worktree still being made when the last process ended: it never got one, and never runs in the workspace.
    if (worktreePending && !worktree) host.worktrees?.markUnmade(record.id);
    const treeThere = worktree ? (host.worktrees?.adopt(worktree, willEnd(config, record) ? record.label : undefined) ?? false) : !worktreePending;
    const resume = host.resumeStateOf?.(record);
    if (resume) spec.resume = resume;
    if (dedupKey !== undefined) keyed.push({ id: record.id, key: dedupKey });
    const add = (phase: JobPhase): Job => {
      const job = host.table.add(spec, phase, {
        name: record.name,
        parent: record.parentJobId === undefined ? undefined : host.table.get(record.parentJobId),
        // A job that runs again ends under its key, which makes it reusable (engine.ts `ended`).
        ...(phase !== 'ended' ? { dedupKey } : {}),
      });
      // Its messages, whole: a re-run (or a later restart of it) is given each once (steering.ts).
      if (messages) job.inbox.restore(messages, record.messages);
      return job;
    };
    // A resume whose old conversation is gone (retention forgot that job) never runs on its instruction alone.
    if (record.state !== 'ended' && record.resumedFrom !== undefined && !resume) {
      ledger.markEnded(record.id, lostResumeEnding(record));
      host.restarts.keep(add('ended'));
      report.interrupted.push(record.id);
      continue;
    }
    // Its worktree is gone (removed by hand): it cannot run where it ran, and never runs in the workspace instead.
    if (record.state !== 'ended' && !treeThere) {
      ledger.markEnded(record.id, lostWorktreeEnding(record, worktree ? `its worktree ${worktree.path} is gone` : 'its worktree was still being made'));
      host.restarts.keep(add('ended'));
      report.interrupted.push(record.id);
      continue;
    }
    // Paused for approvals: it goes on where it paused (its kept conversation), never run from the start.
    if (record.state !== 'ended' && record.approvalWait && host.approvals) {
      const job = add('queued');
      if (host.approvals.restore(job, record)) {
        report.awaitingApproval.push(record.id);
        continue;
      }
      host.table.forget(record.id);
    }
    // Asleep: it wakes at its own time and goes on from its kept conversation, never run from the start.
    if (record.state !== 'ended' && record.sleepWait && host.sleeps) {
      const job = add('queued');
      if (host.sleeps.restore(job, record)) {
        report.sleeping.push(record.id);
        continue;
      }
      host.table.forget(record.id);
    }
    if (record.state === 'ended') {
      if (record.deliveredInTurn === undefined) report.undelivered.push(record.id);
      host.restarts.keep(add('ended'));
      continue;
    }
    // Dispatched counts as started: its thread may have begun before its `started` was recorded.
    const started = record.state === 'running' || record.attempts > 0 || record.waitingForChildren === true || (record.dispatched ?? 0) > 0;
    if (!started && record.parentJobId === undefined) {
      host.dispatcher.enqueue(add('queued'));
      report.requeued.push(record.id);
      continue;
    }
    // Only runs that asked the model count: a crash loop that kills jobs before their first request gives none up.
    const why = whyNotRerun(config, record, record.modelRuns ?? 0);
    if (why === undefined) {
      const note = `${INTERRUPTED_NOTE} (it had started ${record.attempts} time(s)); re-run`;
      if (record.state === 'running') ledger.requeue(record.id, note);
      else ledger.noteQueued(record.id, note);
      const job = add('queued');
      // A wait record whose conversation is gone, or a run cut before it ended, runs from its task:
      // its first turn reads what its children gave (held on the wait, or handed to the cut run).
      const held = record.sleepWait?.childResults ?? record.approvalWait?.childResults ?? record.handedResults ?? [];
      if (Array.isArray(held)) job.results.held.push(...held.filter((text) => typeof text === 'string'));
      ledger.waits.handResults(record.id, []);
      host.dispatcher.enqueue(job);
      report.rerun.push(record.id);
    } else {
      ledger.markEnded(record.id, interruptedEnding(record, why));
      host.restarts.keep(add('ended'));
      report.interrupted.push(record.id);
    }
  }
  // Their spawning turns are over (the process that ran them died): each wave ends when its re-queued members do.
  const waves = new Set<number>();
  for (const id of [...report.requeued, ...report.rerun]) {
    const wave = ledger.get(id)?.wave;
    if (wave === null || wave === undefined) continue;
    host.waves.add(wave, id);
    waves.add(wave);
  }
  for (const wave of waves) host.waves.seal(wave);
  // After the loop: recovery may have ended some (interrupted), which then join nothing.
  host.dedup?.restore(
    keyed.flatMap(({ id, key }) => {
      const record = ledger.get(id);
      return record ? [{ record, key }] : [];
    }),
  );
  return report;
}

/** Why a started job is delivered as interrupted instead of re-run; undefined: it is re-run. */
function whyNotRerun(config: ForkpoolConfig, record: Readonly<JobRecord>, modelRuns: number): string | undefined {
  // Its parent job's conversation died with the process; the parent (re-run or not) decides anew.
  if (record.parentJobId !== undefined) return `its parent job ${record.parentJobId} was interrupted too`;
  if (record.waitingForChildren) return 'it was waiting for its children, whose results died with the process';
  const sideEffects = sideEffectTools(config, record.agent);
  if (sideEffects.length > 0) return `its agent can ${sideEffects.join(', ')}, so it is never re-run silently; restart it if that is safe`;
  if (config.ledger.onInterrupted === 'deliver') return 'ledger.onInterrupted is "deliver"';
  if (modelRuns > config.ledger.maxReruns)
    return `it reached the model on ${modelRuns} run(s), each cut by a restart or a crash (ledger.maxReruns ${config.ledger.maxReruns})`;
  return undefined;
}

/**
 * The tools a job of `agent` (or a fork of the parent) could use to write files or run
 * commands: in its tool list and granted. Background jobs never ask, so an ungranted gated tool
 * is refused to them; but with `permissionMode: "ask"` a person may have granted it meanwhile.
 */
export function sideEffectTools(config: ForkpoolConfig, agent: string | undefined): string[] {
  const tools = (agent !== undefined ? config.agents[agent]?.tools : undefined) ?? config.tools;
  return tools.filter((tool) => (GATED_TOOLS as readonly string[]).includes(tool) && (config.permissionMode === 'ask' || config.grantedTools.includes(tool)));
}

function interruptedEnding(record: Readonly<JobRecord>, why: string): JobEnding {
  const error = serializeError(new JobError('JOB_INTERRUPTED', record.id, `${INTERRUPTED_NOTE} while it ran; not re-run: ${why}`));
  return { status: 'failed', endedBy: 'crash', resultText: '', usage: record.usage, iterations: record.iterations, error };
}

/**
 * Whether recovery ends this record (already ended, or started and not re-run): its worktree's
 * changes are then committed at once. Mirrors the checks in recoverJobs; a job that does run
 * again commits at its own end.
 */
function willEnd(config: ForkpoolConfig, record: Readonly<JobRecord>): boolean {
  if (record.state === 'ended') return true;
  const started = record.state === 'running' || record.attempts > 0 || record.waitingForChildren === true || (record.dispatched ?? 0) > 0;
  if (!started && record.parentJobId === undefined) return false;
  return whyNotRerun(config, record, record.modelRuns ?? 0) !== undefined;
}

function lostWorktreeEnding(record: Readonly<JobRecord>, what: string): JobEnding {
  const why = `${INTERRUPTED_NOTE}; not run again: ${what}, and a worktree job never runs in the workspace instead`;
  const error = serializeError(new JobError('WORKTREE_UNAVAILABLE', record.id, why));
  return { status: 'failed', endedBy: 'crash', resultText: '', usage: record.usage, iterations: record.iterations, error };
}

/** A resumed job whose old job's conversation is no longer kept: ended, never run from its instruction alone. */
function lostResumeEnding(record: Readonly<JobRecord>): JobEnding {
  const why = `${INTERRUPTED_NOTE} before it ran; not run: it resumes job ${record.resumedFrom}, whose conversation is no longer kept`;
  const error = serializeError(new JobError('RESUME_UNAVAILABLE', record.id, why));
  return { status: 'failed', endedBy: 'queue', resultText: '', usage: record.usage, iterations: record.iterations, error };
}

/** A spec rebuilt from the record alone (the spec row may be missing if the process died between the two writes). */
function specFromRecord(record: Readonly<JobRecord>): StoredSpec {
  return {
    id: record.id,
    label: record.label,
    task: record.task,
    role: record.role,
    attempt: 1,
    ...(record.agent !== undefined ? { agent: record.agent } : {}),
    ...(record.parentToolId !== undefined ? { parentToolId: record.parentToolId } : {}),
    ...(record.depth !== undefined ? { depth: record.depth } : {}),
  };
}
