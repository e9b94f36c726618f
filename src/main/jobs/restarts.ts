import { JobError } from '../../shared/errors.js';
import type { JobSpec } from '../../shared/protocol.js';
import type { Attempt } from '../executors/attempt.js';
import type { JobNames } from './job-names.js';
import type { DeliveryLedger, JobRecord } from '../ledger/ledger.js';
import type { JobHandle } from './manager.js';

/** Ended jobs whose spec is kept for restart_background_agent. */
const RESTARTABLE_SPECS = 256;

/** What a restart needs of the manager. */
export interface RestartHost {
  readonly ledger: DeliveryLedger;
  readonly names: JobNames;
  readonly specs: Map<string, JobSpec>;
  readonly live: Map<string, Attempt>;
  /** Queues a reopened job and says so (`requeued`). */
  enqueue(record: Readonly<JobRecord>): void;
}

/**
 * Remy's restart: a job runs again with the same spec under the same id (and name). A running
 * job is stopped and re-queued when its attempt ends; an ended one goes back to the queue and
 * its undelivered result is superseded, never delivered. The specs of the newest ended jobs
 * are kept for it, so a long-lived session stays bounded.
 */
export class Restarts {
  readonly #host: RestartHost;
  /** Running jobs stopping to be re-queued, not to end. */
  readonly #pending = new Set<string>();
  readonly #endedSpecs = new Map<string, JobSpec>();

  constructor(host: RestartHost) {
    this.#host = host;
  }

  /** `reason`: why, for the record's notes (default: it was asked for). */
  restart(record: Readonly<JobRecord>, reason = 'restarted on request'): JobHandle {
    const { id } = record;
    const host = this.#host;
    if (record.state === 'running') {
      const attempt = host.live.get(id);
      if (!attempt || attempt.stopRequest) throw new JobError('JOB_CANCELLED', id, `job ${id} is already being stopped (${attempt?.stopRequest ?? 'ending'}); restart it once it has ended`);
      this.#pending.add(id);
      attempt.requestStop('cancel');
      return { id, label: record.label, state: 'running' };
    }
    if (record.state === 'queued') return { id, label: record.label, state: 'queued' };
    const spec = this.#endedSpecs.get(id);
    if (!spec) throw new JobError('JOB_UNKNOWN', id, `job ${id} ended too long ago to be restarted (its spec is no longer kept); spawn it again`);
    if (record.name !== undefined) {
      const holder = host.names.holder(record.name);
      if (holder !== undefined && holder !== id) throw new JobError('NAME_TAKEN', holder, `job ${id}'s name "${record.name}" now belongs to job ${holder}; cannot restart it under that name`);
      host.names.claim(record.name, id);
    }
    this.#endedSpecs.delete(id);
    host.specs.set(id, spec);
    const superseded = record.deliveredInTurn === undefined ? '; its undelivered result was superseded' : '';
    const reopened = host.ledger.reopen(id, `${reason} after it ended ${record.status ?? ''}${superseded}`);
    host.enqueue(reopened);
    return { id, label: reopened.label, state: 'queued' };
  }

  /** True (once) when this attempt ended because a restart stopped it. */
  takePending(id: string): boolean {
    return this.#pending.delete(id);
  }

  /** The job ended: keep its spec for a later restart. */
  keep(spec: JobSpec): void {
    this.#endedSpecs.set(spec.id, spec);
    if (this.#endedSpecs.size > RESTARTABLE_SPECS) this.#endedSpecs.delete(this.#endedSpecs.keys().next().value as string);
  }
}
