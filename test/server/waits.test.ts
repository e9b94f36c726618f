/**
 * POST /v1/jobs/wait against the real server on loopback, its jobs in the fault fixture's pool
 * (real jobs on the sim): any answers at the first ending with the other still running, all
 * waits for the last, the timeout answers 200 with timedOut, an unknown job is a 404 naming it,
 * a bad body a 400 naming the field, and the token is needed as on every route.
 */
import { describe, expect, it } from 'vitest';
import { startForkpoolServer } from '../../src/server/app.js';
import { RESEARCH_TASK, fixtureExecutor, startTestSim, useCleanup } from '../helpers/index.js';
import { TOKEN } from '../helpers/server.js';

const cleanup = useCleanup();

interface WaitAnswer {
  timedOut: boolean;
  waitedMs: number;
  ended: Array<{ id: string; status: string; resultText?: string }>;
  running: Array<{ id: string; state: string }>;
}

describe('POST /v1/jobs/wait', () => {
  it('any, all, the timeout, an unknown job (404), a bad body (400) and the token', async () => {
    const { config } = await startTestSim(cleanup, {}, { maxRetries: 0, background: { maxConcurrent: 3, cancelGraceMs: 100 } });
    const server = await startForkpoolServer({ config, token: TOKEN, port: 0, executor: fixtureExecutor(config, cleanup) });
    cleanup.add(() => server.close());
    const call = (path: string, body?: unknown, token: string | null = TOKEN, method = body === undefined ? 'GET' : 'POST') =>
      fetch(`${server.url}${path}`, {
        method,
        headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    const spawned = await call('/v1/jobs', {
      tasks: [
        { task: RESEARCH_TASK, label: 'quick' },
        { task: 'FAULT:finish_on_cancel', label: 'long', name: 'long' },
      ],
    });
    const [quick, long] = ((await spawned.json()) as { jobs: Array<{ id: string }> }).jobs.map((j) => j.id) as [string, string];

    expect((await call('/v1/jobs/wait', { timeoutMs: 10 }, null)).status).toBe(401);
    const bad = await call('/v1/jobs/wait', { timeoutMs: 200_000 });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(await bad.json())).toContain('timeoutMs');
    const badMode = await call('/v1/jobs/wait', { timeoutMs: 10, mode: 'some' });
    expect(badMode.status).toBe(400);
    expect(JSON.stringify(await badMode.json())).toContain('mode');
    const unknown = await call('/v1/jobs/wait', { jobs: [quick, 'nobody'], timeoutMs: 60_000 });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ error: { code: 'JOB_UNKNOWN', message: expect.stringContaining('"nobody"') } });

    const any = await call('/v1/jobs/wait', { jobs: [quick, 'long'], timeoutMs: 60_000, mode: 'any' });
    expect(any.status).toBe(200);
    const anyBody = (await any.json()) as WaitAnswer;
    expect(anyBody.timedOut).toBe(false);
    expect(anyBody.ended.map((j) => [j.id, j.status])).toEqual([[quick, 'ok']]);
    expect(anyBody.ended[0]?.resultText).toMatch(/retry/);
    expect(anyBody.running.map((j) => j.id)).toEqual([long]);

    // No jobs named: every live one, the long job alone now.
    const timedOut = (await (await call('/v1/jobs/wait', { timeoutMs: 50 })).json()) as WaitAnswer;
    expect(timedOut).toMatchObject({ timedOut: true, ended: [] });
    expect(timedOut.running.map((j) => j.id)).toEqual([long]);

    // all: answers once the long job has ended too (its cancel makes it finish).
    const all = call('/v1/jobs/wait', { jobs: [quick, long], timeoutMs: 60_000 });
    expect((await call(`/v1/jobs/${long}`, undefined, TOKEN, 'DELETE')).status).toBe(202);
    const allBody = (await (await all).json()) as WaitAnswer;
    expect(allBody.timedOut).toBe(false);
    expect(allBody.ended.map((j) => j.id)).toEqual([quick, long]);
    expect(allBody.running).toEqual([]);
  });
});
