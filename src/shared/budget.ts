import { z } from 'zod';
import { costOf, type ModelTable } from './models.js';
import { addModelUsage, totalUsage, type Usage, type UsageByModel } from './usage.js';
import { MAX_TIMEOUT_MINUTES } from './config-bounds.js';

/**
 * Per-job budgets (core-agent's `Budgets`): model calls, tokens, dollars and wall clock. Pure
 * arithmetic shared by both threads: the worker meters its own loop (wrap-up message at 90%,
 * stop at 100%), the main thread resolves limits at spawn, arms the wall clock and reports.
 */

export const BUDGET_NAMES = ['maxTurns', 'maxTokens', 'maxCostUsd', 'maxWallclockMinutes'] as const;
export type BudgetName = (typeof BUDGET_NAMES)[number];

/** The share of a budget at which the job is told, once, to wrap up and answer now. */
export const WRAP_UP_SHARE = 0.9;

/** Timers hold a signed 32-bit millisecond count: a longer wall-clock budget could not be armed. */
const MAX_WALLCLOCK_MINUTES = MAX_TIMEOUT_MINUTES;

/** One job's limits; an unset field is no limit on that dimension. */
export const budgetLimitsSchema = z.strictObject({
  /**
   * Model calls: the one limit on a job's model calls (a wrap-up message before the last ones,
   * then `budget_exceeded`). Always set on a spawned job (`background.budget.maxTurns` by default).
   */
  maxTurns: z.number().int().min(1).max(100_000).optional(),
  /** Input + output tokens, over every model call. */
  maxTokens: z.number().int().min(1).max(1_000_000_000_000).optional(),
  /** US dollars, priced from `models`; a model without a price counts tokens only. */
  maxCostUsd: z.number().positive().max(1_000_000).optional(),
  /** Minutes from the job's start (queue time does not count). */
  maxWallclockMinutes: z.number().positive().max(MAX_WALLCLOCK_MINUTES).optional(),
});
export type BudgetLimits = z.output<typeof budgetLimitsSchema>;

/** What a job has spent, in the units of its budgets. */
export interface BudgetSpent {
  turns: number;
  tokens: number;
  /** The priced models' cost; models in `unpricedModels` are not in it. */
  costUsd: number;
  wallclockMinutes: number;
  /** Models with usage but no price in `models`: their tokens count, their cost is unknown. */
  unpricedModels: string[];
}

/** Limits, spent and remaining side by side, as records, lists and JSON lines show them. */
export interface BudgetReport {
  limits: BudgetLimits;
  spent: BudgetSpent;
  /** Per limited dimension: what is left (never below 0). */
  remaining: Partial<Record<BudgetName, number>>;
  /** The cost budget cannot be enforced: the job used a model with no price (tokens only). */
  costUnpriced?: true;
  exceeded?: BudgetName;
}

export function spentOf(models: ModelTable, usage: UsageByModel, turns: number, elapsedMs: number): BudgetSpent {
  const cost = costOf(models, usage);
  return { turns, tokens: totalUsage(usage).totalTokens, costUsd: cost.usd, wallclockMinutes: Math.max(0, elapsedMs) / 60_000, unpricedModels: cost.unpriced };
}

function spentIn(name: BudgetName, spent: BudgetSpent): number {
  switch (name) {
    case 'maxTurns':
      return spent.turns;
    case 'maxTokens':
      return spent.tokens;
    case 'maxCostUsd':
      return spent.costUsd;
    case 'maxWallclockMinutes':
      return spent.wallclockMinutes;
  }
}

/** Each limited dimension's share used (1 = all of it), in {@link BUDGET_NAMES} order. */
export function budgetShares(limits: BudgetLimits, spent: BudgetSpent): Array<{ name: BudgetName; share: number }> {
  return BUDGET_NAMES.flatMap((name) => {
    const limit = limits[name];
    return limit === undefined ? [] : [{ name, share: spentIn(name, spent) / limit }];
  });
}

export function budgetReport(limits: BudgetLimits, spent: BudgetSpent, exceeded?: BudgetName): BudgetReport {
  const remaining: Partial<Record<BudgetName, number>> = {};
  for (const name of BUDGET_NAMES) {
    const limit = limits[name];
    if (limit !== undefined) remaining[name] = round(Math.max(0, limit - spentIn(name, spent)));
  }
  const rounded = { ...spent, costUsd: round(spent.costUsd), wallclockMinutes: round(spent.wallclockMinutes) };
  return {
    limits: { ...limits },
    spent: rounded,
    remaining,
    ...(limits.maxCostUsd !== undefined && spent.unpricedModels.length > 0 ? { costUnpriced: true as const } : {}),
    ...(exceeded ? { exceeded } : {}),
  };
}

/** Six significant decimals: dollars from per-million prices, minutes from milliseconds. */
function round(value: number): number {
  return Math.round(value * 1e6) / 1e6;
}

