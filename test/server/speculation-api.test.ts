/**
 * `speculative` on POST /v1/jobs against the real server, its manager's real pool and the sim: a
 * guess shows as `pending`, a real job waiting for the only slot preempts it (it ends cancelled
 * "speculative, preempted", `delivered: false`), and a bad value is a 400 naming the field.
 */
import { describe, expect, it } from 'vitest';
import { startForkpoolServer } from '../../src/server/app.js';
import { useCleanup, waitFor } from '../helpers/cleanup.js';
import { startTestSim } from '../helpers/sim.js';
import { TOKEN } from '../helpers/server.js';

const cleanup = useCleanup();

describe('POST /v1/jobs with speculative', { timeout: 120_000 }, () => {
  it('a guess runs until a real job needs its slot, then ends cancelled (speculative) and undelivered; a non-boolean is a 400', async () => {
    // Every answer is another tool call: the guess runs until stopped, the real job until its 2 turns.
    const { sim, config } = await startTestSim(cleanup, { endlessToolCalls: true, latencyMs: 5 }, { background: { maxConcurrent: 1, cancelGraceMs: 200 } });
    const server = await startForkpoolServer({ config, token: TOKEN, port: 0 });
    cleanup.add(() => server.close());
    const call = async (path: string, body?: unknown) => {
      const response = await fetch(`${server.url}${path}`, {
        method: body === undefined ? 'GET' : 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    };

    const bad = await call('/v1/jobs', { task: 'Survey the workspace.', speculative: 'yes' });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(bad.body)).toContain('body.speculative');

    const guess = await call('/v1/jobs', { task: 'Survey the workspace.', label: 'guess', speculative: true });
    expect(guess.status).toBe(202);
    const guessId = (guess.body.jobs as Array<{ id: string }>)[0]?.id as string;
    expect((await call(`/v1/jobs/${guessId}`)).body).toMatchObject({ speculative: 'pending' });
    await waitFor(() => sim.requests.length >= 1, 'the guess asking the model');

    const real = await call('/v1/jobs', { task: 'Survey the docs.', label: 'real', budget: { maxTurns: 2 } });
    const realId = (real.body.jobs as Array<{ id: string }>)[0]?.id as string;
    const preempted = (await call(`/v1/jobs/${guessId}/result?wait=60`)).body;
    expect(preempted).toMatchObject({ state: 'ended', status: 'cancelled', speculative: 'dropped', delivered: false });
    expect((preempted.error as { message: string }).message).toMatch(new RegExp(`^cancelled \\(speculative, preempted: ${realId} needed a slot\\)`));
    expect((await call(`/v1/jobs/${realId}/result?wait=60`)).body).toMatchObject({ status: 'partial', speculative: null });
  });
});
