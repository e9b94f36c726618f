/**
 * Budgets over HTTP (issue 10 §1, issue 12's cost metric): `POST /v1/jobs` takes a budget and
 * refuses one above the agent's limit with a 400 naming the field; job views carry limits,
 * spent and remaining; `/metrics` exports cost by role and model from the price table, and
 * an unpriced model is absent from the cost metric while its tokens are counted.
 */
import { describe, expect, it } from 'vitest';
import { useCleanup } from '../helpers/cleanup.js';
import { parsePrometheus, startTestServer } from '../helpers/server.js';

const cleanup = useCleanup();
/** Jobs here make up to a dozen sequential model calls in worker threads: a loaded machine needs more than the default minute. */
const POOL_TEST_TIMEOUT_MS = 150_000;
const TASK = 'Where is the retry backoff implemented?';

async function json(response: Response): Promise<any> {
  return JSON.parse(await response.text());
}

const CONFIG = {
  models: { 'forkpool-sim': { inputUsdPerMTok: 2, outputUsdPerMTok: 8 } },
  agents: { scout: { description: 'finds files', model: 'scout-model', budget: { maxTurns: 5 } } },
};

describe('budgets over HTTP', { timeout: POOL_TEST_TIMEOUT_MS }, () => {
  it('POST /v1/jobs: a budget above the limit is a 400 naming the field; a tighter one is kept and reported', async () => {
    const { api } = await startTestServer(cleanup, CONFIG);
    const over = await api('/v1/jobs', { json: { task: TASK, agent: 'scout', budget: { maxTurns: 6 } } });
    expect(over.status).toBe(400);
    const body = await json(over);
    expect(body.error.code).toBe('BUDGET_OVER_LIMIT');
    expect(body.error.message).toMatch(/budget\.maxTurns: agent "scout" may use at most 5 model calls per job; the spawn asked for 6/);
    const invalid = await api('/v1/jobs', { json: { task: TASK, budget: { maxTurns: -1 } } });
    expect(invalid.status).toBe(400);
    expect(JSON.stringify(await json(invalid))).toContain('budget.maxTurns');

    const accepted = await json(await api('/v1/jobs', { json: { task: TASK, budget: { maxTurns: 20, maxCostUsd: 0.5 } } }));
    const id = accepted.jobs[0].id as string;
    const done = await json(await api(`/v1/jobs/${id}/result?wait=60`));
    expect(done.state).toBe('ended');
    expect(done.budget.limits).toEqual({ maxTurns: 20, maxCostUsd: 0.5, maxWallclockMinutes: 10 });
    expect(done.budget.spent.turns).toBe(done.iterations);
    expect(done.budget.spent.costUsd).toBeGreaterThan(0);
    expect(done.budget.remaining.maxTurns).toBe(20 - done.iterations);
    expect(done.budgetExceeded).toBeNull();
    const list = await json(await api('/v1/jobs'));
    expect(list.jobs[0].budget.limits.maxTurns).toBe(20);
  });

  it('/metrics: forkpool_cost_usd_total by role and model from the price table; an unpriced model has tokens, no cost', async () => {
    const { api } = await startTestServer(cleanup, CONFIG);
    const started = await json(await api('/v1/jobs', { json: { tasks: [{ task: TASK }, { task: TASK, agent: 'scout' }] } }));
    for (const job of started.jobs) await api(`/v1/jobs/${job.id}/result?wait=60`);
    const samples = parsePrometheus(await (await api('/metrics')).text());
    const prompt = samples.get('forkpool_tokens_total{role="user",model="forkpool-sim",kind="prompt"}') ?? 0;
    const completion = samples.get('forkpool_tokens_total{role="user",model="forkpool-sim",kind="completion"}') ?? 0;
    expect(prompt).toBeGreaterThan(0);
    expect(samples.get('forkpool_cost_usd_total{role="user",model="forkpool-sim"}')).toBeCloseTo((prompt * 2 + completion * 8) / 1_000_000, 9);
    expect(samples.get('forkpool_tokens_total{role="user",model="scout-model",kind="prompt"}')).toBeGreaterThan(0);
    expect([...samples.keys()].filter((k) => k.startsWith('forkpool_cost_usd_total') && k.includes('scout-model'))).toEqual([]);
  });
});
