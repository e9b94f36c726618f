import type { ForkpoolConfig } from '../../shared/config.js';
import type { Logger } from 'pino';
import { CHARS_PER_TOKEN, injectionBudgetTokens, planDelivery } from './delivery-budget.js';
import type { JobRecord } from '../ledger/ledger.js';
import type { BackgroundManager } from '../jobs/manager.js';
import type { Deliveries } from './deliveries.js';
import { staleFilesByJob, staleNote, type StaleFile } from './staleness.js';
import type { ResultWrap } from '../views/delivery-format.js';

/** What one turn's delivery produced. */
export interface TurnDeliveryResult {
  /** The `<background_results>` block, '' when nothing is delivered. */
  block: string;
  /** Jobs delivered in this turn (whole or in part). */
  jobs: Readonly<JobRecord>[];
  /** Ended jobs left for the next turn: the budget had no room for even their header. */
  deferred: number;
  /** Jobs re-run instead of delivered: their results rested on files changed since (`staleResults: "rerun"`). */
  rerun: string[];
}

/**
 * One turn's delivery of background results to the parent: each result checked against the
 * workspace (stale-on-arrival: annotated, or re-run once), then all of them fitted into the
 * turn's injection budget (see planDelivery), and only then drained from the ledger, with what
 * each left out recorded for paging.
 */
export class TurnDelivery {
  readonly #manager: Pick<BackgroundManager, 'restart'>;
  readonly #deliveries: Pick<Deliveries, 'undelivered' | 'drain'>;
  readonly #config: ForkpoolConfig;
  readonly #logger: Logger | undefined;
  /** Jobs already re-run once because their result was stale: never twice. */
  readonly #rerunOnce = new Set<string>();

  constructor(manager: Pick<BackgroundManager, 'restart'>, deliveries: Pick<Deliveries, 'undelivered' | 'drain'>, config: ForkpoolConfig, logger?: Logger) {
    this.#manager = manager;
    this.#deliveries = deliveries;
    this.#config = config;
    this.#logger = logger;
  }

  /** The budget in characters for the whole block (see `delivery.maxInjectedTokens`). */
  get budgetChars(): number {
    return injectionBudgetTokens(this.#config) * CHARS_PER_TOKEN;
  }

  /** The job was re-run instead of delivered and its new result is not delivered yet. */
  isRerun(jobId: string): boolean {
    return this.#rerunOnce.has(jobId);
  }

  /**
   * The files each waiting result rests on, checked against the workspace (staleness.ts): the
   * one asynchronous step of a delivery, awaited before {@link deliver}, which takes its answer.
   */
  checkStale(): Promise<ReadonlyMap<string, StaleFile[]>> {
    return staleFilesByJob(this.#deliveries.undelivered(), this.#config.workspaceRoot);
  }

  /**
   * `checked`: what {@link checkStale} found, just before; `reservedChars`: what else this turn
   * injects (the alerts block), taken off the budget first; `wrap`: the format's frame of each
   * result (see `delivery.format`). Synchronous: planned and drained in one step, so nothing
   * delivers in between.
   */
  deliver(turn: number, checked: ReadonlyMap<string, StaleFile[]>, reservedChars = 0, wrap?: ResultWrap): TurnDeliveryResult {
    const candidates: Readonly<JobRecord>[] = [];
    const notes = new Map<string, string[]>();
    const rerun: string[] = [];
    for (const job of this.#deliveries.undelivered()) {
      const stale = checked.get(job.id);
      // It ended while the files were checked: it waits for the next delivery, as if it had ended just after this one.
      if (stale === undefined) continue;
      if (stale.length > 0 && this.#config.delivery.staleResults === 'rerun' && !this.#rerunOnce.has(job.id) && this.#rerun(job)) {
        rerun.push(job.id);
        continue;
      }
      if (stale.length > 0) notes.set(job.id, [staleNote(stale, this.#rerunOnce.has(job.id) ? 'rerun-once-already' : 'annotate')]);
      candidates.push(job);
    }
    const plan = planDelivery({
      jobs: candidates,
      budgetChars: Math.max(0, this.budgetChars - reservedChars),
      perJobMaxChars: this.#config.background.resultMaxChars,
      notes,
      wrap,
    });
    const chosen = new Set(plan.delivered.map((j) => j.id));
    const jobs = plan.delivered.length > 0 ? this.#deliveries.drain(turn, { accept: (r) => chosen.has(r.id), unread: plan.unread }) : [];
    for (const job of jobs) this.#rerunOnce.delete(job.id);
    return { block: plan.block, jobs, deferred: plan.deferred, rerun };
  }

  #rerun(job: Readonly<JobRecord>): boolean {
    try {
      this.#manager.restart(job.id, 're-run once: files it read changed before its result was delivered');
      this.#rerunOnce.add(job.id);
      return true;
    } catch (error) {
      // Its spec is no longer kept, or its name is taken: delivered with the stale note instead.
      this.#logger?.warn({ jobId: job.id, err: error }, 'a stale result could not be re-run; delivering it annotated');
      return false;
    }
  }
}
