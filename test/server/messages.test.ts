/**
 * POST /v1/jobs/:id/messages against the real server on loopback, its manager's real pool and
 * the sim: the token is required as on every route, an interrupt reaches the job's next model
 * request, an ended job is a 409 naming its state, a bad body a 400 naming the field, and a
 * message its durable ledger cannot write a 503 (nothing sent).
 */
import { describe, expect, it } from 'vitest';
import { startForkpoolServer } from '../../src/server/app.js';
import { useCleanup, waitFor } from '../helpers/cleanup.js';
import { RawDatabase, ledgerFile } from '../helpers/ledger.js';
import { messagesOf } from '../helpers/requests.js';
import { startTestSim } from '../helpers/sim.js';
import { TOKEN } from '../helpers/server.js';

const cleanup = useCleanup();

describe('POST /v1/jobs/:id/messages', () => {
  it('sends a live job a message (interrupting its held model call), refuses an ended job with 409, and needs the token', async () => {
    // Request 1 never answers: only the interrupt ends it (maxRetries 0: a failure would end the job).
    const { sim, config } = await startTestSim(
      cleanup,
      { faults: { 1: { kind: 'hang_before_headers' } }, script: [{ content: 'Answered the message.' }] },
      { maxRetries: 0 },
    );
    const server = await startForkpoolServer({ config, token: TOKEN, port: 0 });
    cleanup.add(() => server.close());
    const call = (path: string, body?: unknown, token: string | null = TOKEN) =>
      fetch(`${server.url}${path}`, {
        method: body === undefined ? 'GET' : 'POST',
        headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });

    const spawned = await call('/v1/jobs', { task: 'Survey the workspace.' });
    const id = ((await spawned.json()) as { jobs: Array<{ id: string }> }).jobs[0]?.id as string;
    await waitFor(() => sim.requests.length === 1, 'the job mid-call');

    const noToken = await call(`/v1/jobs/${id}/messages`, { message: 'hello' }, null);
    expect(noToken.status).toBe(401);
    const bad = await call(`/v1/jobs/${id}/messages`, { text: 'wrong field' });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(await bad.json())).toContain('message');
    const unknown = await call('/v1/jobs/bg-99/messages', { message: 'anyone?' });
    expect(unknown.status).toBe(404);

    const sent = await call(`/v1/jobs/${id}/messages`, { message: 'Just say what src/retry.ts does.', interrupt: true });
    expect(sent.status).toBe(202);
    expect(await sent.json()).toMatchObject({ jobId: id, message: 1, delivery: 'posted', interrupt: true });
    const result = await call(`/v1/jobs/${id}/result?wait=60`);
    expect(await result.json()).toMatchObject({ status: 'ok' });
    const users = messagesOf(sim.requests[1] as never).filter((m) => m.role === 'user');
    expect(String(users.at(-1)?.content)).toContain('Just say what src/retry.ts does.');

    const detail = (await (await call(`/v1/jobs/${id}`)).json()) as { messages: unknown[] };
    expect(detail.messages).toEqual([
      expect.objectContaining({ id: 1, text: 'Just say what src/retry.ts does.', interrupt: true, receivedAt: expect.any(Number) }),
    ]);

    const late = await call(`/v1/jobs/${id}/messages`, { message: 'too late' });
    expect(late.status).toBe(409);
    expect(await late.json()).toMatchObject({ error: { code: 'JOB_ENDED', message: expect.stringContaining('has ended (') } });
  });
  it('a message the durable ledger cannot write is a 503 LEDGER_WRITE_FAILED, not sent; once it can, a 202', async () => {
    const file = ledgerFile(cleanup);
    // The job's one model call is held: it stays live while the messages are sent.
    const { config } = await startTestSim(cleanup, { latencyMs: 60_000 }, { ledger: { path: file } });
    const server = await startForkpoolServer({ config, token: TOKEN, port: 0 });
    cleanup.add(() => server.close());
    const post = (path: string, body: unknown) =>
      fetch(`${server.url}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const spawned = await post('/v1/jobs', { task: 'Survey the workspace.' });
    const id = ((await spawned.json()) as { jobs: Array<{ id: string }> }).jobs[0]?.id as string;

    // A real SQLite failure on that one write: a trigger in the file aborts every new message row.
    const db = new RawDatabase(file);
    db.prepare("CREATE TRIGGER refuse_messages BEFORE INSERT ON job_messages BEGIN SELECT RAISE(ABORT, 'no room for messages'); END").run();
    const refused = await post(`/v1/jobs/${id}/messages`, { message: 'Not kept, so not sent.' });
    expect(refused.status).toBe(503);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('LEDGER_WRITE_FAILED');
    db.prepare('DROP TRIGGER refuse_messages').run();
    db.close();
    const sent = await post(`/v1/jobs/${id}/messages`, { message: 'Kept and sent.' });
    expect(sent.status).toBe(202);
    expect(await sent.json()).toMatchObject({ jobId: id, message: 1 });
  }, 60_000);
});
