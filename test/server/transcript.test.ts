/**
 * `GET /v1/jobs/{id}/transcript` (src/server/routes/transcript.ts) on a real server over a
 * scripted simulator: the job's steps in order, paged, matching the schema the OpenAPI document
 * publishes; 404 for an unknown job, 400 for a bad page; the key planted in a file a tool read
 * never in the body.
 */
import { describe, expect, it } from 'vitest';
import { transcriptPageShape } from '../../src/server/transcript-responses.js';
import { ended, tempWorkspace, useCleanup } from '../helpers/index.js';
import { startTestServer } from '../helpers/server.js';

const SECRET = 'sk-http-transcript-secret-0123456789';

describe('GET /v1/jobs/{id}/transcript', () => {
  const cleanup = useCleanup();

  it("pages a job's transcript: steps in order with tool arguments and results, no key; 404 unknown, 400 bad query", async () => {
    const workspace = tempWorkspace({ 'retry.ts': 'export function retryBackoff() {}\n', 'leak.txt': `key=${SECRET}\n` }, cleanup);
    const { api } = await startTestServer(
      cleanup,
      { apiKey: SECRET, workspaceRoot: workspace, tools: ['grep', 'read_file'] },
      {
        script: [
          { content: 'Looking.', toolCalls: [{ name: 'grep', arguments: { pattern: 'retry' } }] },
          { toolCalls: [{ name: 'read_file', arguments: { path: 'leak.txt' } }] },
          { content: 'In retry.ts.' },
        ],
      },
    );
    const created = (await (await api('/v1/jobs', { json: { task: 'Where is the retry backoff?', label: 'backoff' } })).json()) as {
      jobs: Array<{ id: string }>;
    };
    const id = created.jobs[0]?.id as string;
    const ended = await api(`/v1/jobs/${id}/result?wait=30`);
    expect(ended.status).toBe(200);

    const response = await api(`/v1/jobs/${id}/transcript`);
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(text).not.toContain(SECRET);
    const page = transcriptPageShape.parse(JSON.parse(text));
    expect(page).toMatchObject({ jobId: id, total: 5, omitted: 0, offset: 0, kept: 5, next: null, dropped: false });
    expect(page.steps.map((s) => s.kind)).toEqual(['model', 'tool', 'model', 'tool', 'model']);
    expect(page.steps[0]).toMatchObject({ n: 1, kind: 'model', text: 'Looking.', calls: [{ name: 'grep', args: '{"pattern":"retry"}' }] });
    expect(page.steps[3]).toMatchObject({ n: 4, kind: 'tool', name: 'read_file', ok: true });
    expect(page.steps[3]?.kind === 'tool' && page.steps[3].output).toMatch(/key=\[REDACTED\]/);

    // Paged: two at a time, `next` leads on until null.
    const numbers: number[] = [];
    for (let offset: number | null = 0; offset !== null;) {
      const part = transcriptPageShape.parse(await (await api(`/v1/jobs/${id}/transcript?offset=${offset}&limit=2`)).json());
      numbers.push(...part.steps.map((s) => s.n));
      offset = part.next;
    }
    expect(numbers).toEqual([1, 2, 3, 4, 5]);

    const unknown = await api('/v1/jobs/bg-404/transcript');
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { error: { code: string } }).error.code).toBe('JOB_UNKNOWN');
    const bad = await api(`/v1/jobs/${id}/transcript?limit=0`);
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { issues: Array<{ field: string }> } }).error.issues[0]?.field).toBe('query.limit');

    // The document lists the route with its schema.
    const doc = (await (await api('/openapi.json')).json()) as { paths: Record<string, { get?: { responses: Record<string, { content?: unknown }> } }> };
    expect(doc.paths['/v1/jobs/{id}/transcript']?.get?.responses['200']?.content).toBeDefined();
  });

  it("a session's job by its ref (session/id): its transcript, as the page's detail view asks for it", async () => {
    const { api, server } = await startTestServer(cleanup, {}, { script: [{ content: 'Found it in retry.ts.' }] });
    const { id: session, session: agentSession } = server.state.createSession();
    const job = agentSession.startUserJob('Where is the retry backoff?');
    const ref = encodeURIComponent(`${session}/${job.id}`);
    await ended(agentSession.manager, job.id);
    const page = transcriptPageShape.parse(await (await api(`/v1/jobs/${ref}/transcript`)).json());
    expect(page).toMatchObject({ jobId: job.id, total: 1, next: null });
    expect(page.steps[0]).toMatchObject({ kind: 'model', text: expect.stringContaining('Found it in retry.ts.') as unknown });
    // The bare id names the server's own job, of which there is none.
    expect((await api(`/v1/jobs/${job.id}/transcript`)).status).toBe(404);
  });
});
