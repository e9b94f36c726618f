import type { ForkpoolConfig } from '../../shared/config.js';
import { sanitize } from '../views/delivery-format.js';
import type { JobRecord } from '../ledger/ledger.js';
import type { Deliveries } from './deliveries.js';
import { CHARS_PER_TOKEN, injectionBudgetTokens, planDelivery } from './delivery-budget.js';
import { staleFilesByJob, staleNote } from './staleness.js';

/** What a wait found (the shape of `WaitOutcome`, src/main/jobs/waits.ts). */
export interface WaitedJobs {
  ended: readonly Readonly<JobRecord>[];
  running: readonly Readonly<JobRecord>[];
  timedOut: boolean;
  waitedMs: number;
}

/** What a waited delivery produced: the text for the caller, and the jobs it delivered now. */
export interface WaitedDelivery {
  text: string;
  delivered: Readonly<JobRecord>[];
}

/** Room kept in the tool's answer for the lines after the block (its cap would cut, not page, an answer too long). */
const LINE_ROOM = 200;

/**
 * The results a wait returns (wait_background_agents): the ended jobs not yet delivered go into
 * one `<background_results>` block, fitted to a budget as a turn's delivery is (planDelivery:
 * `background.resultMaxChars` per job, what is cut named for read_background_result) and then
 * drained from the ledger in `turn`, so no later turn or follow-up delivers them again. A result
 * delivered earlier is named, not repeated; a job still running gets one line. Stale results
 * are annotated (never re-run here: the wait is the answer the model asked for).
 */
export async function deliverWaited(
  waited: WaitedJobs,
  mode: 'all' | 'any',
  turn: number,
  deliveries: Pick<Deliveries, 'drain'>,
  config: Pick<ForkpoolConfig, 'workspaceRoot' | 'background' | 'toolLimits' | 'delivery' | 'models' | 'model'>,
): Promise<WaitedDelivery> {
  const fresh = waited.ended.filter((job) => job.deliveredInTurn === undefined);
  // The one await: the plan and the drain below are one synchronous step (the drain takes only what is still undelivered).
  const checked = await staleFilesByJob(fresh, config.workspaceRoot);
  const earlier = waited.ended.filter((job) => job.deliveredInTurn !== undefined);
  const lines: string[] = [];
  for (const job of earlier)
    lines.push(
      `- ${job.id} "${sanitize(job.label)}" ended ${job.status ?? 'unknown'}; its result was delivered in turn ${job.deliveredInTurn} (not repeated: read_background_result(job_id: "${job.id}") reads it again).`,
    );
  for (const job of waited.running)
    lines.push(
      `- ${job.id} "${sanitize(job.label)}" is still ${job.state}: its result comes in a <background_results> block when it ends, or wait for it again.`,
    );

  const notes = new Map<string, string[]>();
  for (const job of fresh) {
    const stale = checked.get(job.id) ?? [];
    if (stale.length > 0) notes.set(job.id, [staleNote(stale, 'annotate')]);
  }
  const summary = summaryLine(waited, mode);
  const reserved = summary.length + lines.reduce((n, line) => n + line.length + 1, 0) + LINE_ROOM;
  const budgetChars = Math.max(0, Math.min(config.toolLimits.outputMaxChars, injectionBudgetTokens(config) * CHARS_PER_TOKEN) - reserved);
  const plan = planDelivery({ jobs: fresh, budgetChars, perJobMaxChars: config.background.resultMaxChars, notes });
  const chosen = new Set(plan.delivered.map((job) => job.id));
  // Drained, not just shown: the ledger now says delivered in this turn. Planned and drained in one
  // synchronous step, so nothing else can deliver one of them in between.
  const delivered = chosen.size > 0 ? deliveries.drain(turn, { accept: (record) => chosen.has(record.id), unread: plan.unread }) : [];
  return { text: [summary, plan.block, ...lines].filter((part) => part).join('\n'), delivered };
}

function summaryLine(waited: WaitedJobs, mode: 'all' | 'any'): string {
  const total = waited.ended.length + waited.running.length;
  const seconds = (waited.waitedMs / 1000).toFixed(1);
  const why = waited.timedOut ? ' The timeout passed first.' : waited.running.length > 0 ? ` Mode ${mode}: one ending was enough.` : '';
  return `Waited ${seconds} s for ${total} background job(s): ${waited.ended.length} ended, ${waited.running.length} still running.${why}`;
}
