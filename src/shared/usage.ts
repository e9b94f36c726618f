/** Token usage arithmetic: sums per model, and per `<role>:<category>` bucket in a session. */
export interface Usage {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
  requests: number;
  /** Of `promptTokens`, those read from the provider's prompt cache (when it says). */
  cachedTokens?: number;
  /** Of `promptTokens`, those written to the provider's prompt cache (Anthropic's `cache_creation_input_tokens`). */
  cacheWriteTokens?: number;
}

/** Usage keyed by model name. */
export type UsageByModel = Record<string, Usage>;

export function emptyUsage(): Usage {
  return { promptTokens: 0, completionTokens: 0, totalTokens: 0, requests: 0 };
}

export function addUsage(a: Usage, b: Usage): Usage {
  return {
    promptTokens: a.promptTokens + b.promptTokens,
    completionTokens: a.completionTokens + b.completionTokens,
    totalTokens: a.totalTokens + b.totalTokens,
    requests: a.requests + b.requests,
    // Only when a side counted them: a sum of usages that never saw a cache keeps its shape.
    ...optionalSum('cachedTokens', a, b),
    ...optionalSum('cacheWriteTokens', a, b),
  };
}

function optionalSum(field: 'cachedTokens' | 'cacheWriteTokens', a: Usage, b: Usage): Partial<Usage> {
  if (a[field] === undefined && b[field] === undefined) return {};
  return { [field]: (a[field] ?? 0) + (b[field] ?? 0) };
}

/** Returns a new map with `usage` added under `model`. */
export function addModelUsage(byModel: UsageByModel, model: string, usage: Usage): UsageByModel {
  return { ...byModel, [model]: addUsage(byModel[model] ?? emptyUsage(), usage) };
}

export function mergeUsageByModel(a: UsageByModel, b: UsageByModel): UsageByModel {
  let out = { ...a };
  for (const [model, usage] of Object.entries(b)) out = addModelUsage(out, model, usage);
  return out;
}

export function totalUsage(byModel: UsageByModel): Usage {
  return Object.values(byModel).reduce(addUsage, emptyUsage());
}

/** From an OpenAI `usage` object (fields may be missing on some servers). */
export function usageFromApi(
  raw:
    { prompt_tokens?: number; completion_tokens?: number; total_tokens?: number; prompt_tokens_details?: { cached_tokens?: number } | null } | null | undefined,
): Usage {
  const prompt = raw?.prompt_tokens ?? 0;
  const completion = raw?.completion_tokens ?? 0;
  const cached = raw?.prompt_tokens_details?.cached_tokens;
  return {
    promptTokens: prompt,
    completionTokens: completion,
    totalTokens: raw?.total_tokens ?? prompt + completion,
    requests: 1,
    ...(typeof cached === 'number' && cached > 0 ? { cachedTokens: cached } : {}),
  };
}
