/**
 * `/openapi.json` is the contract of the HTTP API. The real server (Piscina pool, the loopback
 * sim) is driven through every route's success and error cases, and each real answer is
 * checked against the document served by that same server: its status must be listed for that
 * operation and its body must validate (Ajv, JSON Schema 2020-12) against that status's schema.
 * The document itself passes an OpenAPI validator (swagger-parser), every route the plugin
 * registers is in it, and its one server is the plugin's prefix.
 */
import SwaggerParser from '@apidevtools/swagger-parser';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { forkpoolRoutes } from '../../src/server/plugin.js';
import { PAGE_ROUTES } from '../../src/server/route-docs.js';
import { useCleanup, waitFor } from '../helpers/cleanup.js';
import { startTestSim } from '../helpers/sim.js';
import { ApiContract, type OpenApiDoc } from '../helpers/openapi.js';
import { TOKEN, startTestServer, type TestServer } from '../helpers/server.js';

const cleanup = useCleanup();
const TASK = 'Where is the retry backoff implemented?';

/** The server's `api`, with every answer checked against its own document. */
async function contractFor(server: TestServer) {
  const doc = (await (await server.api('/openapi.json')).json()) as OpenApiDoc;
  const contract = new ApiContract(doc);
  /** One request; its answer checked against the document (and its status against `status`, when given). */
  const call = async (path: string, init: Parameters<TestServer['api']>[1] & { stream?: boolean } = {}, status?: number) => {
    const { stream, ...rest } = init;
    const method = rest.method ?? (rest.json !== undefined ? 'POST' : 'GET');
    const response = await server.api(path, rest);
    const body = await contract.check(method, path, response, { stream: stream === true });
    if (status !== undefined) expect(response.status, `${method} ${path}: ${JSON.stringify(body)}`).toBe(status);
    return body;
  };
  return { doc, contract, call };
}

