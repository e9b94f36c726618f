/**
 * The server's own bearer token is scrubbed from every response like the model key: a job whose
 * answer (or a file it read) holds it shows `[REDACTED]` in its result and transcript. A real
 * server over a scripted simulator, jobs in the real pool.
 */
import { describe, expect, it } from 'vitest';
import { useCleanup } from '../helpers/cleanup.js';
import { tempWorkspace } from '../helpers/config.js';
import { TOKEN, startTestServer } from '../helpers/server.js';

describe("the server's token in a job's output", () => {
  const cleanup = useCleanup();

  it('is redacted from the result and the transcript the API serves', async () => {
    const workspace = tempWorkspace({ 'notes.txt': `the server token is ${TOKEN}\n` }, cleanup);
    const { api } = await startTestServer(
      cleanup,
      { workspaceRoot: workspace, tools: ['read_file'] },
      { script: [{ toolCalls: [{ name: 'read_file', arguments: { path: 'notes.txt' } }] }, { content: `Found it: ${TOKEN}` }] },
    );
    const created = (await (await api('/v1/jobs', { json: { task: 'Find the token.', label: 'token' } })).json()) as { jobs: Array<{ id: string }> };
    const id = created.jobs[0]?.id as string;
    const result = await api(`/v1/jobs/${id}/result?wait=30`);
    expect(result.status).toBe(200);
    const resultText = await result.text();
    expect(resultText).toContain('Found it: [REDACTED]');
    const transcript = await (await api(`/v1/jobs/${id}/transcript`)).text();
    expect(transcript).toContain('the server token is [REDACTED]');
    for (const [where, text] of Object.entries({ result: resultText, transcript })) expect(text.includes(TOKEN), `the token is in the ${where}`).toBe(false);
  });
});
