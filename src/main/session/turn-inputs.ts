import type { Logger } from 'pino';
import type { ForkpoolConfig } from '../../shared/config.js';
import { LedgerWriteError } from '../../shared/errors.js';
import { AUTOMATED_RESULTS_MARKER, FOLLOW_UP_PROMPTS, type FollowUpPromptKind } from '../../shared/prompts.js';
import { formatBackgroundReports, resultWrapOf } from '../views/delivery-format.js';
import type { FollowUpCause, FollowUpReason } from '../views/follow-up.js';
import { TurnDelivery, type TurnDeliveryResult } from '../delivery/turn-delivery.js';
import type { Deliveries } from '../delivery/deliveries.js';
import type { JobRecord } from '../ledger/ledger.js';
import type { BackgroundManager, JobAlert } from '../jobs/manager.js';
import { formatStillRunning } from '../jobs/joins.js';
import { formatRerunning, type StaleFile } from '../delivery/staleness.js';

/**
 * Whether a job's ending starts a follow-up turn of its own. A user's job is not wave-gated: it
 * reaches the parent as soon as the parent is free; so does a job in no wave (a restarted one,
 * one spawned through the manager directly). A nested job's result went to its parent job, not
 * here. A user's job the person stopped (`/bg stop`, the panel: it ends `cancelled`) spends no
 * model turn: the person saw it end in the transcript, and the model is given it at its next
 * turn boundary (the person's next turn, or a follow-up something else starts).
 */
export function endingStartsFollowUp(job: Pick<Readonly<JobRecord>, 'parentJobId' | 'role' | 'wave' | 'status'>): boolean {
  if (job.parentJobId !== undefined) return false;
  if (job.role === 'user' && job.status === 'cancelled') return false;
  return job.role === 'user' || job.wave === null;
}

/**
 * `delivery.format: "remy"` (the seed's "if Remy is idle — deliver immediately"): a job that ends
 * while the parent is idle reaches it at once, in a follow-up of its own, not held for its wave.
 * Not a nested job (its result went to its parent job), and not a stopped one: whoever stopped it
 * (a person, the parent's model, Esc on its call) knows, and it is given at the next turn boundary.
 */
export function endingDeliversAtOnce(
  job: Pick<Readonly<JobRecord>, 'parentJobId' | 'status'>,
  format: ForkpoolConfig['delivery']['format'],
  parentIdle: boolean,
): boolean {
  return format === 'remy' && parentIdle && job.parentJobId === undefined && job.status !== 'cancelled';
}

/** What a turn's model call gets before (or as) its input. */
export interface PreparedTurn {
  /** The turn's input: the person's words, or the follow-up prompt chosen by what it delivers. */
  input: string;
  /** Text put before the input: reports, results, what is still running ('' when none). */
  preamble: string;
  /**
   * The preamble is a message of its own, before the person's (the `remy` format: forkpool's
   * hidden automated message). Otherwise it opens the turn's one user message.
   */
  apart: boolean;
  /** A follow-up's cause (for its `turn_start` event); undefined for a person's turn. */
  cause?: FollowUpCause;
  /** Jobs delivered in this turn. */
  delivered: Readonly<JobRecord>[];
  /** Results the budget had no room for: a follow-up delivers them. */
  deferred: number;
}

/**
 * Everything a parent turn is handed besides the person's words: alerts since the last turn,
 * the ended results (one budget, see TurnDelivery), the jobs an early wave left running, in the
 * configured format (`delivery.format`); for a follow-up, its prompt and cause. A follow-up with
 * nothing to deliver (its results were re-run instead, or their delivery could not be recorded)
 * is not prepared at all: no turn says results are "in the block above" when there is none.
 */
export class TurnInputs {
  readonly #manager: Pick<BackgroundManager, 'get'>;
  readonly #delivery: TurnDelivery;
  readonly #config: ForkpoolConfig;
  readonly #logger: Logger | undefined;
  readonly #onDropped: (alert: JobAlert) => void;
  /** Alerts not yet shown to the model; bounded by `background.alertBufferMax`. */
  readonly #alerts: JobAlert[] = [];
  #alertsDropped = 0;
  /** Per wave that joined early: its jobs still running then, listed at the next delivery. */
  readonly #stillRunning = new Map<number, string[]>();
  /** Why the follow-up now owed is owed (cleared when one is prepared). */
  #reasons: FollowUpReason[] = [];

  constructor(options: {
    manager: BackgroundManager;
    deliveries: Deliveries;
    config: ForkpoolConfig;
    logger?: Logger | undefined;
    onAlertDropped: (alert: JobAlert) => void;
  }) {
    this.#manager = options.manager;
    this.#config = options.config;
    this.#logger = options.logger;
    this.#onDropped = options.onAlertDropped;
    this.#delivery = new TurnDelivery(options.manager, options.deliveries, options.config, options.logger);
  }