/** `$0.40`, `12000 tokens`, `45 model calls`, `9.0 minutes`. */
export function formatBudgetAmount(name: BudgetName, value: number): string {
  switch (name) {
    case 'maxTurns':
      return `${Math.round(value)} model calls`;
    case 'maxTokens':
      return `${Math.round(value)} tokens`;
    case 'maxCostUsd':
      return formatUsd(value);
    case 'maxWallclockMinutes':
      return `${value.toFixed(value < 1 ? 2 : 1)} minutes`;
  }
}

export function formatUsd(value: number): string {
  return value >= 0.01 || value === 0 ? `$${value.toFixed(2)}` : `$${value.toPrecision(2)}`;
}

/** The message a job reads at 90% of a budget. Exported: tests and the sim recognise it. */
export const WRAP_UP_MARKER = '[forkpool budget]';

export function wrapUpText(name: BudgetName, limits: BudgetLimits, spent: BudgetSpent): string {
  const limit = limits[name] as number;
  return (
    `${WRAP_UP_MARKER} You have used ${formatBudgetAmount(name, spentIn(name, spent))} of your ${name} budget of ${formatBudgetAmount(name, limit)}. ` +
    'Wrap up now: make no more tool calls and give your final answer with what you have found so far.'
  );
}

export function exceededText(name: BudgetName, limits: BudgetLimits, spent: BudgetSpent): string {
  return `budget ${name} exhausted: spent ${formatBudgetAmount(name, spentIn(name, spent))} of ${formatBudgetAmount(name, limits[name] as number)}; stopped with what it had`;
}

/**
 * Meters one job's run against its limits (in the worker). Counts what the job spent before a
 * resume, sends the wrap-up message once, and says which budget ran out.
 */
export class BudgetMeter {
  readonly #limits: BudgetLimits;
  readonly #models: ModelTable;
  readonly #startedAt: number;
  readonly #now: () => number;
  #usage: UsageByModel;
  #turns: number;
  #wrapUpSent: boolean;

  constructor(
    limits: BudgetLimits,
    models: ModelTable,
    start: { usage?: UsageByModel; turns?: number; wrapUpSent?: boolean; startedAt?: number } = {},
    now: () => number = Date.now,
  ) {
    this.#limits = limits;
    this.#models = models;
    this.#now = now;
    this.#usage = start.usage ?? {};
    this.#turns = start.turns ?? 0;
    this.#wrapUpSent = start.wrapUpSent ?? false;
    this.#startedAt = start.startedAt ?? now();
  }

  get wrapUpSent(): boolean {
    return this.#wrapUpSent;
  }

  /** One model call's usage. */
  record(model: string, usage: Usage): void {
    this.#usage = addModelUsage(this.#usage, model, usage);
    this.#turns++;
  }

  spent(): BudgetSpent {
    return spentOf(this.#models, this.#usage, this.#turns, this.#now() - this.#startedAt);
  }

  /** The first budget used up (100% or more), if any. */
  exhausted(): BudgetName | undefined {
    return budgetShares(this.#limits, this.spent()).find((s) => s.share >= 1)?.name;
  }

  /** The wrap-up message, once, when a budget has reached {@link WRAP_UP_SHARE}; else undefined. */
  wrapUp(): string | undefined {
    if (this.#wrapUpSent) return undefined;
    const spent = this.spent();
    // Turns count the call about to be made: with 10 turns the 9th call is told, so a small
    // budget is warned before its last call and not only after it.
    const maxTurns = this.#limits.maxTurns;
    const shares = budgetShares(this.#limits, spent).map((s) => (s.name === 'maxTurns' && maxTurns ? { ...s, share: (spent.turns + 1) / maxTurns } : s));
    const near = shares.find((s) => s.share >= WRAP_UP_SHARE);
    if (!near) return undefined;
    this.#wrapUpSent = true;
    return wrapUpText(near.name, this.#limits, spent);
  }

  exceededMessage(name: BudgetName): string {
    return exceededText(name, this.#limits, this.spent());
  }
}

/** One line of a report: `turns 3/10, tokens 1200, $0.20/$1.00, 0.1/10 min`, and what ran out. */
export function describeBudget(report: BudgetReport): string {
  const { limits, spent } = report;
  const of = (value: string, limit: string | undefined) => (limit === undefined ? value : `${value}/${limit}`);
  const parts = [
    `turns ${of(String(spent.turns), limits.maxTurns?.toString())}`,
    `tokens ${of(String(spent.tokens), limits.maxTokens?.toString())}`,
    report.costUnpriced || (spent.unpricedModels.length > 0 && spent.costUsd === 0)
      ? `cost unpriced (no price for ${spent.unpricedModels.join(', ')}: tokens only)`
      : `cost ${of(formatUsd(spent.costUsd), limits.maxCostUsd === undefined ? undefined : formatUsd(limits.maxCostUsd))}`,
    `wall ${of(spent.wallclockMinutes.toFixed(1), limits.maxWallclockMinutes?.toString())} min`,
  ];
  return `${parts.join(', ')}${report.exceeded ? `; budget ${report.exceeded} ran out` : ''}`;
}
