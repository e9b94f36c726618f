import { JobError } from '../../shared/errors.js';
import type { Job } from './job.js';
import type { JobTable } from './job-table.js';
import type { Dispatcher } from './dispatcher.js';
import type { JobRecord } from '../ledger/ledger.js';
import type { JobHandle } from './manager-api.js';

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
}

/**
 * Remy's restart: a job runs again with the same spec under the same id (and name). A running
 * job is stopped and re-queued when its attempt ends (Job.restartPending); an ended one goes
 * back to the queue and its undelivered result is superseded, never delivered. Only the newest
 * ended jobs keep their spec for it, so a long-lived session stays bounded.
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
    // Its run is over but the job is not: running it from its task would drop where it waits (and a restart that changed nothing would be a lie).
    if (job.phase === 'suspended')
      throw new JobError(
        'ATTEMPT_NOT_RUNNING',
        id,
        `job ${id} is ${suspendedAs(job)}; it cannot be restarted until it runs again or ends (cancel it first to run it again from its task)`,
      );
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

/** What a suspended job waits for, for a refusal. */
function suspendedAs(job: Job): string {
  if (job.asleep) return 'asleep until its scheduled turn';
  if (job.awaitingApproval) return 'paused for approvals';
  return 'waiting for its children';
}
