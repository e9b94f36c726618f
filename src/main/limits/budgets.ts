import { agentEntry } from '../../shared/agents.js';
import { BUDGET_NAMES, budgetReport, formatBudgetAmount, spentOf, type BudgetLimits, type BudgetName, type BudgetReport } from '../../shared/budget.js';
import type { ForkpoolConfig } from '../../shared/config.js';
import { JobError } from '../../shared/errors.js';
import { costOf, usageCostUsd } from '../../shared/models.js';
import { totalUsage, type UsageByModel } from '../../shared/usage.js';
import { SessionBudgetPool, type Lease, type PoolSnapshot } from './budget-pool.js';
import type { JobEnding, JobRecord } from '../ledger/ledger.js';

/**
 * The main thread's side of budgets: a job's limits at spawn (its agent's, or tighter ones
 * the spawn asks for), the session pool's leases (admission), the wall-clock stop, and the
 * spent/remaining report each ended record carries. The worker meters the rest (budget.ts).
 */

/** An agent's limits: its own `budget` over `background.budget` (a fork of the parent: the latter alone). */
export function agentBudgetLimits(config: ForkpoolConfig, agent: string | undefined): BudgetLimits {
  const own = agent === undefined ? undefined : agentEntry(config, agent).budget;
  const merged: BudgetLimits = {};
  for (const name of BUDGET_NAMES) {
    const value = own?.[name] ?? config.background.budget[name];
    if (value !== undefined) merged[name] = value;
  }
  return merged;
}

/**
 * A job's limits: its agent's, with each field the spawn sets taking its place. A spawn may
 * only tighten: a field above the agent's limit is refused with BUDGET_OVER_LIMIT, naming it.
 */
export function resolveJobBudget(config: ForkpoolConfig, agent: string | undefined, override: BudgetLimits | undefined): BudgetLimits {
  const limits = agentBudgetLimits(config, agent);
  if (!override) return limits;
  const who = agent === undefined ? 'a fork of the parent (background.budget)' : `agent "${agent}"`;
  for (const name of BUDGET_NAMES) {
    const asked = override[name];
    if (asked === undefined) continue;
    const limit = limits[name];
    if (limit !== undefined && asked > limit) {
      throw new JobError(
        'BUDGET_OVER_LIMIT',
        '-',
        `budget.${name}: ${who} may use at most ${formatBudgetAmount(name, limit)} per job; the spawn asked for ${formatBudgetAmount(name, asked)}. Ask for ${limit} or less, or leave it out.`,
      );
    }
    limits[name] = asked;
  }
  return limits;
}

/** The model a job of `agent` runs has a price in `models` (else its dollars cannot be metered). */
export function isPriced(config: ForkpoolConfig, agent: string | undefined): boolean {
  const model = (agent === undefined ? undefined : agentEntry(config, agent).model) ?? config.model;
  return usageCostUsd(config, model, { promptTokens: 0, completionTokens: 0, totalTokens: 0, requests: 0 }) !== undefined;
}

/** What to do with a job about to launch: run it, let it wait for leases to return, or refuse it. */
export type LaunchGate = { kind: 'go' } | { kind: 'wait' } | { kind: 'refuse'; error: JobError };

export class JobBudgets {
  readonly #config: ForkpoolConfig;
  readonly #pool: SessionBudgetPool | undefined;

  constructor(config: ForkpoolConfig) {
    this.#config = config;
    this.#pool = config.sessionBudget ? new SessionBudgetPool(config.sessionBudget) : undefined;
  }

