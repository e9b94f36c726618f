/** The per-model table: prices turn usage into dollars; unpriced models are named, not guessed. */
import { mkdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/shared/config.js';
import { contextWindowOf, costOf, DEFAULT_CONTEXT_WINDOW } from '../../src/shared/models.js';
import { configError } from '../helpers/config.js';

const WS = '/tmp/forkpool-models-test';
mkdirSync(WS, { recursive: true });

describe('config.models', () => {
  const config = parseConfig({
    workspaceRoot: WS,
    models: { priced: { inputUsdPerMTok: 2, outputUsdPerMTok: 8, contextWindow: 32_000 } },
  });

  it('prices input and output tokens separately and names models without a price', () => {
    const cost = costOf(config, {
      priced: { promptTokens: 500_000, completionTokens: 250_000, totalTokens: 750_000, requests: 3 },
      local: { promptTokens: 10, completionTokens: 5, totalTokens: 15, requests: 1 },
    });
    expect(cost.usd).toBeCloseTo(1 + 2, 10);
    expect(cost.unpriced).toEqual(['local']);
  });

  it('states a context window per model, with a default for the rest', () => {
    expect(contextWindowOf(config, 'priced')).toBe(32_000);
    expect(contextWindowOf(config, 'other')).toBe(DEFAULT_CONTEXT_WINDOW);
  });

  it('refuses a negative price, naming the field', () => {
    const error = configError(() => parseConfig({ workspaceRoot: WS, models: { m: { inputUsdPerMTok: -1 } } }));
    expect(error.issues[0]?.field).toBe('models.m.inputUsdPerMTok');
  });
});
