/**
 * `POST /v1/jobs/:id/resume` on the real server over loopback: an ended job goes on as a new job
 * (`resumedFrom`), its result read back like any job's; refusals with their status (404 unknown,
 * 409 not ended, 400 a bad body). Auth is the app's one hook (api.test.ts lists the route).
 */
import { describe, expect, it } from 'vitest';
import { useCleanup } from '../helpers/cleanup.js';
import { startTestServer } from '../helpers/server.js';

const cleanup = useCleanup();
const TASK = 'Where is the retry backoff implemented?';

async function json(response: Response): Promise<any> {
  return JSON.parse(await response.text());
}

describe('POST /v1/jobs/:id/resume', () => {
  it('resumes an ended job as a new one; refuses unknown (404), not ended (409) and a bad body (400)', async () => {
    const { api } = await startTestServer(cleanup, {}, { latencyMs: 60 });
    const started = await json(await api('/v1/jobs', { json: { task: TASK, label: 'first' } }));
    const id = started.jobs[0].id as string;
    const early = await api(`/v1/jobs/${id}/resume`, { json: { message: 'And the cache?' } });
    expect(early.status).toBe(409);
    expect((await json(early)).error).toMatchObject({ code: 'RESUME_UNAVAILABLE' });
    expect((await json(await api(`/v1/jobs/${id}/result?wait=60`))).state).toBe('ended');

    const bad = await api(`/v1/jobs/${id}/resume`, { json: { message: '' } });
    expect(bad.status).toBe(400);
    expect((await json(bad)).error.issues[0].field).toBe('body.message');
    const unknown = await api('/v1/jobs/bg-77/resume', { json: { message: 'And the cache?' } });
    expect(unknown.status).toBe(404);
    expect((await json(unknown)).error.code).toBe('JOB_UNKNOWN');

    const resumed = await api(`/v1/jobs/${id}/resume`, { json: { message: 'And the cache?' } });
    expect(resumed.status).toBe(202);
    const handle = await json(resumed);
    expect(handle).toMatchObject({ resumedFrom: id, label: 'first' });
    expect(handle.id).not.toBe(id);
    const result = await json(await api(`/v1/jobs/${handle.id}/result?wait=60`));
    // Its own answer (the sim's tag for this instruction decides ok or partial), not an error.
    expect(result).toMatchObject({ state: 'ended', stopReason: 'final', resumedFrom: id, task: 'And the cache?' });
  });
});
