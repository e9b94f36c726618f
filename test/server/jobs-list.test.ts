/**
 * `GET /v1/jobs` at fan-out scale and `POST /v1/jobs/cancel`, on the real server over loopback
 * (jobs in the Piscina pool, a scripted sim; see test/helpers/frozen-fanout.ts): every job of
 * the server and its sessions, paged to the last one; totals from the ledgers' counts; filters
 * by state, status, agent, text and session; sorts; bulk cancel by refs and by state, exactly
 * those jobs; a failed job retried; the tool-call count kept after a job ends.
 */
import { describe, expect, it } from 'vitest';
import { useCleanup } from '../helpers/cleanup.js';
import { startFrozenFanout } from '../helpers/frozen-fanout.js';
import type { TestServer } from '../helpers/server.js';

const cleanup = useCleanup();
const JOBS = 60;

async function json(response: Response): Promise<any> {
  return JSON.parse(await response.text());
}

type Listed = {
  id: string;
  session: string | null;
  state: string;
  status: string | null;
  label: string;
  agent: string | null;
  elapsedMs: number;
  tokens: number;
  toolCalls: number | null;
};
const refOf = (job: Listed) => (job.session ? `${job.session}/${job.id}` : job.id);

/** Every row of a query, page by page through `next`. */
async function everyRow(api: TestServer['api'], query: string, limit = 25): Promise<Listed[]> {
  const rows: Listed[] = [];
  for (let offset: number | null = 0; offset !== null;) {
    const page: { jobs: Listed[]; total: number; next: number | null } = await json(await api(`/v1/jobs?${query}&limit=${limit}&offset=${offset}`));
    rows.push(...page.jobs);
    expect(page.jobs.length).toBeLessThanOrEqual(limit);
    offset = page.next;
  }
  return rows;
}

/** Polls an async condition (the helpers' waitFor takes a synchronous one). */
async function until(check: () => Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 1500; i++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`never: ${what}`);
}

const count = async (api: TestServer['api'], query: string) => (await json(await api(`/v1/jobs?${query}&limit=1`))).total as number;

