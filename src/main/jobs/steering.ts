import { z } from 'zod';
import type { ForkpoolConfig } from '../../shared/config.js';
import { JobError } from '../../shared/errors.js';
import { STEERING_MAX_CHARS, type SteeringMessage } from '../../shared/protocol.js';
import type { LoopEvent } from '../../shared/loop-events.js';
import { configuredSecrets, redactSecrets } from '../../shared/tools/secrets.js';
import type { DeliveryLedger } from '../ledger/ledger.js';
import type { JobStore } from '../ledger/ledger-store.js';
import type { Job, JobState } from './job.js';
import type { SteerOptions, SteerReceipt } from './manager-api.js';

/** Messages one job may be sent over its life: a bound on what a record and a spec carry. */
export const MAX_MESSAGES_PER_JOB = 100;
const steerSchema = z.strictObject({
  text: z.string().trim().min(1, 'a message must not be empty').max(STEERING_MAX_CHARS),
  interrupt: z.boolean().optional(),
});

export interface SteeringHost {
  readonly config: ForkpoolConfig;
  readonly ledger: DeliveryLedger;
  /**
   * A running job's port carries a message to it: false for a remote executor that cannot
   * (a RemoteSpawner); BullMQ can (ExecutorCapabilities.steering).
   */
  readonly reachesRunning: boolean;
  /** The durable ledger's store, if any: each message is written to it before the job is given it. */
  readonly store: JobStore | undefined;
  /** A message was sent (the manager's `message` event). */
  sent(receipt: SteerReceipt): void;
}

/**
 * `send_to_background_agent`: a message to a job, recorded on its record. A running (or just
 * dispatched) job gets it over its port, before its next model call, or at once with
 * `interrupt` (its model call in flight is cancelled). A queued job keeps it and is given it as
 * it starts; a job waiting for its children keeps it and is given it when it resumes (a message
 * does not wake it: its children's results would then arrive to a job that is not waiting).
 * An ended job, or one being stopped, refuses it with `JOB_ENDED`.
 */
export class JobSteering {
  readonly #host: SteeringHost;
  readonly #secrets: string[];

  constructor(host: SteeringHost) {
    this.#host = host;
    this.#secrets = configuredSecrets(host.config);
  }

  send(job: Job, text: unknown, options: SteerOptions = {}): SteerReceipt {
    const parsed = steerSchema.safeParse({ text, ...options });
    if (!parsed.success) throw new JobError('TOOL_ARGUMENTS_INVALID', job.id, `invalid message for job ${job.id}: ${z.prettifyError(parsed.error)}`);
    if (job.isOver || job.stopping) throw ended(job);
    if (job.inbox.size >= MAX_MESSAGES_PER_JOB)
      throw new JobError('QUEUE_FULL', job.id, `job ${job.id} has been sent ${MAX_MESSAGES_PER_JOB} messages, the most one job may be sent`);
    if (job.attempt && !this.#host.reachesRunning)
      throw new JobError(
        'TOOL_FAILED',
        job.id,
        `job ${job.id} runs in another process (a remote executor): a message reaches such a job only while it is queued`,
      );
    const interrupt = parsed.data.interrupt ?? false;
    // A key pasted into a message goes neither to the model nor into the record.
    const message = redactSecrets(parsed.data.text, this.#secrets);
    const at = Date.now();
    const id = job.inbox.nextId;
    // Written whole before the job is given it, strict: a message a restart would lose is refused
    // (LEDGER_WRITE_FAILED) rather than accepted. The job's re-run after a restart is given it.
    const { store } = this.#host;
    if (store)
      this.#host.ledger.writeAside(
        `job ${job.id}'s message ${id}`,
        () => store.putMessage(job.id, { id, text: message, at, ...(interrupt ? { interrupt } : {}) }),
        'strict',
      );
    job.inbox.add(message, interrupt, at);
    this.#record(job);
    // An attempt's port is open from its dispatch: a job that has not said `started` reads it as it starts.
    const posted = job.attempt?.post({ type: 'steer', id, text: message, interrupt }) ?? false;
    const receipt: SteerReceipt = { jobId: job.id, label: job.record.label, message: id, state: job.state, delivery: posted ? 'posted' : 'kept', interrupt };
    this.#host.sent(receipt);
    return receipt;
  }

  /** What a launch of `job` is handed (see JobInbox.forLaunch, inbox.ts); recorded as not yet received. */
  forLaunch(job: Job, resumed: boolean): { steering?: SteeringMessage[] } {
    if (job.inbox.size === 0) return {};
    const steering = job.inbox.forLaunch(resumed);
    this.#record(job);
    return steering.length > 0 ? { steering } : {};
  }

  /** A job's progress: `messages_received` marks those messages received on its record. */
  onProgress(job: Job | undefined, event: LoopEvent): void {
    if (!job || event.type !== 'messages_received' || job.isOver) return;
    if (job.inbox.taken(event.ids, Date.now())) this.#record(job);
  }

  #record(job: Job): void {
    this.#host.ledger.noteMessages(job.id, job.inbox.records());
  }
}

/** The refusal names the job's state: ended (and how), or being stopped. */
function ended(job: Job): JobError {
  const state: JobState = job.state;
  const record = job.record;
  const now = job.isOver ? `has ended (${state}, status ${record.status ?? 'unknown'})` : `is being stopped (${state})`;
  return new JobError('JOB_ENDED', job.id, `job ${job.id} ("${record.label}") ${now}: a message can no longer reach it`);
}
