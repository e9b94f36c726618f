import { formatUsd } from '../../shared/budget.js';

/** What one job holds of the session's pool while it runs: its own limits, in the pool's units. */
export interface Lease {
  tokens: number;
  usd: number;
}

export interface SessionBudgetLimits {
  maxTokens?: number | undefined;
  maxCostUsd?: number | undefined;
  onExhausted: 'refuse' | 'queue';
}

/** The pool as lists and status lines show it; a field is absent when the pool has no such limit. */
export interface PoolSnapshot {
  maxTokens?: number;
  maxCostUsd?: number;
  /** Charged to jobs that ended (their actual spend). */
  spentTokens: number;
  spentUsd: number;
  /** Held by jobs that run (or wait for their children). */
  leasedTokens: number;
  leasedUsd: number;
  /** What a new spawn could lease now: max − spent − leased, never below 0. */
  remainingTokens?: number;
  remainingUsd?: number;
  leases: number;
  onExhausted: 'refuse' | 'queue';
}

/**
 * One token and dollar pool per session (a manager). A job leases its own limits before it
 * runs; when it ends, its actual spend is charged and the rest of its lease returns. So the pool
 * can never be overspent by more than the last model call of each running job (a job stops at
 * its own limit, which is what it leased).
 */
export class SessionBudgetPool {
  readonly #limits: SessionBudgetLimits;
  readonly #leases = new Map<string, Lease>();
  #spentTokens = 0;
  #spentUsd = 0;

  constructor(limits: SessionBudgetLimits) {
    this.#limits = limits;
  }

  get onExhausted(): 'refuse' | 'queue' {
    return this.#limits.onExhausted;
  }

  /** The lease a job with these limits needs; `priced`: its model has a price (else dollars cannot be metered). */
  leaseFor(limits: { maxTokens?: number | undefined; maxCostUsd?: number | undefined }, priced: boolean): Lease {
    return {
      tokens: this.#limits.maxTokens !== undefined ? (limits.maxTokens ?? 0) : 0,
      usd: this.#limits.maxCostUsd !== undefined && priced ? (limits.maxCostUsd ?? 0) : 0,
    };
  }

  holds(id: string): boolean {
    return this.#leases.has(id);
  }

  /** Ids holding a lease now. */
  holders(): string[] {
    return [...this.#leases.keys()];
  }

  /**
   * Why the pool cannot cover `lease` now (a sentence the model can read), or undefined when
   * it can. `who`: "this agent" or "this job".
   */
  shortfall(lease: Lease, who: string): string | undefined {
    return this.#shortfall(lease, who, this.#leased());
  }

  /** Why the pool can never cover `lease`, even once every lease has returned (spend only grows). */
  neverCovers(lease: Lease, who: string): string | undefined {
    return this.#shortfall(lease, who, { tokens: 0, usd: 0 });
  }

  /** Takes the lease if the pool covers it; false otherwise. */
  take(id: string, lease: Lease): boolean {
    if (this.#leases.has(id)) return true;
    if (this.shortfall(lease, '') !== undefined) return false;
    this.#leases.set(id, lease);
    return true;
  }

  /** The job ended: its actual spend is charged and the rest of its lease returns. */
  settle(id: string, spent: Lease): void {
    if (!this.#leases.delete(id)) return;
    this.#spentTokens += spent.tokens;
    this.#spentUsd += spent.usd;
  }

  snapshot(): PoolSnapshot {
    const leased = this.#leased();
    const { maxTokens, maxCostUsd, onExhausted } = this.#limits;
    return {
      ...(maxTokens !== undefined ? { maxTokens, remainingTokens: Math.max(0, maxTokens - this.#spentTokens - leased.tokens) } : {}),
      ...(maxCostUsd !== undefined ? { maxCostUsd, remainingUsd: round(Math.max(0, maxCostUsd - this.#spentUsd - leased.usd)) } : {}),
      spentTokens: this.#spentTokens,
      spentUsd: round(this.#spentUsd),
      leasedTokens: leased.tokens,
      leasedUsd: round(leased.usd),
      leases: this.#leases.size,
      onExhausted,
    };
  }

  #leased(): Lease {
    let tokens = 0;
    let usd = 0;
    for (const lease of this.#leases.values()) {
      tokens += lease.tokens;
      usd += lease.usd;
    }
    return { tokens, usd };
  }

  #shortfall(lease: Lease, who: string, leased: Lease): string | undefined {
    const { maxTokens, maxCostUsd } = this.#limits;
    // A tiny epsilon: prices per million tokens leave float dust in the sums.
    if (maxCostUsd !== undefined && lease.usd > 0) {
      const left = Math.max(0, maxCostUsd - this.#spentUsd - leased.usd);
      // "Left" means free for a new job: what running jobs hold is said apart, or "$0.00 left" reads
      // as spent beside a total that says "$1.99 of $2.00 left".
      const held =
        leased.usd > 0 ? ` (${formatUsd(Math.max(0, maxCostUsd - this.#spentUsd))} unspent, ${formatUsd(leased.usd)} of it held by running jobs)` : '';
      if (lease.usd > left + 1e-9) return `${formatUsd(left)} free in this session's background budget${held}; ${who} may spend up to ${formatUsd(lease.usd)}`;
    }
    if (maxTokens !== undefined && lease.tokens > 0) {
      const left = Math.max(0, maxTokens - this.#spentTokens - leased.tokens);
      const held = leased.tokens > 0 ? ` (${Math.max(0, maxTokens - this.#spentTokens)} unspent, ${leased.tokens} of them held by running jobs)` : '';
      if (lease.tokens > left) return `${left} tokens free in this session's background budget${held}; ${who} may spend up to ${lease.tokens} tokens`;
    }
    return undefined;
  }
}

/** `$0.40 of $2.00 left`, `12000 of 50000 tokens left`; empty when there is no pool. */
export function describePool(pool: PoolSnapshot | undefined): string {
  if (!pool) return '';
  const parts: string[] = [];
  if (pool.maxCostUsd !== undefined) parts.push(`${formatUsd(pool.remainingUsd ?? 0)} of ${formatUsd(pool.maxCostUsd)}`);
  if (pool.maxTokens !== undefined) parts.push(`${pool.remainingTokens ?? 0} of ${pool.maxTokens} tokens`);
  const leased = pool.leases > 0 ? ` (${pool.leases} job(s) hold leases)` : '';
  return `session budget: ${parts.join(', ')} left${leased}`;
}

function round(value: number): number {
  return Math.round(value * 1e6) / 1e6;
}