describe('GET /v1/jobs at fan-out scale', () => {
  it('pages, filters and sorts over the server and its sessions, with exact totals; keeps tool calls after the end', async () => {
    const { api, session } = await startFrozenFanout(cleanup, JOBS);
    const first = await json(await api('/v1/jobs?limit=25'));
    // 60 server jobs (bg-1 failed, bg-2 ok, bg-3 running, 57 queued) and the session's 2 (one running, one queued).
    expect(first.total).toBe(JOBS + 2);
    expect(first.totals.jobs).toEqual({ queued: JOBS - 3 + 1, running: 2, ended: 2 });
    expect(first.jobs).toHaveLength(25);
    expect(first.next).toBe(25);

    // Paging reaches the last job: every ref once, in spawn order, the session's after the server's.
    const all = await everyRow(api, 'sort=spawn');
    const expected = [...Array.from({ length: JOBS }, (_, i) => `bg-${i + 1}`), `${session}/bg-1`, `${session}/bg-2`];
    expect(all.map(refOf)).toEqual(expected);
    expect(await everyRow(api, 'sort=spawn&order=desc', 7).then((rows) => rows.map(refOf))).toEqual([...expected].reverse());
    // The totals agree with the rows (counted here from every page, not from one).
    for (const state of ['queued', 'running', 'ended'] as const) expect(all.filter((j) => j.state === state).length).toBe(first.totals.jobs[state]);

    // Filters: the count is the server's, for the whole filtered list.
    expect(await count(api, 'state=queued')).toBe(JOBS - 3 + 1);
    expect(await count(api, 'state=running')).toBe(2);
    expect((await everyRow(api, 'status=failed')).map(refOf)).toEqual(['bg-1']);
    expect(await count(api, 'agent=scout')).toBe(JOBS / 3);
    expect(await count(api, 'agent=SCOUT')).toBe(JOBS / 3);
    expect((await everyRow(api, 'agent=scout')).every((j) => j.agent === 'scout')).toBe(true);
    expect((await everyRow(api, 'q=ALPHA-1')).map((j) => j.label)).toEqual(['alpha-1', ...Array.from({ length: 10 }, (_, i) => `alpha-1${i}`)]);
    expect((await everyRow(api, 'q=bg-60')).map(refOf)).toEqual(['bg-60']);
    expect((await everyRow(api, `q=${session}/`)).map(refOf)).toEqual([`${session}/bg-1`, `${session}/bg-2`]);
    expect(await count(api, 'session=server')).toBe(JOBS);
    expect(await count(api, `session=${session}`)).toBe(2);
    expect(await count(api, 'state=queued&agent=scout')).toBe(JOBS / 3 - 1);

    // Sorts: by state (ties in spawn order), duration and tokens, both ways.
    const byState = await everyRow(api, 'sort=state&order=desc', 50);
    expect(byState.slice(0, 4).map(refOf)).toEqual(['bg-1', 'bg-2', 'bg-3', `${session}/bg-1`]);
    expect(byState.slice(4).every((j) => j.state === 'queued')).toBe(true);
    // One page, one clock: running jobs' durations are taken at the same instant.
    const byDuration: Listed[] = (await json(await api('/v1/jobs?sort=duration&order=desc&limit=100'))).jobs;
    for (let i = 1; i < byDuration.length; i++) expect(byDuration[i]!.elapsedMs).toBeLessThanOrEqual(byDuration[i - 1]!.elapsedMs);
    expect(byDuration.slice(0, 4).every((j) => j.state !== 'queued')).toBe(true);
    const shortest: Listed[] = (await json(await api('/v1/jobs?sort=duration&order=asc&limit=100'))).jobs;
    expect(shortest.slice(0, JOBS - 3 + 1).map(refOf)).toEqual(all.filter((j) => j.state === 'queued').map(refOf));
    const byTokens = await everyRow(api, 'sort=tokens&order=desc', 50);
    expect(refOf(byTokens[0]!)).toBe('bg-2');
    for (let i = 1; i < byTokens.length; i++) expect(byTokens[i]!.tokens).toBeLessThanOrEqual(byTokens[i - 1]!.tokens);
    expect((await everyRow(api, 'sort=tokens&order=asc', 50)).map((j) => j.tokens)).toEqual(byTokens.map((j) => j.tokens).reverse());

    // The ended job's tool-call count stays, in the list and in its detail.
    expect(all.find((j) => j.id === 'bg-2')?.toolCalls).toBe(1);
    expect((await json(await api('/v1/jobs/bg-2'))).toolCalls).toBe(1);
    expect((await json(await api(`/v1/jobs/${encodeURIComponent(`${session}/bg-2`)}`))).label).toBe('sess-b');

    // A bad query names the field.
    const bad = await json(await api('/v1/jobs?sort=cost'));
    expect(bad.error.issues[0]).toMatchObject({ field: 'query.sort' });
  }, 120_000);

  it('cancels exactly the jobs named, then every queued one, then the running ones; retries a failed job', async () => {
    const fanout = await startFrozenFanout(cleanup, JOBS);
    const { api, session } = fanout;
    const stateOf = async () => new Map((await everyRow(api, 'sort=spawn', 100)).map((j) => [refOf(j), j.state === 'ended' ? j.status : j.state]));
    const before = await stateOf();

    // Bad bodies: a 400 naming the field, nothing cancelled.
    const refusals = [
      [{}, 'body.ids'],
      [{ ids: ['bg-4'], state: 'queued' }, 'body.state'],
      [{ ids: [] }, 'body.ids'],
      [{ ids: Array.from({ length: 501 }, (_, i) => `bg-${i}`) }, 'body.ids'],
      [{ state: 'ended' }, 'body.state'],
      [{ ids: ['bg-4'], all: true }, 'body.all'],
    ] as const;
    for (const [body, field] of refusals) {
      const response = await api('/v1/jobs/cancel', { json: body });
      expect(response.status).toBe(400);
      expect((await json(response)).error.issues[0].field).toBe(field);
    }
    expect((await json(await api('/v1/jobs?limit=1'))).totals.jobs.queued).toBe(JOBS - 3 + 1);

    const named = await api('/v1/jobs/cancel', { json: { ids: ['bg-10', 'bg-11', `${session}/bg-2`, 'bg-2', 'bg-10', 'nope', `${session}/bg-9`] } });
    expect(named.status).toBe(202);
    expect(await json(named)).toEqual({ cancelled: ['bg-10', 'bg-11', `${session}/bg-2`], ended: ['bg-2'], unknown: ['nope', `${session}/bg-9`] });
    const afterNamed = await stateOf();
    for (const [ref, state] of afterNamed) expect(state).toBe(['bg-10', 'bg-11', `${session}/bg-2`].includes(ref) ? 'cancelled' : before.get(ref));
    expect((await json(await api('/v1/jobs?limit=1'))).totals.jobs).toEqual({ queued: JOBS - 3 + 1 - 3, running: 2, ended: 5 });

    const queued = await json(await api('/v1/jobs/cancel', { json: { state: 'queued' } }));
    expect(queued.cancelled).toHaveLength(JOBS - 3 - 2);
    const afterQueued = await stateOf();
    for (const [ref, state] of afterQueued) expect(state).toBe(afterNamed.get(ref) === 'queued' ? 'cancelled' : afterNamed.get(ref));
    expect((await json(await api('/v1/jobs?limit=1'))).totals.jobs).toEqual({ queued: 0, running: 2, ended: JOBS });

    // The two hung jobs, by ref: running, so they stop cooperatively.
    expect((await json(await api('/v1/jobs/cancel', { json: { ids: ['bg-3', `${session}/bg-1`] } }))).cancelled).toEqual(['bg-3', `${session}/bg-1`]);
    await until(async () => (await json(await api('/v1/jobs?limit=1'))).totals.jobs.running === 0, 'the hung jobs stopped');
    expect(await count(api, 'status=cancelled')).toBe(3 + (JOBS - 3 - 2) + 2);

    // Retry: the failed job runs again under its id and answers; then a session's cancelled one, by ref.
    fanout.answerNext('Retried: the answer.', 'Retried in the session: the answer.');
    const retry = await api('/v1/jobs/bg-1/restart', { method: 'POST' });
    expect(retry.status).toBe(202);
    const retried = await json(await api('/v1/jobs/bg-1/result?wait=60'));
    expect(retried).toMatchObject({ state: 'ended', status: 'ok', resultText: expect.stringContaining('Retried') });
    const ref = encodeURIComponent(`${session}/bg-2`);
    expect((await api(`/v1/jobs/${ref}/restart`, { method: 'POST' })).status).toBe(202);
    await until(async () => (await json(await api(`/v1/jobs/${ref}`))).status === 'ok', "the session's job retried");
    expect((await json(await api('/v1/jobs?limit=1'))).totals.jobs).toEqual({ queued: 0, running: 0, ended: JOBS + 2 });
  }, 120_000);
});