  /** A job's alert: kept for the next turn; past the buffer's bound the oldest is dropped. */
  addAlert(alert: JobAlert): void {
    this.#alerts.push(alert);
    if (this.#alerts.length <= this.#config.background.alertBufferMax) return;
    const dropped = this.#alerts.shift() as JobAlert;
    this.#alertsDropped++;
    this.#logger?.warn({ jobId: dropped.jobId, bound: this.#config.background.alertBufferMax }, 'alert buffer full: the oldest alert was dropped');
    this.#onDropped(dropped);
  }

  /** A wave's join let its follow-up come early: `pending` are listed, once, as still running. */
  joinedEarly(wave: number, reason: 'quorum' | 'deadline', ended: number, pending: readonly string[]): void {
    this.#stillRunning.set(wave, [...pending]);
    this.addReason({ kind: reason, wave, ended, of: ended + pending.length });
  }

  /** A reason for the follow-up now owed (each kind of reason once per wave). */
  addReason(reason: FollowUpReason): void {
    const same = (r: FollowUpReason) => r.kind === reason.kind && ('wave' in r ? 'wave' in reason && r.wave === reason.wave : true);
    if (!this.#reasons.some(same)) this.#reasons.push(reason);
  }

  /** The job was re-run instead of delivered (stale): its next end owes a follow-up. */
  isRerun(jobId: string): boolean {
    return this.#delivery.isRerun(jobId);
  }

  /**
   * The input of turn `turn`: the person's `input`, or for a follow-up (`input` undefined) its
   * prompt. Results are drained (marked delivered in `turn`) here. A follow-up with no result to
   * deliver returns undefined and takes nothing: alerts and reasons wait for the next turn.
   */
  async prepare(turn: number, input: string | undefined): Promise<PreparedTurn | undefined> {
    // The one await: everything after it (alerts, results, drain) is taken in one synchronous step.
    const checked = await this.#delivery.checkStale();
    const remy = this.#config.delivery.format === 'remy';
    const reports = formatBackgroundReports(this.#alerts, this.#alertsDropped);
    // One budget for everything this turn injects: the marker and the alerts first, then the results.
    const reserved = (reports ? reports.length + 2 : 0) + (remy ? AUTOMATED_RESULTS_MARKER.length + 1 : 0);
    const delivery = this.#deliver(turn, checked, reserved);
    const followUp = input === undefined;
    if (followUp && delivery.jobs.length === 0) return undefined;
    this.#alerts.splice(0);
    this.#alertsDropped = 0;
    const stillRunning = this.#takeStillRunning();
    const rerunning = formatRerunning(delivery.rerun.flatMap((id) => this.#manager.get(id) ?? []));
    // In the remy format the block comes right after the marker; reports and lists follow it.
    const parts = (remy ? [delivery.block, reports] : [reports, delivery.block]).concat(stillRunning.text, rerunning).filter((p) => p);
    const body = parts.join('\n\n');
    const preamble = body && remy ? `${AUTOMATED_RESULTS_MARKER}\n${body}` : body;
    const reasons = this.#reasons.splice(0);
    const prepared: PreparedTurn = { input: input ?? '', preamble, apart: remy && !followUp, delivered: delivery.jobs, deferred: delivery.deferred };
    if (!followUp) return prepared;
    const user = delivery.jobs.filter((job) => job.role === 'user').length;
    const cause: FollowUpCause = {
      reasons,
      delivered: { agents: delivery.jobs.length - user, user },
      stillRunning: stillRunning.count + delivery.rerun.length,
    };
    return { ...prepared, input: FOLLOW_UP_PROMPTS[promptKind(cause)], cause };
  }

  #deliver(turn: number, checked: ReadonlyMap<string, StaleFile[]>, reservedChars: number): TurnDeliveryResult {
    try {
      return this.#delivery.deliver(turn, checked, reservedChars, resultWrapOf(this.#config.delivery.format));
    } catch (error) {
      if (!(error instanceof LedgerWriteError)) throw error;
      // The delivery could not be recorded, so none was made: the results wait (not lost) for a
      // later turn, and this one runs without them. No follow-up runs for it: on a full disk it
      // would fail the same way, turn after turn.
      this.#logger?.error({ err: error, turn }, 'durable ledger: results could not be marked delivered; they wait for a later turn');
      return { block: '', jobs: [], deferred: 0, rerun: [] };
    }
  }

  /** The early-joined waves' jobs that have not ended yet, once per wave. */
  #takeStillRunning(): { text: string; count: number } {
    let count = 0;
    const blocks = [...this.#stillRunning].map(([wave, ids]) => {
      const running = ids.flatMap((id) => {
        const job = this.#manager.get(id);
        return job && job.state !== 'ended' ? [job] : [];
      });
      count += running.length;
      return formatStillRunning(wave, running);
    });
    this.#stillRunning.clear();
    return { text: blocks.filter((b) => b).join('\n'), count };
  }
}

/** The follow-up prompt's wording by what it delivers: a person's jobs, part of a wave, or a whole one. */
function promptKind(cause: FollowUpCause): FollowUpPromptKind {
  const { agents, user } = cause.delivered;
  if (agents > 0 && user > 0) return 'mixed';
  if (user > 0) return 'user';
  return cause.stillRunning > 0 ? 'partial' : 'agents';
}
