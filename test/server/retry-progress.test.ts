/**
 * Issue 36 §2, a retry as a field of the job's progress: through the real server, pool and worker
 * threads, a running job's summary carries its latest model-call retry (`retrying`), its SSE
 * `progress` events carry it too, and it is cleared by the next model response and by the ending.
 */
import { describe, expect, it } from 'vitest';
import { useCleanup } from '../helpers/cleanup.js';
import { readEvents, startTestServer } from '../helpers/server.js';

const cleanup = useCleanup();
const TEST_TIMEOUT_MS = 60_000;

async function json(response: Response): Promise<any> {
  return JSON.parse(await response.text());
}

describe('a retry in the job progress', () => {
  it(
    'a job waiting out a 429 shows `retrying` (try, of how many, status, host, wait) in GET /v1/jobs/{id}; its ending clears it',
    async () => {
      const { api, sim } = await startTestServer(cleanup, { maxRetries: 3 }, { faults: { 1: { kind: '429', retryAfterSeconds: 20 } } });
      const spawned = await json(await api('/v1/jobs', { json: { task: 'anything', label: 'limited' } }));
      const id: string = spawned.jobs[0].id;
      let job: any;
      // Polled until the retry shows: the 20 s wait is far longer than any poll.
      for (let i = 0; i < 400; i++) {
        job = await json(await api(`/v1/jobs/${id}`));
        if (job.retrying !== null) break;
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      const retrying = { attempt: 1, maxRetries: 3, status: 429, host: new URL(sim.url).host, waitMs: expect.any(Number), at: expect.any(Number) };
      expect(job.retrying).toEqual(retrying);
      expect(job.retrying.waitMs).toBeGreaterThanOrEqual(20_000);
      expect(job.progress.retrying).toEqual(retrying);
      const list = await json(await api('/v1/jobs'));
      expect((list.jobs ?? list).find((j: any) => j.id === id)?.retrying).toEqual(retrying);

      await api(`/v1/jobs/${id}`, { method: 'DELETE' });
      for (let i = 0; i < 400 && job.state !== 'ended'; i++) {
        job = await json(await api(`/v1/jobs/${id}`));
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      expect(job.state).toBe('ended');
      expect(job.retrying).toBeNull();
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'SSE: the retry progress event carries `retrying`; the model response after it clears it',
    async () => {
      const { api, url } = await startTestServer(cleanup, { maxRetries: 3 }, { faults: { 1: { kind: '429', retryAfterSeconds: 0.3 } } });
      const reading = readEvents(url, { until: (events) => events.some((e) => e.event === 'done') });
      await api('/v1/jobs', { json: { task: 'anything', label: 'limited' } });
      const { events } = await reading;
      const progress = events.filter((e) => e.event === 'progress').map((e) => JSON.parse(e.data));
      const retryAt = progress.findIndex((p) => p.event.type === 'retry');
      expect(retryAt).toBeGreaterThanOrEqual(0);
      expect(progress[retryAt].retrying).toMatchObject({ attempt: 1, maxRetries: 3, status: 429 });
      const answered = progress.slice(retryAt).find((p) => p.event.type === 'model_response');
      expect(answered).toBeDefined();
      expect(answered.retrying).toBeNull();
      const done = JSON.parse(events.find((e) => e.event === 'done')!.data);
      expect(done.job.retrying).toBeNull();
    },
    TEST_TIMEOUT_MS,
  );
});
