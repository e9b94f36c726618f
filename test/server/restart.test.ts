/**
 * `POST /v1/jobs/:id/restart` on the real server over loopback (jobs in the Piscina pool, the
 * sim): a running job is stopped and runs again under the same id, an ended or sleeping one is re-queued;
 * refusals with their status (404 unknown, 409 a queued job, naming its state). Auth is the
 * app's one hook (api.test.ts lists the route).
 */
import { describe, expect, it } from 'vitest';
import { useCleanup, waitFor } from '../helpers/cleanup.js';
import { startTestServer } from '../helpers/server.js';

const cleanup = useCleanup();

async function json(response: Response): Promise<any> {
  return JSON.parse(await response.text());
}

describe('POST /v1/jobs/:id/restart', () => {
  it('restarts a running job (stopping) and an ended one (requeued) under the same id; 404 unknown, 409 queued', async () => {
    // One slot; call 1 (the first job's first run) hangs until it is stopped: the restart ends it.
    const { api, sim } = await startTestServer(cleanup, { background: { maxConcurrent: 1 } }, { faults: { 1: { kind: 'hang_before_headers' } } });
    const started = await json(
      await api('/v1/jobs', {
        json: {
          tasks: [
            { task: 'Where is the retry backoff?', label: 'first' },
            { task: 'Where is the cache?', label: 'second' },
          ],
        },
      }),
    );
    const [first, second] = started.jobs.map((j: { id: string }) => j.id) as [string, string];
    // Its hung model call is in flight (the sim counts requests as they arrive).
    await waitFor(() => sim.requests.length === 1, 'the first job mid-call');
    expect((await json(await api(`/v1/jobs/${first}`))).state).toBe('running');

    const unknown = await api('/v1/jobs/bg-77/restart', { method: 'POST' });
    expect(unknown.status).toBe(404);
    expect((await json(unknown)).error.code).toBe('JOB_UNKNOWN');
    const queued = await api(`/v1/jobs/${second}/restart`, { method: 'POST' });
    expect(queued.status).toBe(409);
    expect((await json(queued)).error).toMatchObject({ code: 'JOB_NOT_RESTARTABLE', state: 'queued', message: expect.stringContaining('queued') });

    const stopping = await api(`/v1/jobs/${first}/restart`, { method: 'POST' });
    expect(stopping.status).toBe(202);
    expect(await json(stopping)).toMatchObject({ id: first, label: 'first', restarted: 'stopping' });
    const again = await json(await api(`/v1/jobs/${first}/result?wait=60`));
    expect(again).toMatchObject({ id: first, state: 'ended', status: 'ok', attempts: 2 });

    const requeued = await api(`/v1/jobs/${first}/restart`, { method: 'POST' });
    expect(requeued.status).toBe(202);
    expect(await json(requeued)).toMatchObject({ id: first, state: 'queued', restarted: 'requeued' });
    expect(await json(await api(`/v1/jobs/${first}/result?wait=60`))).toMatchObject({ state: 'ended', status: 'ok', attempts: 3 });
    expect((await json(await api('/v1/jobs'))).total).toBe(2);
  }, 60_000);

  it('restarts a sleeping job: re-queued at once (requeued, not stopping), its wake dropped; it runs again from its task', async () => {
    const { api, sim } = await startTestServer(
      cleanup,
      { background: { maxConcurrent: 1, scheduler: 'sleep' } },
      { script: [{ toolCalls: [{ name: 'schedule_next_turn', arguments: { after: '1h', reason: 'scan again' } }] }, { content: 'Scanned from the start.' }] },
    );
    const started = await json(await api('/v1/jobs', { json: { tasks: [{ task: 'Scan the queue.', label: 'scanner' }] } }));
    const id = started.jobs[0].id as string;
    // Asleep: `running` in its record, holding no slot, its wake time shown.
    let job: { state?: string; sleepingUntil?: unknown } = {};
    for (let i = 0; i < 500 && !job.sleepingUntil; i++) {
      job = await json(await api(`/v1/jobs/${id}`));
      if (!job.sleepingUntil) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(job).toMatchObject({ state: 'running', sleepingUntil: expect.any(Number) });

    const restarted = await api(`/v1/jobs/${id}/restart`, { method: 'POST' });
    expect(restarted.status).toBe(202);
    expect(await json(restarted)).toMatchObject({ id, state: 'queued', restarted: 'requeued' });
    const result = await json(await api(`/v1/jobs/${id}/result?wait=60`));
    expect(result).toMatchObject({ state: 'ended', status: 'ok' });
    expect(JSON.stringify(result)).toContain('Scanned from the start.');
    expect(sim.requests).toHaveLength(2);
  }, 60_000);

  it('409 for a job queued to go on where it waited (its approval answered, no slot yet): nothing is restarted', async () => {
    // One slot: A pauses for its call, B takes the slot and hangs; A, answered, waits in the queue.
    const { api, sim } = await startTestServer(
      cleanup,
      { background: { maxConcurrent: 1 }, approvals: 'ask', sandbox: 'none', tools: ['bash', 'read_file'] },
      { script: [{ toolCalls: [{ id: 'call-1', name: 'bash', arguments: { command: 'echo one' } }] }], faults: { 2: { kind: 'hang_before_headers' } } },
    );
    const started = await json(
      await api('/v1/jobs', {
        json: {
          tasks: [
            { task: 'Run the check.', label: 'checker' },
            { task: 'Where is the cache?', label: 'holder' },
          ],
        },
      }),
    );
    const [checker] = started.jobs.map((j: { id: string }) => j.id) as [string, string];
    await waitFor(() => sim.requests.length === 2, 'the checker paused and the holder mid-call');
    const answered = await api(`/v1/jobs/${checker}/approvals/call-1`, { json: { decision: 'allow' } });
    expect(answered.status).toBe(200);
    const before = await json(await api(`/v1/jobs/${checker}`));
    expect(before.state).toBe('queued');

    const refused = await api(`/v1/jobs/${checker}/restart`, { method: 'POST' });
    expect(refused.status).toBe(409);
    expect((await json(refused)).error).toMatchObject({
      code: 'JOB_NOT_RESTARTABLE',
      state: 'queued',
      message: expect.stringContaining('nothing to restart'),
    });
  }, 60_000);
});
