/**
 * POST /v1/jobs/wait under load, against the real server on loopback with a real job on the sim:
 * a big result is serialized once however many clients wait for it (JSON.stringify of its
 * entry counted), each answer carries one page of it (the rest read with
 * `GET /v1/jobs/{id}/result?offset=&limit=`), and past `server.maxWaits` open waits the next is
 * a 429 naming the bound. Every answer is checked against the served OpenAPI document.
 */
import { describe, expect, it, vi } from 'vitest';
import { startForkpoolServer } from '../../src/server/app.js';
import { WAIT_LIMITS } from '../../src/shared/fixed-limits.js';
import { WaitAnswers } from '../../src/server/wait-answers.js';
import { ended, makeConfig, makeManager, makeWorkspace, startHoldingProxy, startSim, tempWorkspace, testConfig, useCleanup } from '../helpers/index.js';
import { ApiContract, type OpenApiDoc } from '../helpers/openapi.js';
import { TOKEN } from '../helpers/server.js';

const cleanup = useCleanup();

const BIG = `${'R'.repeat(250_000)}END`;
const WAITERS = 4;

describe('POST /v1/jobs/wait, bounded', () => {
  it(`serializes a big result once for ${WAITERS} waiters, pages it, and refuses a wait past server.maxWaits with 429`, async () => {
    const sim = await startSim(cleanup, { script: [{ content: BIG }] });
    // The job's model answer is held until every waiter is parked.
    const proxy = await startHoldingProxy(cleanup, sim.url, () => true);
    const config = testConfig({
      baseUrl: proxy.url,
      apiKey: 'test-key',
      maxRetries: 0,
      workspaceRoot: tempWorkspace(undefined, cleanup),
      server: { maxWaits: WAITERS },
    });
    const server = await startForkpoolServer({ config, token: TOKEN, port: 0 });
    cleanup.add(() => server.close());
    const call = (path: string, body?: unknown) =>
      fetch(`${server.url}${path}`, {
        method: body === undefined ? 'GET' : 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    const contract = new ApiContract((await (await call('/openapi.json')).json()) as OpenApiDoc);
    const spawned = (await (await call('/v1/jobs', { task: 'Answer at length.', label: 'big' })).json()) as { jobs: Array<{ id: string }> };
    const id = spawned.jobs[0]?.id as string;

    const stringify = vi.spyOn(JSON, 'stringify');
    cleanup.add(() => stringify.mockRestore());
    const waits = Array.from({ length: WAITERS }, () => call('/v1/jobs/wait', { jobs: [id], timeoutMs: 60_000 }));
    // A wait of 0 ms answers at once while there is room; once every waiter is parked it is refused.
    let refused: Response | undefined;
    // Bounded: without the bound no probe is ever refused (the waiters stay parked).
    for (let probes = 0; !refused && probes < 2_000; probes++) {
      const probe = await call('/v1/jobs/wait', { jobs: [id], timeoutMs: 0 });
      if (probe.status === 429) refused = probe;
      else {
        expect(probe.status).toBe(200);
        await probe.arrayBuffer();
      }
    }
    if (!refused) throw new Error(`no wait refused with ${WAITERS} open (server.maxWaits ${WAITERS})`);
    const refusal = await contract.check('POST', '/v1/jobs/wait', refused);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(refusal.error).toMatchObject({ code: 'TOO_MANY_WAITS', message: expect.stringContaining(`(server.maxWaits ${WAITERS})`) });

    proxy.release();
    const answers = await Promise.all(waits.map(async (response) => contract.check('POST', '/v1/jobs/wait', await response)));
    // Its entry was built once: one stringify of a detail with its page, not one per waiter.
    const entries = stringify.mock.calls.filter(([value]) => typeof value === 'object' && value !== null && 'resultChars' in value);
    stringify.mockRestore();
    expect(entries).toHaveLength(1);
    for (const answer of answers) {
      expect(answer.timedOut).toBe(false);
      expect(answer.ended).toHaveLength(1);
      const [job] = answer.ended;
      expect(job).toMatchObject({ id, status: 'ok', resultChars: BIG.length, resultNext: WAIT_LIMITS.resultPageChars });
      expect(job.resultText).toBe(BIG.slice(0, WAIT_LIMITS.resultPageChars));
    }

    // The rest, page by page, from the result route.
    let text = answers[0].ended[0].resultText as string;
    for (let offset = answers[0].ended[0].resultNext as number; offset < BIG.length; offset += WAIT_LIMITS.resultPageChars) {
      const page = await contract.check(
        'GET',
        `/v1/jobs/${id}/result`,
        await call(`/v1/jobs/${id}/result?offset=${offset}&limit=${WAIT_LIMITS.resultPageChars}`),
      );
      expect((page.resultText as string).length).toBeLessThanOrEqual(WAIT_LIMITS.resultPageChars);
      text += page.resultText;
    }
    expect(text).toBe(BIG);
    // The bound is on open waits: with them answered, a wait is taken again.
    expect((await call('/v1/jobs/wait', { jobs: [id], timeoutMs: 0 })).status).toBe(200);
  });
});

describe('one wait answer', () => {
  it('carries at most answerMaxBytes of ended jobs: past it a job comes without its result (resultNext 0), to be paged', async () => {
    const results = ['A', 'B', 'C'].map((letter) => letter.repeat(60_000));
    const sim = await startSim(cleanup, { script: results.map((content) => ({ content })) });
    const manager = makeManager(makeConfig(sim, await makeWorkspace(cleanup), { maxConcurrent: 1 }), cleanup);
    const ids = results.map((_, i) => manager.spawn({ task: `part ${i}`, label: `part-${i}` }).id);
    const records = await Promise.all(ids.map((id) => ended(manager, id)));
    const state = { manager, progress: { get: () => undefined }, scrub: (text: string) => text };
    const answers = new WaitAnswers(state as never, 1, { resultPageChars: 50_000, answerMaxBytes: 120_000 });
    let json = '';
    for await (const chunk of answers.body({ ended: records, running: [], timedOut: false, waitedMs: 0 })) json += String(chunk);

    expect(json.length).toBeLessThan(120_000 + 10_000);
    const answer = JSON.parse(json) as { ended: Array<{ id: string; resultText: string; resultChars: number; resultNext: number | null }> };
    expect(answer.ended.map((job) => job.id)).toEqual(ids);
    expect(answer.ended.map((job) => [job.resultText.length, job.resultChars, job.resultNext])).toEqual([
      [50_000, 60_000, 50_000],
      [50_000, 60_000, 50_000],
      [0, 60_000, 0],
    ]);
  });
});
