/**
 * Schedulers through the HTTP API (docs/delivery.md "Schedulers"): `POST /v1/jobs` with
 * `scheduler`; a `deferred` job's status and wake-up time in `GET /v1/jobs/{id}/result`, every
 * answer checked against the served OpenAPI document; an unknown name is a 400 SCHEDULER_UNKNOWN.
 */
import { describe, expect, it } from 'vitest';
import { useCleanup } from '../helpers/cleanup.js';
import { readEvents } from '../helpers/server.js';
import { ApiContract, type OpenApiDoc } from '../helpers/openapi.js';
import { startTestServer } from '../helpers/server.js';

const cleanup = useCleanup();
const TASK = 'Check the nightly build; if it is not done, come back later.';

describe('schedulers over HTTP', () => {
  it('exit_on_defer: the job ends deferred, its deferredUntil in the result as the document says; an unknown scheduler is a 400 and nothing starts', async () => {
    const server = await startTestServer(
      cleanup,
      {},
      {
        script: [
          { toolCalls: [{ name: 'schedule_next_turn', arguments: { after: '30m', reason: 'the build is done by then' } }] },
          { content: 'Deferred: the build is still running.' },
        ],
      },
    );
    const contract = new ApiContract((await (await server.api('/openapi.json')).json()) as OpenApiDoc);
    const bad = await server.api('/v1/jobs', { json: { task: TASK, scheduler: 'cron' } });
    const badBody = await contract.check('POST', '/v1/jobs', bad);
    expect(bad.status).toBe(400);
    expect(badBody.error).toMatchObject({ code: 'SCHEDULER_UNKNOWN', message: expect.stringContaining('"cron"') });
    expect(server.sim.requests).toHaveLength(0);

    const before = Date.now();
    const created = await server.api('/v1/jobs', { json: { task: TASK, label: 'nightly', scheduler: 'exit_on_defer' } });
    const id = (await contract.check('POST', '/v1/jobs', created)).jobs[0].id as string;
    const path = `/v1/jobs/${id}/result?wait=60`;
    const result = await contract.check('GET', path, await server.api(path));
    expect(result).toMatchObject({ state: 'ended', status: 'deferred', deferReason: 'the build is done by then' });
    expect(result.deferredUntil).toBeGreaterThanOrEqual(before + 30 * 60_000);
  });

  it('sleep: the job is running with sleepingUntil in GET /v1/jobs/{id} and the SSE sleeping event, as the document says; a cancel ends it at once', async () => {
    const server = await startTestServer(
      cleanup,
      {},
      { script: [{ toolCalls: [{ name: 'schedule_next_turn', arguments: { after: '6h', reason: 'scan the queue again' } }] }] },
    );
    const contract = new ApiContract((await (await server.api('/openapi.json')).json()) as OpenApiDoc);
    const created = await server.api('/v1/jobs', { json: { task: TASK, label: 'watcher', scheduler: 'sleep' } });
    const id = (await contract.check('POST', '/v1/jobs', created)).jobs[0].id as string;
    const { events } = await readEvents(server.url, { lastEventId: '0', until: (seen) => seen.some((e) => e.event === 'sleeping') });
    const sleeping = JSON.parse(events.find((e) => e.event === 'sleeping')?.data ?? '{}') as {
      job: { id: string; sleepingUntil: number; sleepReason: string };
    };
    expect(sleeping.job).toMatchObject({ id, state: 'running', sleepReason: 'scan the queue again' });
    const path = `/v1/jobs/${id}`;
    const job = await contract.check('GET', path, await server.api(path));
    expect(job).toMatchObject({ state: 'running', sleepingUntil: sleeping.job.sleepingUntil, sleepReason: 'scan the queue again' });
    expect(job.sleepingUntil).toBeGreaterThan(Date.now() + 5 * 3600_000);
    await contract.check('DELETE', path, await server.api(path, { method: 'DELETE' }));
    const result = await contract.check('GET', `${path}/result?wait=60`, await server.api(`${path}/result?wait=60`));
    expect(result).toMatchObject({ state: 'ended', status: 'cancelled', sleepingUntil: null });
    expect(server.sim.requests).toHaveLength(1);
  });
});