  /**
   * At spawn: the job's limits, and in `refuse` mode its lease, taken now (so the spawns of one
   * batch cannot all pass on the same money). Throws BUDGET_OVER_LIMIT, or
   * SESSION_BUDGET_EXHAUSTED with a reason the model can read. `hold(id)` books the lease once
   * the job has its id.
   */
  admit(agent: string | undefined, override: BudgetLimits | undefined): { limits: BudgetLimits; hold: (id: string) => void } {
    const limits = resolveJobBudget(this.#config, agent, override);
    const pool = this.#pool;
    if (!pool) return { limits, hold: () => {} };
    const lease = this.#leaseFor(limits, agent);
    const who = agent === undefined ? 'this job' : 'this agent';
    const reason = pool.neverCovers(lease, who) ?? (pool.onExhausted === 'refuse' ? pool.shortfall(lease, who) : undefined);
    if (reason) throw exhausted(reason);
    return { limits, hold: (id) => (pool.onExhausted === 'refuse' ? void pool.take(id, lease) : undefined) };
  }

  /**
   * Just before a launch: a job that holds its lease (or can take it now) goes; otherwise, in
   * `queue` mode it waits while some lease that `canReturn` may still come back, else it is refused.
   */
  gate(id: string, limits: BudgetLimits | undefined, agent: string | undefined, canReturn: (holder: string) => boolean): LaunchGate {
    const pool = this.#pool;
    if (!pool || pool.holds(id)) return { kind: 'go' };
    const lease = this.#leaseFor(limits ?? {}, agent);
    if (pool.take(id, lease)) return { kind: 'go' };
    const who = agent === undefined ? 'this job' : 'this agent';
    const never = pool.neverCovers(lease, who);
    if (never) return { kind: 'refuse', error: exhausted(never) };
    if (pool.onExhausted === 'queue' && pool.holders().some(canReturn)) return { kind: 'wait' };
    return { kind: 'refuse', error: exhausted(pool.shortfall(lease, who) ?? 'the session budget is used up') };
  }

  /** The job ended: its actual spend is charged to the pool, the rest of its lease returns. */
  settle(id: string, usage: UsageByModel): void {
    this.#pool?.settle(id, { tokens: totalUsage(usage).totalTokens, usd: costOf(this.#config, usage).usd });
  }

  /** Milliseconds of wall clock left from `startedAt` (a resumed job keeps its first start), or undefined for no limit. */
  wallclockMs(limits: BudgetLimits | undefined, startedAt: number, now = Date.now()): number | undefined {
    const minutes = limits?.maxWallclockMinutes;
    return minutes === undefined ? undefined : Math.max(0, minutes * 60_000 - (now - startedAt));
  }

  report(limits: BudgetLimits, usage: UsageByModel, turns: number, elapsedMs: number, exceeded?: BudgetName): BudgetReport {
    return budgetReport(limits, spentOf(this.#config, usage, turns, elapsedMs), exceeded);
  }

  /** A job's report now: its record's once it ended, else from what its attempt has reported so far. */
  reportNow(
    record: Readonly<JobRecord> | undefined,
    live: { usage: UsageByModel; iterations: number } | undefined,
    now = Date.now(),
  ): BudgetReport | undefined {
    if (!record?.budget || record.budgetReport) return record?.budgetReport;
    const elapsed = record.startedAt === undefined ? 0 : now - record.startedAt;
    return this.report(record.budget, live?.usage ?? record.usage, live?.iterations ?? record.iterations, elapsed);
  }

  /** A job ends: its spend is charged to the pool (the rest of its lease returns), and its record gets its report. */
  atEnd(id: string, record: Readonly<JobRecord> | undefined, ending: JobEnding, now = Date.now()): Pick<JobEnding, 'budgetReport'> {
    this.settle(id, ending.usage);
    if (!record?.budget) return {};
    const elapsed = record.startedAt === undefined ? 0 : now - record.startedAt;
    return { budgetReport: this.report(record.budget, ending.usage, ending.iterations, elapsed, ending.budgetExceeded) };
  }

  /** The pool now, or undefined without `sessionBudget`. */
  pool(): PoolSnapshot | undefined {
    return this.#pool?.snapshot();
  }

  #leaseFor(limits: BudgetLimits, agent: string | undefined): Lease {
    return (this.#pool as SessionBudgetPool).leaseFor(limits, isPriced(this.#config, agent));
  }
}

function exhausted(reason: string): JobError {
  return new JobError('SESSION_BUDGET_EXHAUSTED', '-', `${reason}. Wait for running jobs to end, or spawn with a smaller budget.`);
}
