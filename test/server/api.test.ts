/**
 * `forkpool serve` against the real server on loopback: every route, auth refusals, bad
 * bodies, SSE resume with Last-Event-ID, /metrics as Prometheus text, no key anywhere.
 */
import { describe, expect, it } from 'vitest';
import { startForkpoolServer, type ForkpoolServerOptions } from '../../src/server/app.js';
import { exposureWarning, isLoopbackHost } from '../../src/server/bind.js';
import { createExecutor } from '../../src/main/jobs/executor-factory.js';
import { ConfigError } from '../../src/shared/errors.js';
import { cleanupOf, type Cleanup } from '../helpers/cleanup.js';
import { describeResult, runCli } from '../helpers/cli.js';
import { startTestSim } from '../helpers/sim.js';
import { TOKEN, parsePrometheus, readEvents, startTestServer, type SseEvent } from '../helpers/server.js';

const TASK = 'Where is the retry backoff implemented?';

async function json(response: Response): Promise<any> {
  return JSON.parse(await response.text());
}

// Side by side (describe.concurrent, across the describes too): each test starts its own server,
// sim and pool, torn down by its own cleanup list.
describe.concurrent('auth', () => {
  it('refuses every route but /healthz without the token or with a wrong one', async (context) => {
    const cleanup = cleanupOf(context);
    const { api, url } = await startTestServer(cleanup);
    const routes: Array<[string, string]> = [
      ['GET', '/'],
      ['GET', '/page.js'],
      ['GET', '/v1/jobs'],
      ['POST', '/v1/jobs'],
      ['GET', '/v1/jobs/bg-1'],
      ['DELETE', '/v1/jobs/bg-1'],
      ['GET', '/v1/jobs/bg-1/result'],
      ['POST', '/v1/jobs/bg-1/resume'],
      ['POST', '/v1/jobs/bg-1/restart'],
      ['GET', '/v1/jobs/bg-1/worktree'],
      ['POST', '/v1/jobs/bg-1/worktree'],
      ['POST', '/v1/jobs/bg-1/messages'],
      ['POST', '/v1/jobs/wait'],
      ['POST', '/v1/jobs/cancel'],
      ['POST', '/v1/sessions'],
      ['GET', '/v1/sessions/s-1'],
      ['POST', '/v1/sessions/s-1/messages'],
      ['GET', '/v1/events'],
      ['GET', '/metrics'],
      ['GET', '/openapi.json'],
      ['GET', '/no/such/route'],
    ];
    for (const [method, path] of routes) {
      for (const token of [null, 'wrong-token', `${TOKEN}x`, '']) {
        const response = await api(path, { method, token });
        expect(response.status, `${method} ${path} with ${JSON.stringify(token)}`).toBe(401);
        await response.body?.cancel();
      }
    }
    const health = await fetch(`${url}/healthz`);
    expect(health.status).toBe(200);
    // `executor`: a local pool is always ok (BullMQ's no-worker case: test/main/bullmq/bullmq.test.ts).
    expect(await json(health)).toMatchObject({ ok: true, executor: { ok: true } });
  });

  it('binds loopback by default and sends no CORS headers unless configured', async (context) => {
    const cleanup = cleanupOf(context);
    const { api, url } = await startTestServer(cleanup);
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const response = await api('/v1/jobs', { headers: { origin: 'http://evil.example' } });
    expect(response.headers.get('access-control-allow-origin')).toBeNull();
    const withCors = await startTestServer(cleanup, { server: { corsOrigins: ['http://app.example'] } });
    const allowed = await withCors.api('/v1/jobs', { headers: { origin: 'http://app.example' } });
    expect(allowed.headers.get('access-control-allow-origin')).toBe('http://app.example');
    const other = await withCors.api('/v1/jobs', { headers: { origin: 'http://evil.example' } });
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('signs the page in with /login?token= (an HttpOnly, SameSite=Strict cookie) and refuses a wrong one', async (context) => {
    const cleanup = cleanupOf(context);
    const { url } = await startTestServer(cleanup);
    const wrong = await fetch(`${url}/login?token=nope`, { redirect: 'manual' });
    expect(wrong.status).toBe(401);
    const right = await fetch(`${url}/login?token=${TOKEN}`, { redirect: 'manual' });
    expect(right.status).toBe(303);
    const cookie = right.headers.get('set-cookie') ?? '';
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Strict/);
    const page = await fetch(`${url}/`, { headers: { cookie: cookie.split(';')[0] as string } });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(await page.text()).toContain('<form id="start-form">');
  });
});

describe.concurrent('/v1/jobs', () => {
  it('starts one or many, lists by state with paging, reads one, long-polls its result', async (context) => {
    const cleanup = cleanupOf(context);
    const { api } = await startTestServer(cleanup, { background: { maxConcurrent: 2 } });
    const one = await api('/v1/jobs', { json: { task: TASK, label: 'first' } });
    expect(one.status).toBe(202);
    const {
      jobs: [first],
    } = await json(one);
    expect(first).toMatchObject({ id: 'bg-1', label: 'first' });
    const many = await json(await api('/v1/jobs', { json: { tasks: [{ task: TASK }, { task: TASK, label: 'third' }] } }));
    expect(many.jobs.map((j: { id: string }) => j.id)).toEqual(['bg-2', 'bg-3']);
    expect(many.refused).toEqual([]);

    const result = await api('/v1/jobs/bg-1/result?wait=60');
    expect(result.status).toBe(200);
    const record = await json(result);
    expect(record).toMatchObject({ id: 'bg-1', state: 'ended', status: expect.stringMatching(/ok|partial/) });
    expect(typeof record.resultText).toBe('string');
    for (const id of ['bg-2', 'bg-3']) expect((await api(`/v1/jobs/${id}/result?wait=60`)).status).toBe(200);

    const page1 = await json(await api('/v1/jobs?state=ended&limit=2'));
    expect(page1.jobs.map((j: { id: string }) => j.id)).toEqual(['bg-1', 'bg-2']);
    expect(page1).toMatchObject({ total: 3, next: 2 });
    expect(page1.totals.jobs.ended).toBe(3);
    const page2 = await json(await api('/v1/jobs?state=ended&limit=2&offset=2'));
    expect(page2.jobs.map((j: { id: string }) => j.id)).toEqual(['bg-3']);
    expect(page2.next).toBeNull();
    expect((await json(await api('/v1/jobs?state=queued'))).jobs).toEqual([]);

    const detail = await json(await api('/v1/jobs/bg-3'));
    expect(detail).toMatchObject({ id: 'bg-3', label: 'third', task: TASK });
    expect((await api('/v1/jobs/bg-99')).status).toBe(404);
    expect((await json(await api('/v1/jobs/bg-99/result'))).error.code).toBe('JOB_UNKNOWN');
  });

  it('starts a peer agent by name and shows nested jobs with their parent and depth', async (context) => {
    const cleanup = cleanupOf(context);
    const { api } = await startTestServer(cleanup, {
      agents: { scout: { description: 'Finds where things are', model: 'forkpool-sim-scout' } },
      background: { maxConcurrent: 2, maxDepth: 2 },
    });
    const started = await json(
      await api('/v1/jobs', {
        json: {
          tasks: [
            { task: TASK, agent: 'scout', name: 'scan' },
            { task: `Delegate: ${TASK}`, label: 'boss' },
          ],
        },
      }),
    );
    expect(started.refused).toEqual([]);
    for (const { id } of started.jobs) expect((await api(`/v1/jobs/${id}/result?wait=60`)).status).toBe(200);
    const { jobs } = await json(await api('/v1/jobs'));
    expect(jobs.find((j: { id: string }) => j.id === 'bg-1')).toMatchObject({ agent: 'scout', name: 'scan', label: 'scan', parentJobId: null, depth: 1 });
    const boss = jobs.find((j: { label: string }) => j.label === 'boss');
    const children = jobs.filter((j: { parentJobId: string | null }) => j.parentJobId === boss.id);
    expect(children.length).toBeGreaterThan(0);
    for (const child of children) expect(child.depth).toBe(2);
    // Issue 38, B20: each job's branch, `<parent-branch>.bg.<name>` (its name, else agent, else id), nested under its parent's.
    expect(jobs.find((j: { id: string }) => j.id === 'bg-1').branch).toBe('bg.scan');
    expect(boss.branch).toBe(`bg.${boss.id}`);
    for (const child of children) {
      expect(child.branch).toBe(`bg.${boss.id}.bg.${child.id}`);
      expect((await json(await api(`/v1/jobs/${child.id}`))).branch).toBe(child.branch);
    }
    const unknown = await api('/v1/jobs', { json: { task: TASK, agent: 'nobody' } });
    expect(unknown.status).toBe(400);
    expect((await json(unknown)).error.code).toBe('AGENT_UNKNOWN');
  });

  it('cancels with DELETE; wait=0 answers 202 while it runs', async (context) => {
    const cleanup = cleanupOf(context);
    const { api } = await startTestServer(cleanup, { background: { maxConcurrent: 1 } }, { latencyMs: 400 });
    await api('/v1/jobs', { json: { tasks: [{ task: TASK }, { task: TASK }] } });
    const pending = await api('/v1/jobs/bg-2/result');
    expect(pending.status).toBe(202);
    expect((await json(pending)).state).toBe('queued');
    const cancel = await api('/v1/jobs/bg-2', { method: 'DELETE' });
    expect(cancel.status).toBe(202);
    const ended = await json(await api('/v1/jobs/bg-2/result?wait=30'));
    expect(ended).toMatchObject({ state: 'ended', status: 'cancelled' });
    expect((await api('/v1/jobs/bg-2', { method: 'DELETE' })).status).toBe(202);
    expect((await api('/v1/jobs/nope', { method: 'DELETE' })).status).toBe(404);
  });
});

describe.concurrent('bad input is a 400 naming the field', () => {
  it('names the field, the expectation and what was received', async (context) => {
    const cleanup = cleanupOf(context);
    const { api } = await startTestServer(cleanup, { server: { bodyLimitBytes: 4_096 } });
    const cases: Array<[unknown, string]> = [
      [{}, 'body.task'],
      [{ task: '   ' }, 'body.task'],
      [{ task: 42 }, 'body.task'],
      [{ task: 'x', label: 'y'.repeat(201) }, 'body.label'],
      [{ task: 'x', extra: 1 }, 'body.extra'],
      [{ tasks: [] }, 'body.tasks'],
      [{ tasks: [{ task: 'ok' }, { label: 'no task' }] }, 'body.tasks.1.task'],
    ];
    for (const [body, field] of cases) {
      const response = await api('/v1/jobs', { json: body });
      expect(response.status, JSON.stringify(body)).toBe(400);
      const { error } = await json(response);
      expect(error.code).toBe('BAD_REQUEST');
      expect(
        error.issues.map((i: { field: string }) => i.field),
        JSON.stringify(body),
      ).toContain(field);
      expect(error.message).toContain(field);
    }
    const taskNumber = await json(await api('/v1/jobs', { json: { task: 42 } }));
    expect(taskNumber.error.issues[0]).toMatchObject({ expected: 'string', received: '42' });
    const query = await json(await api('/v1/jobs?limit=0&state=done'));
    expect(query.error.issues.map((i: { field: string }) => i.field).sort()).toEqual(['query.limit', 'query.state']);
    expect((await api('/v1/jobs/bg-1/result?wait=-1')).status).toBe(400);
    const notJson = await api('/v1/jobs', { method: 'POST', body: '{"task": ', headers: { 'content-type': 'application/json' } });
    expect(notJson.status).toBe(400);
    const wrongType = await api('/v1/jobs', { method: 'POST', body: 'task=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(wrongType.status).toBe(415);
    const tooBig = await api('/v1/jobs', { json: { task: 'x'.repeat(10_000) } });
    expect(tooBig.status).toBe(413);
    expect((await api('/v1/sessions/s-1/messages', { json: { input: '' } })).status).toBe(400);
  });
});

describe.concurrent('/v1/sessions', () => {
  it('creates a session, streams a turn as NDJSON with the result last, and reads it back', async (context) => {
    const cleanup = cleanupOf(context);
    const { api } = await startTestServer(cleanup);
    const created = await api('/v1/sessions', { method: 'POST' });
    expect(created.status).toBe(201);
    const { id } = await json(created);
    const turn = await api(`/v1/sessions/${id}/messages`, { json: { input: 'Where is the retry backoff implemented?' } });
    expect(turn.status).toBe(200);
    expect(turn.headers.get('content-type')).toContain('application/x-ndjson');
    const lines = (await turn.text())
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines[0]).toMatchObject({ type: 'parent', event: { type: 'turn_start' } });
    expect(lines.at(-1)).toMatchObject({ type: 'result', result: { turn: 1 } });
    expect(typeof lines.at(-1).result.answer).toBe('string');
    const session = await json(await api(`/v1/sessions/${id}`));
    expect(session).toMatchObject({ id, turns: 1, busy: false });
    expect((await api('/v1/sessions/s-404')).status).toBe(404);
    expect((await api('/v1/sessions/s-404/messages', { json: { input: 'hi' } })).status).toBe(404);
  });
});

describe.concurrent('/v1/sessions turn errors', () => {
  const failedTurn = async (cleanup: Cleanup, errorDetail: 'brief' | 'debug') => {
    const { api } = await startTestServer(cleanup, { maxRetries: 0, errorDetail }, { faultRate: 1, faultKinds: ['500'] });
    const { id } = await json(await api('/v1/sessions', { method: 'POST' }));
    const lines = (await (await api(`/v1/sessions/${id}/messages`, { json: { input: 'hello' } })).text())
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    const last = lines.at(-1);
    // A model failure ends the turn with a result that carries the error (a thrown one is an `error` line).
    const error = last.type === 'result' ? last.result.error : last.error;
    expect(error, JSON.stringify(last).slice(0, 600)).toBeDefined();
    // The client is still reading: the turn must not be aborted as if it had left.
    expect(error.code).not.toBe('ABORTED');
    return error;
  };

  it('follows errorDetail: brief has a code and no stack, debug keeps the stack', async (context) => {
    const cleanup = cleanupOf(context);
    const brief = await failedTurn(cleanup, 'brief');
    expect(brief.code).toMatch(/^[A-Z_]+$/);
    expect(brief.message.length).toBeGreaterThan(0);
    expect(brief.stack).toBeUndefined();
    expect(JSON.stringify(brief)).not.toMatch(/\/(?:work|tmp|home|root)\//);
    const debug = await failedTurn(cleanup, 'debug');
    expect(debug.code).toBe(brief.code);
    expect(typeof debug.stack).toBe('string');
  });
});

describe.concurrent('/v1/events', () => {
  const jobEvents = (events: SseEvent[]) => events.filter((e) => e.event !== 'progress');

  it('streams each job as spawned → started → done, and resumes after Last-Event-ID with exactly the events missed', async (context) => {
    const cleanup = cleanupOf(context);
    const { api, url } = await startTestServer(cleanup, { background: { maxConcurrent: 2 } });
    const doneCount = (events: SseEvent[]) => events.filter((e) => e.event === 'done').length;
    const first = readEvents(url, { until: (events) => doneCount(events) >= 3 });
    // The stream is open once the server counts the client.
    await waitUntil(async () => (await (await api('/metrics')).text()).includes('forkpool_sse_clients 1'));
    await api('/v1/jobs', { json: { tasks: [{ task: TASK }, { task: TASK }, { task: TASK }] } });
    const { events } = await first;
    const ids = events.map((e) => Number(e.id));
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(new Set(ids).size).toBe(ids.length);
    for (const job of ['bg-1', 'bg-2', 'bg-3']) {
      const order = jobEvents(events)
        .filter((e) => JSON.parse(e.data).job?.id === job)
        .map((e) => e.event);
      expect(order, job).toEqual(['spawned', 'started', 'done']);
    }
    // A client that saw up to the 4th event comes back: it gets the rest, in order, nothing twice.
    const cut = events[3] as SseEvent;
    const resumed = await readEvents(url, { lastEventId: cut.id as string, until: (got) => got.length >= events.length - 4 });
    expect(resumed.events.map((e) => e.id)).toEqual(events.slice(4).map((e) => e.id));
    expect(resumed.events.map((e) => e.data)).toEqual(events.slice(4).map((e) => e.data));
  });

  it("every event of a job a parent's call started carries that call's parentToolId (issue 38, C7); other jobs' carry none", async (context) => {
    const cleanup = cleanupOf(context);
    const { server, url } = await startTestServer(cleanup);
    const { session } = server.state.createSession();
    const jobOf = (e: SseEvent): string | undefined => {
      const data = JSON.parse(e.data);
      return data.jobId ?? data.job?.id;
    };
    const ended = (events: SseEvent[]) => events.filter((e) => e.event === 'done').length >= 2;
    const reading = readEvents(url, { until: ended });
    await waitUntil(async () => server.state.hub.listenerCount === 1);
    const called = session.manager.spawn({ task: TASK, label: 'called', parentToolId: 'call-bg' });
    const plain = session.manager.spawn({ task: TASK, label: 'plain' });
    const { events } = await reading;
    const ofCalled = events.filter((e) => jobOf(e) === called.id);
    expect(ofCalled.map((e) => e.event)).toEqual(expect.arrayContaining(['spawned', 'started', 'progress', 'done']));
    for (const event of ofCalled) expect(JSON.parse(event.data).parentToolId, event.event).toBe('call-bg');
    const ofPlain = events.filter((e) => jobOf(e) === plain.id);
    expect(ofPlain.length).toBeGreaterThan(0);
    for (const event of ofPlain) expect(JSON.parse(event.data).parentToolId, event.event).toBeUndefined();
  });

  it('sends reset when the buffer no longer reaches back to Last-Event-ID', async (context) => {
    const cleanup = cleanupOf(context);
    const { api, url } = await startTestServer(cleanup, { server: { eventBufferSize: 10 } });
    await api('/v1/jobs', { json: { tasks: [{ task: TASK }, { task: TASK }] } });
    for (const id of ['bg-1', 'bg-2']) await api(`/v1/jobs/${id}/result?wait=60`);
    const { events } = await readEvents(url, { lastEventId: '1', until: (got) => got.length >= 1 });
    expect(events[0]?.event).toBe('reset');
    // From a future id (the server restarted and counts from 1 again): reset as well.
    const { events: future } = await readEvents(url, { lastEventId: '999999', until: (got) => got.length >= 1 });
    expect(future[0]?.event).toBe('reset');
  });
});

describe.concurrent('/metrics, /openapi.json, /healthz', () => {
  it('serves Prometheus text that parses, with jobs by state, queue, threads, tokens and loop delay', async (context) => {
    const cleanup = cleanupOf(context);
    const { api } = await startTestServer(cleanup);
    await api('/v1/jobs', { json: { task: TASK } });
    await api('/v1/jobs/bg-1/result?wait=60');
    const response = await api('/metrics');
    expect(response.headers.get('content-type')).toContain('text/plain; version=0.0.4');
    const samples = parsePrometheus(await response.text());
    expect(samples.get('forkpool_jobs{state="ended"}')).toBe(1);
    expect(samples.get('forkpool_queue_depth')).toBe(0);
    expect(samples.get('forkpool_threads{executor="piscina"}')).toBeGreaterThanOrEqual(0);
    expect(samples.get('forkpool_tokens_total{role="user",model="forkpool-sim",kind="prompt"}')).toBeGreaterThan(0);
    expect(samples.has('forkpool_event_loop_delay_seconds{quantile="0.99"}')).toBe(true);
    expect(samples.get('forkpool_event_loop_delay_seconds_count')).toBeGreaterThan(0);
    // One job, ended: in the +Inf bucket and the count of its status, and in every bucket at or above its duration.
    const status = [...samples.keys()].find((k) => k.startsWith('forkpool_job_duration_seconds_count{'));
    expect(status && samples.get(status)).toBe(1);
    const label = /\{status="(\w+)"\}/.exec(status ?? '')?.[1];
    expect(samples.get(`forkpool_job_duration_seconds_bucket{status="${label}",le="+Inf"}`)).toBe(1);
    expect(samples.get(`forkpool_job_duration_seconds_bucket{status="${label}",le="3600"}`)).toBe(1);
    expect(() => parsePrometheus('forkpool_jobs{state=ended} 1\n')).toThrow();
  });

  it('documents every route in an OpenAPI 3.1 document generated from the zod schemas', async (context) => {
    const cleanup = cleanupOf(context);
    const { api } = await startTestServer(cleanup);
    const doc = await json(await api('/openapi.json'));
    expect(doc.openapi).toBe('3.1.0');
    expect(Object.keys(doc.paths).sort()).toEqual([
      '/healthz',
      '/metrics',
      '/openapi.json',
      '/v1/approvals',
      '/v1/events',
      '/v1/jobs',
      '/v1/jobs/cancel',
      '/v1/jobs/wait',
      '/v1/jobs/{id}',
      '/v1/jobs/{id}/approvals/{callId}',
      '/v1/jobs/{id}/messages',
      '/v1/jobs/{id}/restart',
      '/v1/jobs/{id}/result',
      '/v1/jobs/{id}/resume',
      '/v1/jobs/{id}/transcript',
      '/v1/jobs/{id}/worktree',
      '/v1/sessions',
      '/v1/sessions/{id}',
      '/v1/sessions/{id}/messages',
    ]);
    expect(doc.paths['/v1/jobs'].post.requestBody.content['application/json'].schema.anyOf).toHaveLength(2);
    expect(doc.paths['/healthz'].get.security).toEqual([]);
  });
});

describe.concurrent('the API key', () => {
  it('appears in no response, event or metric', async (context) => {
    const cleanup = cleanupOf(context);
    // Lower case: the sim echoes task words lower-cased, and that copy must be caught too.
    const KEY = 'sk-test-never-show-0123456789abcdef';
    const { api, url } = await startTestServer(cleanup, { apiKey: KEY }, { faults: { 2: { kind: '500' } } });
    const stream = readEvents(url, { until: (events) => events.filter((e) => e.event === 'done').length >= 2 });
    await waitUntil(async () => (await (await api('/metrics')).text()).includes('forkpool_sse_clients 1'));
    await api('/v1/jobs', { json: { tasks: [{ task: `${TASK} (key: ${KEY})` }, { task: TASK }] } });
    const { id } = await json(await api('/v1/sessions', { method: 'POST' }));
    const texts = [
      (await stream).text,
      await (await api(`/v1/sessions/${id}/messages`, { json: { input: 'hello' } })).text(),
      await (await api('/v1/jobs/bg-1/result?wait=60')).text(),
      await (await api('/v1/jobs/bg-2/result?wait=60')).text(),
      await (await api('/v1/jobs')).text(),
      await (await api(`/v1/sessions/${id}`)).text(),
      await (await api('/metrics')).text(),
      await (await api('/openapi.json')).text(),
    ];
    for (const text of texts) expect(text).not.toContain(KEY);
    // The task quoted the key: it was taken out, not dropped whole.
    expect(texts[2]).toContain('[REDACTED]');
  });
});

async function waitUntil(check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error('condition never held');
}

describe.concurrent('the token and the address it binds', () => {
  it('a token shorter than 16 characters is refused, from the option or FORKPOOL_SERVER_TOKEN, naming it and the minimum, not its value', async (context) => {
    const cleanup = cleanupOf(context);
    const { config } = await startTestSim(cleanup);
    const refused = (options: Partial<ForkpoolServerOptions>) =>
      startForkpoolServer({ config, port: 0, env: {}, ...options }).then(
        () => undefined,
        (error: unknown) => error as ConfigError,
      );
    const short = await refused({ token: 'x' });
    expect(short).toBeInstanceOf(ConfigError);
    expect(short?.issues).toEqual([{ field: 'token', expected: expect.stringContaining('at least 16 characters'), received: '1 character' }]);
    const fromEnv = await refused({ env: { FORKPOOL_SERVER_TOKEN: 'fifteen-chars15' } });
    expect(fromEnv?.issues).toEqual([
      { field: 'FORKPOOL_SERVER_TOKEN', expected: expect.stringContaining('at least 16 characters'), received: '15 characters' },
    ]);
    expect(fromEnv?.message).not.toContain('fifteen-chars15');
    const ok = await startForkpoolServer({ config, port: 0, env: { FORKPOOL_SERVER_TOKEN: 'sixteen-chars-16' } });
    cleanup.add(() => ok.close());
    expect(ok.token).toBe('sixteen-chars-16');
  });

  it('`forkpool serve` with a 1-character FORKPOOL_SERVER_TOKEN exits 2 naming it, before starting anything', async (context) => {
    const cleanup = cleanupOf(context);
    const r = await runCli(['serve', '--port', '0'], { env: { FORKPOOL_SERVER_TOKEN: 'x' }, cleanup, timeoutMs: 20_000 });
    expect(r.code, describeResult(r)).toBe(2);
    expect(r.stderr).toMatch(/"FORKPOOL_SERVER_TOKEN": expected a token of at least 16 characters.*received 1 character/);
  });

  it.each(['0.0.0.0', '::', '192.0.2.1', '10.1.2.3', 'example.com'])('%s is not loopback', (host) => {
    expect(isLoopbackHost(host)).toBe(false);
    expect(exposureWarning(host)).toMatch(/not loopback/);
  });

  it.each(['127.0.0.1', '127.1.2.3', 'localhost', '::1', '[::1]', '0:0:0:0:0:0:0:1', '::ffff:127.0.0.1'])('%s is loopback (no warning)', (host) => {
    expect(isLoopbackHost(host)).toBe(true);
    expect(exposureWarning(host)).toBeUndefined();
  });

  it('a non-loopback host is warned about before binding; when the bind fails no worker thread is left', async (context) => {
    const cleanup = cleanupOf(context);
    const { config } = await startTestSim(cleanup);
    const warnings: string[] = [];
    const executor = createExecutor(config, undefined, config.executor);
    cleanup.add(() => executor.close());
    expect(executor.threadCount()).toBeGreaterThan(0);
    // 192.0.2.1 (TEST-NET-1) is on no interface: the bind fails, so nothing listens off loopback.
    const failed = await startForkpoolServer({ config, executor, token: TOKEN, host: '192.0.2.1', port: 0, onWarning: (m) => warnings.push(m) }).catch(
      (e: unknown) => e,
    );
    expect(failed).toMatchObject({ code: 'EADDRNOTAVAIL' });
    expect(executor.threadCount()).toBe(0);
    expect(warnings).toEqual([expect.stringMatching(/^serving on the address 192\.0\.2\.1, not loopback: anyone who can reach this port/)]);
    const loopback = await startForkpoolServer({ config, token: TOKEN, port: 0, onWarning: (m) => warnings.push(m) });
    cleanup.add(() => loopback.close());
    expect(warnings).toHaveLength(1);
  });

  it('`forkpool serve --host <not loopback>` says so on stderr, also with --json, and exits when the bind fails', async (context) => {
    const cleanup = cleanupOf(context);
    // A TEST-NET address (the bind fails) and a dead loopback model endpoint (no simulator started).
    const r = await runCli(['serve', '--host', '192.0.2.1', '--port', '0', '--json', '--base-url', 'http://127.0.0.1:9/v1'], {
      env: { FORKPOOL_SERVER_TOKEN: TOKEN },
      cleanup,
      timeoutMs: 20_000,
    });
    expect(r.stderr, describeResult(r)).toMatch(/forkpool: warning: serving on the address 192\.0\.2\.1, not loopback/);
    expect(r.stdout).toContain('"type":"warning"');
    expect([r.timedOut, r.code]).toEqual([false, 1]);
  });
});
