/**
 * Approvals over HTTP (`approvals: "ask"`): the real server, its Piscina pool and the loopback
 * sim. A job's write_file waits; `GET /v1/approvals` lists it, the job's summary shows it,
 * `POST /v1/jobs/{id}/approvals/{callId}` answers it (by `http`), and every answer — success and
 * refusal — is checked against the server's own `/openapi.json`. The SSE stream carries the
 * question and the answer.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { contractCalls, readEvents, startTestServer } from '../helpers/server.js';
import { useCleanup, waitFor } from '../helpers/cleanup.js';
import { toolMessagesOf } from '../helpers/requests.js';

const cleanup = useCleanup();

const write = (file: string) => ({ toolCalls: [{ name: 'write_file', arguments: { path: file, content: `approved ${file}\n` } }] });

describe('approvals over HTTP', () => {
  it('lists a waiting call, answers it by http (allow runs it once, deny gives the reason), refuses 400/404/409 as documented, and streams both events', async () => {
    const server = await startTestServer(
      cleanup,
      { approvals: 'ask', background: { maxConcurrent: 1 } },
      // Two jobs, one after the other: each asks to write a file, then answers.
      { script: [write('a.txt'), { content: 'Wrote a.txt.' }, write('b.txt'), { content: 'Could not write b.txt.' }] },
    );
    const root = server.server.state.config.workspaceRoot;
    const { contract, call } = await contractCalls(server);
    /** Waits until the job asks (the manager's own list), then reads it as the API lists it. */
    const pendingOf = async (jobId: string) => {
      await waitFor(() => server.server.state.manager.approvals().some((p) => p.jobId === jobId), `${jobId} to wait for an approval`);
      const listed = (await call('/v1/approvals', {}, 200)).approvals as Array<{ jobId: string; callId: string; tool: string; args: string }>;
      return listed.find((a) => a.jobId === jobId) as (typeof listed)[number];
    };

    // The first job asks; the server lists its call and its row says it waits (still running, no slot).
    const a = (await call('/v1/jobs', { json: { task: 'Write a.txt.', label: 'writer a' } }, 202)).jobs[0].id as string;
    const asked = await pendingOf(a);
    expect(asked).toMatchObject({ tool: 'write_file', session: null, label: 'writer a' });
    expect(JSON.parse(asked.args)).toMatchObject({ path: 'a.txt' });
    const row = await call(`/v1/jobs/${a}`, {}, 200);
    expect(row).toMatchObject({ state: 'running', awaitingApproval: [{ callId: asked.callId, tool: 'write_file' }] });
    expect(existsSync(path.join(root, 'a.txt'))).toBe(false);

    // Refusals: a bad body names its field; an unknown job and an unknown call are 404s naming them.
    const bad = await call(`/v1/jobs/${a}/approvals/${asked.callId}`, { json: { decision: 'maybe' } }, 400);
    expect(bad.error.issues[0].field).toBe('body.decision');
    await call(`/v1/jobs/${a}/approvals/${asked.callId}`, { json: { decision: 'allow', by: 'someone else' } }, 400);
    expect((await call(`/v1/jobs/bg-404/approvals/${asked.callId}`, { json: { decision: 'allow' } }, 404)).error.message).toContain('"bg-404"');
    const unknownCall = await call(`/v1/jobs/${a}/approvals/call_nope`, { json: { decision: 'allow' } }, 404);
    expect(unknownCall.error).toMatchObject({ code: 'APPROVAL_UNKNOWN', message: expect.stringContaining('"call_nope"') });

    // Allow: recorded as by http; exactly that call runs, once; a second answer is a 409 naming who answered.
    const allowed = await call(`/v1/jobs/${a}/approvals/${asked.callId}`, { json: { decision: 'allow' } }, 200);
    expect(allowed).toMatchObject({ jobId: a, callId: asked.callId, tool: 'write_file', decision: 'allow', by: 'http' });
    const again = await call(`/v1/jobs/${a}/approvals/${asked.callId}`, { json: { decision: 'deny' } }, 409);
    expect(again.error).toMatchObject({ code: 'APPROVAL_ANSWERED', message: expect.stringContaining('allow by http') });
    const doneA = await call(`/v1/jobs/${a}/result?wait=60`, {}, 200);
    expect(doneA).toMatchObject({ status: 'ok', approvals: [{ callId: asked.callId, decision: 'allow', by: 'http' }] });
    expect(doneA.awaitingApproval ?? []).toEqual([]);
    expect(readFileSync(path.join(root, 'a.txt'), 'utf8')).toBe('approved a.txt\n');

    // Deny with a reason: the file is never written, and the job's model reads the reason.
    const b = (await call('/v1/jobs', { json: { task: 'Write b.txt.', label: 'writer b' } }, 202)).jobs[0].id as string;
    const askedB = await pendingOf(b);
    const denied = await call(`/v1/jobs/${b}/approvals/${askedB.callId}`, { json: { decision: 'deny', reason: 'not on a Friday' } }, 200);
    expect(denied).toMatchObject({ decision: 'deny', by: 'http', reason: 'not on a Friday' });
    expect((await call(`/v1/jobs/${b}/result?wait=60`, {}, 200)).status).toBe('ok');
    expect(existsSync(path.join(root, 'b.txt'))).toBe(false);
    expect(toolMessagesOf(server.sim.requests[3]?.body as never).join('\n')).toContain('not on a Friday');
    expect((await call('/v1/approvals', {}, 200)).approvals).toEqual([]);

    // The event stream, from its start: each question and each answer, in order.
    const { events } = await readEvents(server.url, {
      lastEventId: '0',
      until: (seen) => seen.filter((e) => e.event === 'approval-resolved').length >= 2,
    });
    const approvalEvents = events
      .filter((e) => e.event.startsWith('approval-'))
      .map((e) => {
        const data = JSON.parse(e.data) as { session: null; approval: { jobId: string; decision?: string; by?: string } };
        return [e.event, data.session, data.approval.jobId, data.approval.decision ?? null, data.approval.by ?? null];
      });
    expect(approvalEvents).toEqual([
      ['approval-requested', null, a, null, null],
      ['approval-resolved', null, a, 'allow', 'http'],
      ['approval-requested', null, b, null, null],
      ['approval-resolved', null, b, 'deny', 'http'],
    ]);

    expect([...contract.seen]).toEqual(
      expect.arrayContaining(['listApprovals 200', 'answerApproval 200', 'answerApproval 400', 'answerApproval 404', 'answerApproval 409']),
    );
  }, 120_000);
});
