/**
 * Every per-job route takes the refs GET /v1/jobs/:id takes (issue 38): a job's name, and a
 * session's job as `session/id`, on the real server over loopback with jobs in the pool.
 */
import { describe, expect, it } from 'vitest';
import { useCleanup } from '../helpers/cleanup.js';
import { startTestServer } from '../helpers/server.js';

const cleanup = useCleanup();

describe('job refs on /result, /resume and /messages', () => {
  it('a name and a session ref reach the job on /result, /resume and /messages as on GET /v1/jobs/:id', async () => {
    const { api, server } = await startTestServer(cleanup);
    const posted = await api('/v1/jobs', { method: 'POST', json: { task: 'Where is the retry backoff implemented?', name: 'probe' } });
    expect(posted.status).toBe(202);
    const byName = await api('/v1/jobs/probe/result?wait=60');
    expect(byName.status).toBe(200);
    const result = (await byName.json()) as { id: string; status: string };
    expect(result.status).toBe('ok');
    expect((await (await api('/v1/jobs/probe')).json()) as { id: string }).toMatchObject({ id: result.id });
    const resumed = await api('/v1/jobs/probe/resume', { method: 'POST', json: { message: 'And where is it tested?' } });
    expect(resumed.status).toBe(202);
    expect(await resumed.json()).toMatchObject({ resumedFrom: 'probe' });

    // A session's job: its ref is `session/id` (URL-encoded).
    const created = (await (await api('/v1/sessions', { method: 'POST', json: {} })).json()) as { id: string };
    const session = server.state.sessions.get(created.id);
    if (!session) throw new Error('no session');
    const job = session.manager.spawn({ task: 'Where is the LruCache class defined?', label: 'session job' });
    const ref = encodeURIComponent(`${created.id}/${job.id}`);
    const message = await api(`/v1/jobs/${ref}/messages`, { method: 'POST', json: { message: 'Answer briefly.' } });
    expect([202, 409]).toContain(message.status); // 409 only if it had already ended: the job was found either way
    if (message.status === 409) expect(await message.json()).toMatchObject({ error: { code: 'JOB_ENDED' } });
    const sessionResult = await api(`/v1/jobs/${ref}/result?wait=60`);
    expect(sessionResult.status).toBe(200);
    expect(await sessionResult.json()).toMatchObject({ id: job.id, state: 'ended' });
    const sessionResume = await api(`/v1/jobs/${ref}/resume`, { method: 'POST', json: { message: 'More detail.' } });
    expect(sessionResume.status).toBe(202);
    expect(((await sessionResume.json()) as { id: string }).id).toMatch(new RegExp(`^${created.id}/`));
    // An unknown ref is still a 404 JOB_UNKNOWN on each.
    for (const [path, init] of [
      ['/v1/jobs/nobody/result', {}],
      ['/v1/jobs/nobody/resume', { method: 'POST', json: { message: 'x' } }],
      ['/v1/jobs/nobody/messages', { method: 'POST', json: { message: 'x' } }],
    ] as const) {
      const response = await api(path, init);
      expect(response.status, path).toBe(404);
    }
  });
});