describe('the OpenAPI document is the contract', () => {
  it('every route answers, in success and in error, only what the document says', async () => {
    // One slot, one queued job at most; the first model call hangs until that job is restarted.
    const server = await startTestServer(
      cleanup,
      { background: { maxConcurrent: 1, queueLimit: 1 }, server: { maxSessions: 1, bodyLimitBytes: 4_096 } },
      { faults: { 1: { kind: 'hang_before_headers' } } },
    );
    const { contract, call } = await contractFor(server);
    // POST /v1/jobs: started, then a full queue, a refused task, a bad body, too big, not JSON, no token.
    const first = await call('/v1/jobs', { json: { task: TASK, label: 'first' } });
    const firstId = first.jobs[0].id as string;
    await waitFor(() => server.sim.requests.length === 1, 'the first job mid-call');
    const second = await call('/v1/jobs', { json: { tasks: [{ task: `${TASK} (second)` }] } });
    const secondId = second.jobs[0].id as string;
    expect((await call('/v1/jobs', { json: { task: `${TASK} (third)` } })).error.code).toBe('QUEUE_FULL');
    expect((await call('/v1/jobs', { json: { task: TASK, agent: 'nobody' } })).refused[0].code).toBe('AGENT_UNKNOWN');
    expect((await call('/v1/jobs', { json: { tasks: [] } })).error.code).toBe('BAD_REQUEST');
    await call('/v1/jobs', { json: { task: 'x'.repeat(10_000) } }, 413);
    await call('/v1/jobs', { method: 'POST', body: 'task=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } }, 415);
    await call('/v1/jobs', { method: 'POST', body: '{"task": ', headers: { 'content-type': 'application/json' } }, 400);
    await call('/v1/jobs', { json: { task: TASK }, token: null }, 401);

    // Reading: the list with its totals, one job running and one queued, the long poll's 202.
    const list = await call('/v1/jobs');
    expect(list).toMatchObject({ total: 2, totals: { jobs: { running: 1, queued: 1 } } });
    expect(typeof list.lastEventId).toBe('number');
    await call('/v1/jobs?limit=0', {}, 400);
    expect((await call(`/v1/jobs/${firstId}`)).state).toBe('running');
    await call('/v1/jobs/bg-404', {}, 404);
    expect((await call(`/v1/jobs/${secondId}/result`)).state).toBe('queued');
    await call(`/v1/jobs/${secondId}/result?wait=soon`, {}, 400);
    await call('/v1/jobs/bg-404/result', {}, 404);

    // While the first job hangs and the second waits in the queue: messages, restarts, resumes, a cancel.
    expect((await call(`/v1/jobs/${secondId}/messages`, { json: { message: 'Also the jitter.' } })).delivery).toBe('kept');
    await call('/v1/jobs/bg-404/messages', { json: { message: 'hello' } }, 404);
    await call(`/v1/jobs/${secondId}/messages`, { json: { message: '' } }, 400);
    expect((await call(`/v1/jobs/${secondId}/restart`, { method: 'POST' })).error).toMatchObject({ code: 'JOB_NOT_RESTARTABLE', state: 'queued' });
    await call('/v1/jobs/bg-404/restart', { method: 'POST' }, 404);
    expect((await call(`/v1/jobs/${secondId}/resume`, { json: { message: 'Again?' } })).error.code).toBe('RESUME_UNAVAILABLE');
    expect((await call(`/v1/jobs/${secondId}`, { method: 'DELETE' })).id).toBe(secondId);
    await call('/v1/jobs/bg-404', { method: 'DELETE' }, 404);
    expect(await call('/v1/jobs/cancel', { json: { ids: ['bg-404'] } }, 202)).toEqual({ cancelled: [], ended: [], unknown: ['bg-404'] });
    await call('/v1/jobs/cancel', { json: {} }, 400);
    expect((await call(`/v1/jobs/${secondId}/result?wait=60`)).status).toBe('cancelled');
    expect((await call(`/v1/jobs/${firstId}/restart`, { method: 'POST' })).restarted).toBe('stopping');

    // Waiting for both to end: their details in full.
    await call('/v1/jobs/wait', { json: { timeoutMs: 'soon' } }, 400);
    await call('/v1/jobs/wait', { json: { jobs: ['bg-404'], timeoutMs: 0 } }, 404);
    const waited = await call('/v1/jobs/wait', { json: { jobs: [firstId, secondId], timeoutMs: 60_000 } });
    expect(waited.ended.map((j: { id: string }) => j.id).sort()).toEqual([firstId, secondId].sort());
    expect((await call(`/v1/jobs/${firstId}/messages`, { json: { message: 'Too late.' } })).error.code).toBe('JOB_ENDED');
    expect((await call(`/v1/jobs/${firstId}/result?wait=60`)).state).toBe('ended');
    // Its transcript: a page of steps; an unknown job and a bad page are errors the document lists.
    expect((await call(`/v1/jobs/${firstId}/transcript?limit=2`)).steps.length).toBeGreaterThan(0);
    await call('/v1/jobs/bg-404/transcript', {}, 404);
    await call(`/v1/jobs/${firstId}/transcript?limit=0`, {}, 400);

    // Resume the ended job: a new one, read back once it ends; cancel of an ended job is still a 202.
    const resumed = await call(`/v1/jobs/${firstId}/resume`, { json: { message: 'And the cache?' } });
    expect(resumed.resumedFrom).toBe(firstId);
    await call('/v1/jobs/bg-404/resume', { json: { message: 'And the cache?' } }, 404);
    await call(`/v1/jobs/${firstId}/resume`, { json: {} }, 400);
    expect((await call(`/v1/jobs/${resumed.id}/result?wait=60`)).state).toBe('ended');
    await call(`/v1/jobs/${secondId}`, { method: 'DELETE' }, 202);
    expect((await call('/v1/jobs?state=ended')).jobs.length).toBe(3);

    // Sessions: one turn streamed as NDJSON (every line checked), at most one session.
    const session = await call('/v1/sessions', { method: 'POST' });
    expect((await call('/v1/sessions', { method: 'POST' })).error.code).toBe('TOO_MANY_SESSIONS');
    const lines = await call(`/v1/sessions/${session.id}/messages`, { json: { input: TASK } });
    expect(lines.at(-1).type).toBe('result');
    await call('/v1/sessions/s-404/messages', { json: { input: 'hi' } }, 404);
    await call(`/v1/sessions/${session.id}/messages`, { json: { input: '' } }, 400);
    expect((await call(`/v1/sessions/${session.id}`)).turns).toBe(1);
    await call('/v1/sessions/s-404', {}, 404);

    // No job waits for an approval here (approvals "deny"): the list is empty; test/server/approvals-api.test.ts answers one.
    expect(await call('/v1/approvals', {}, 200)).toEqual({ approvals: [] });
    // The rest: events (an endless stream: its status and type), health, metrics, this document.
    await call('/v1/events', { stream: true });
    await call('/v1/events', { token: 'wrong-token-0123456789' }, 401);
    expect((await call('/healthz', { token: null })).ok).toBe(true);
    expect(await call('/metrics')).toContain('forkpool_jobs');
    expect((await call('/openapi.json')).openapi).toBe('3.1.0');

    // Every operation answered with success, and every error case above was seen.
    const succeeded = new Set([...contract.seen].filter((s) => / 2\d\d$/.test(s)).map((s) => s.split(' ')[0]));
    // A worktree job needs a git repository for its workspace: test/server/worktree-api.test.ts checks those against the document.
    // An approval needs a job that waits for one: test/server/approvals-api.test.ts checks that one against the document.
    for (const op of ['getJobWorktree', 'actOnJobWorktree', 'answerApproval']) succeeded.add(op);
    expect([...contract.operations()].filter((op) => !succeeded.has(op))).toEqual([]);
    expect([...contract.seen].sort()).toEqual(
      expect.arrayContaining([
        'createJobs 400',
        'createJobs 401',
        'createJobs 413',
        'createJobs 415',
        'createJobs 429',
        'listJobs 400',
        'getJob 404',
        'getJobResult 202',
        'getJobResult 400',
        'sendJobMessage 409',
        'restartJob 409',
        'waitForJobs 404',
        'resumeJob 409',
        'cancelJob 404',
        'createSession 429',
        'getSession 404',
        'sendSessionMessage 404',
        'streamEvents 401',
      ]),
    );
  }, 120_000);

  it('a failed job, a failed turn and a closed manager answer as documented too', async () => {
    const server = await startTestServer(cleanup, { maxRetries: 0 }, { faultRate: 1, faultKinds: ['500'] });
    const { call } = await contractFor(server);
    const started = await call('/v1/jobs', { json: { task: TASK } });
    const failed = await call(`/v1/jobs/${started.jobs[0].id}/result?wait=60`);
    expect(failed.errorDetail).toMatchObject({ code: expect.any(String), message: expect.any(String) });
    const session = await call('/v1/sessions', { method: 'POST' });
    const lines = await call(`/v1/sessions/${session.id}/messages`, { json: { input: 'hello' } });
    expect(['result', 'error']).toContain(lines.at(-1).type);
    await call('/v1/jobs');
    // The manager closed under a serving app: spawns, restarts and resumes are a 503.
    await server.server.state.manager.close();
    expect((await call('/v1/jobs', { json: { task: TASK } })).error.code).toBe('MANAGER_CLOSED');
    expect((await call(`/v1/jobs/${started.jobs[0].id}/restart`, { method: 'POST' })).error.code).toBe('MANAGER_CLOSED');
    expect((await call(`/v1/jobs/${started.jobs[0].id}/resume`, { json: { message: 'again' } })).error.code).toMatch(/MANAGER_CLOSED|RESUME_UNAVAILABLE/);
  }, 60_000);

  it('a request while the app closes is the documented 503 (SERVER_CLOSING)', async () => {
    const { config } = await startTestSim(cleanup);
    const app = Fastify({ return503OnClosing: false });
    await app.register(forkpoolRoutes, { config, token: TOKEN });
    // preClose hooks run in registration order: this one holds the close open after the plugin's has run.
    let release = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    let closingStarted = () => {};
    const started = new Promise<void>((resolve) => (closingStarted = resolve));
    await app.register(async (sibling) => {
      sibling.addHook('preClose', async () => {
        closingStarted();
        await held;
      });
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
    const api: TestServer['api'] = (path, init = {}) => fetch(`${url}${path}`, { ...init, headers: { authorization: `Bearer ${TOKEN}` } });
    const contract = new ApiContract((await (await api('/openapi.json')).json()) as OpenApiDoc);
    const closed = app.close();
    cleanup.add(async () => {
      release();
      await closed;
    });
    await started;
    const response = await api('/v1/jobs');
    expect(response.status).toBe(503);
    expect((await contract.check('GET', '/v1/jobs', response)).error.code).toBe('SERVER_CLOSING');
    release();
    await closed;
  });

  it('is a valid OpenAPI 3.1 document with an operationId per route, covering every route the plugin registers', async () => {
    const { config } = await startTestSim(cleanup);
    const app = Fastify();
    const registered: string[] = [];
    // Hooks on the root see the routes of every plugin registered after them.
    app.addHook('onRoute', (route) => {
      for (const method of [route.method].flat()) if (method !== 'HEAD') registered.push(`${method} ${route.url}`);
    });
    await app.register(forkpoolRoutes, { config, token: TOKEN, prefix: '/forkpool' });
    cleanup.add(() => app.close());
    await app.ready();
    const response = await app.inject({ url: '/forkpool/openapi.json', headers: { authorization: `Bearer ${TOKEN}` } });
    const doc = response.json<OpenApiDoc & { servers: Array<{ url: string }> }>();
    expect(doc.servers).toEqual([expect.objectContaining({ url: '/forkpool' })]);

    const documented = Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.keys(item).map((method) => `${method.toUpperCase()} /forkpool${path.replace(/\{(\w+)\}/g, ':$1')}`),
    );
    const page = PAGE_ROUTES.map((r) => r.replace(' /', ' /forkpool/').replace(/\/$/, ''));
    const undocumented = registered.filter((r) => !documented.includes(r) && !page.includes(r) && r !== 'GET /forkpool/');
    expect(undocumented, 'routes with no entry in ROUTE_DOCS (src/server/route-docs.ts)').toEqual([]);
    expect(documented.filter((r) => !registered.includes(r))).toEqual([]);

    const ids = Object.values(doc.paths).flatMap((item) => Object.values(item).map((op) => (op as { operationId?: string }).operationId));
    expect(ids.every((id) => typeof id === 'string' && /^[a-z][A-Za-z]+$/.test(id))).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    // swagger-parser validates against the OpenAPI 3.1 schema and resolves every $ref; it changes what it is given.
    await expect(SwaggerParser.validate(structuredClone(doc) as never)).resolves.toBeTruthy();
  });
});
