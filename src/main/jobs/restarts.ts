import type { ApprovalRecord } from '../../shared/approvals.js';
import { JobError } from '../../shared/errors.js';
import type { Job } from './job.js';
import type { JobTable } from './job-table.js';
import type { Dispatcher } from './dispatcher.js';
import type { JobRecord } from '../ledger/ledger.js';
import type { JobHandle } from './manager-api.js';
import type { JobApprovals } from './approvals.js';
import type { JobSleeps } from './sleeps.js';

/** Ended jobs whose spec is kept for restart_background_agent (and as many again that failed or timed out). */
const RESTARTABLE_SPECS = 256;
/** The endings a person retries: their specs are kept apart, so a mass cancel of a fan-out does not push them out. */
const RETRIED_STATUSES: ReadonlySet<string> = new Set(['failed', 'timed_out']);

/** What a restart needs of the manager. */
export interface RestartHost {
  readonly table: JobTable;
  readonly dispatcher: Dispatcher;
  /** A reopened job is queued: say so (`requeued`). */
  requeued(record: Readonly<JobRecord>): void;
  /** A reopened job leaves the wave it was spawned in (the wave may fire now without it). */
  leaveWave(wave: number, jobId: string): void;
  /** A sleeping job's wake timer (dropped by a restart). */
  readonly sleeps: Pick<JobSleeps, 'ended'>;
  /** A paused job's calls (answered as void by a restart), its unused answers and job grants. */
  readonly approvals: Pick<JobApprovals, 'voided' | 'dropVoided'>;
}

/**
 * Remy's restart: a job runs again with the same spec under the same id (and name). A running
 * job is stopped and re-queued when its attempt ends (Job.restartPending); an ended one goes
 * back to the queue and its undelivered result is superseded, never delivered; a suspended one
 * (asleep, paused for approvals, waiting for its children) drops what it waits on, once, and
 * goes back to the queue (see {@link #restartWaiting}). Only the newest ended jobs keep their
 * spec for it, so a long-lived session stays bounded.
 */
export class Restarts {
  readonly #host: RestartHost;
  /** Ended jobs that still hold their spec, oldest first: those that failed or timed out, and the others. */
  readonly #keepingFailed = new Set<Job>();
  readonly #keeping = new Set<Job>();

  constructor(host: RestartHost) {
    this.#host = host;
  }

  /** `reason`: why, for the record's notes (default: it was asked for). */
  restart(job: Job, reason = 'restarted on request'): JobHandle {
    const { id } = job;
    const record = job.record;
    if (job.phase === 'running') {
      const attempt = job.attempt;
      if (!attempt || attempt.stopRequest)
        throw new JobError('JOB_CANCELLED', id, `job ${id} is already being stopped (${attempt?.stopRequest ?? 'ending'}); restart it once it has ended`);
      job.restartPending = true;
      attempt.requestStop('cancel');
      return { id, label: record.label, state: 'running' };
    }
    if (job.phase === 'suspended') return this.#restartWaiting(job, reason);
    if (!job.isOver) return { id, label: record.label, state: 'queued' };
    if (!job.spec) throw new JobError('JOB_UNKNOWN', id, `job ${id} ended too long ago to be restarted (its spec is no longer kept); spawn it again`);
    if (job.name !== undefined) {
      const holder = this.#host.table.holder(job.name);
      if (holder !== undefined && holder !== job)
        throw new JobError('NAME_TAKEN', holder.id, `job ${id}'s name "${job.name}" now belongs to job ${holder.id}; cannot restart it under that name`);
    }
    const superseded = record.deliveredInTurn === undefined ? '; its undelivered result was superseded' : '';
    const reopened = job.reopen(`${reason} after it ended ${record.status ?? ''}${superseded}`);
    // Its record left the wave (wave: null); the wave's members must too, or the wave waits for it forever.
    if (record.wave !== null) this.#host.leaveWave(record.wave, id);
    this.#keeping.delete(job);
    this.#keepingFailed.delete(job);
    this.#host.table.claimName(job);
    this.#host.dispatcher.enqueue(job);
    this.#host.requeued(reopened);
    return { id, label: reopened.label, state: 'queued' };
  }

  /**
   * A suspended job runs again from its start: its record is reopened in one write, with a note
   * of what it waited on and its pending calls answered as void (in its approval history, each
   * `approval-resolved`, so no one approves a call that will never run); then its wake timer, its
   * approval wait, unused answers and job grants go, as an ended job's did. Its children go on:
   * their results, and those it held unread, go to the new run (Job.reopen), as a running job's
   * restart holds what its cut run had not read, since no one else receives them.
   */
  #restartWaiting(job: Job, reason: string): JobHandle {
    const waiting = job.record;
    const refused = job.awaitingApproval ? this.#host.approvals.voided(job, `void: job ${job.id} was restarted from its start (${reason})`) : [];
    const reopened = job.reopen(`${reason} while ${waitNote(job, waiting, refused)}`, refused);
    // Dropped once its record no longer says it waits: a throw before here leaves it waiting, whole.
    this.#host.sleeps.ended(job.id);
    this.#host.approvals.dropVoided(job, refused);
    this.#host.dispatcher.enqueue(job);
    this.#host.requeued(reopened);
    return { id: job.id, label: reopened.label, state: 'queued' };
  }

  /** The job ended: it keeps its spec for a later restart, and the oldest past the bound lets go of theirs. */
  keep(job: Job): void {
    this.forget(job);
    const keeping = RETRIED_STATUSES.has(job.record.status ?? '') ? this.#keepingFailed : this.#keeping;
    keeping.add(job);
    if (keeping.size <= RESTARTABLE_SPECS) return;
    const oldest = keeping.values().next().value as Job;
    keeping.delete(oldest);
    oldest.spec = undefined;
  }

  /** The job was forgotten (retention): nothing of it is kept. */
  forget(job: Job): void {
    this.#keeping.delete(job);
    this.#keepingFailed.delete(job);
  }
}

/** What a suspended job waited on and what its restart dropped, for its record's notes. */
function waitNote(job: Job, record: Readonly<JobRecord>, refused: readonly ApprovalRecord[]): string {
  if (job.asleep) {
    const at = record.sleepWait ? new Date(record.sleepWait.at).toISOString() : 'its turn';
    return `asleep until ${at} (${record.sleepWait?.reason ?? 'no reason'}): its wake was dropped`;
  }
  if (job.awaitingApproval) {
    const calls = refused.map((call) => `${call.tool} (call ${call.callId})`).join(', ');
    return `paused for approvals: ${calls || 'no call'} answered as void, never to run`;
  }
  const running = [...job.links.children, ...job.links.watching].filter((child) => !child.isOver).length;
  const unread = job.suspension?.pending.length ?? 0;
  return `waiting for its children: ${running} still running go on, and their results and the ${unread} it had not read go to its new run`;
}
