import { z } from 'zod';
import type { Usage, UsageByModel } from './usage.js';

/**
 * What the config knows about one model: its price (US dollars per million tokens, input and
 * output) and its context window in tokens. Budgets price usage with it; bounded delivery sizes
 * the results injected into one turn by the context window. A model with no price counts tokens
 * only (and says so); a model with no context window uses {@link DEFAULT_CONTEXT_WINDOW}.
 */
export const modelInfoSchema = z.strictObject({
  inputUsdPerMTok: z.number().min(0).max(10_000).optional(),
  outputUsdPerMTok: z.number().min(0).max(10_000).optional(),
  contextWindow: z.number().int().min(1_000).max(100_000_000).optional(),
});
export type ModelInfo = z.output<typeof modelInfoSchema>;

/** The context window assumed for a model the config does not describe. */
export const DEFAULT_CONTEXT_WINDOW = 128_000;

export interface ModelTable {
  models: Record<string, ModelInfo>;
}

export function contextWindowOf(config: ModelTable, model: string): number {
  return config.models[model]?.contextWindow ?? DEFAULT_CONTEXT_WINDOW;
}

/** The price of one model's usage, or undefined when the config has no price for it. */
export function usageCostUsd(config: ModelTable, model: string, usage: Usage): number | undefined {
  const info = config.models[model];
  if (info?.inputUsdPerMTok === undefined || info.outputUsdPerMTok === undefined) return undefined;
  return (usage.promptTokens * info.inputUsdPerMTok + usage.completionTokens * info.outputUsdPerMTok) / 1_000_000;
}

export interface CostSummary {
  /** The priced models' cost. */
  usd: number;
  /** Models with usage but no price in the config: their tokens are counted, not priced. */
  unpriced: string[];
}

export function costOf(config: ModelTable, byModel: UsageByModel): CostSummary {
  let usd = 0;
  const unpriced: string[] = [];
  for (const [model, usage] of Object.entries(byModel)) {
    const cost = usageCostUsd(config, model, usage);
    if (cost === undefined) {
      if (usage.totalTokens > 0) unpriced.push(model);
    } else usd += cost;
  }
  return { usd, unpriced };
}
