/**
 * A spawn's own spec through `POST /v1/jobs`: the worker's model requests on the sim carry the
 * appended prompt, the tool subset and the model; a spec the config refuses is a 400 with the
 * manager's code and the field named; a malformed one a 400 naming the body field.
 */
import { describe, expect, it } from 'vitest';
import { startForkpoolServer } from '../../src/server/app.js';
import { useCleanup } from '../helpers/cleanup.js';
import { requestsForTask, systemOf, toolNames } from '../helpers/requests.js';
import { startTestSim } from '../helpers/sim.js';
import { TOKEN } from '../helpers/server.js';

const cleanup = useCleanup();
const TASK = 'Where is the retry backoff implemented?';
const PROMPT = 'Cite every path you read. HTTP-SPEC-MARKER';

async function start() {
  const { sim, config } = await startTestSim(
    cleanup,
    {},
    { tools: ['read_file', 'find_files', 'grep'], models: { 'cheap-model': {} }, background: { maxAlertsPerJob: 0 } },
  );
  const server = await startForkpoolServer({ config, token: TOKEN, port: 0 });
  cleanup.add(() => server.close());
  const post = async (body: unknown) => {
    const response = await fetch(`${server.url}/v1/jobs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: response.status, body: JSON.parse(await response.text()) };
  };
  const result = (id: string) => fetch(`${server.url}/v1/jobs/${id}/result?wait=60`, { headers: { authorization: `Bearer ${TOKEN}` } });
  return { sim, post, result };
}

describe('POST /v1/jobs with a spec', () => {
  it("runs the job with the appended prompt, only the subset's tools and the chosen model", async () => {
    const { sim, post, result } = await start();
    const created = await post({ task: TASK, label: 'spec', systemPrompt: PROMPT, tools: ['grep'], model: 'cheap-model' });
    expect(created.status).toBe(202);
    const [job] = created.body.jobs;
    expect((await result(job.id)).status).toBe(200);
    const requests = requestsForTask(sim, TASK);
    expect(requests.length).toBeGreaterThan(0);
    for (const request of requests) {
      expect(systemOf(request).endsWith(`\n\n${PROMPT}`)).toBe(true);
      expect(toolNames(request)).toEqual(['grep']);
      expect(request.body.model).toBe('cheap-model');
    }
  });

  it("a spec the config refuses is a 400 with the manager's code naming the field; a malformed one a 400 naming the body field; nothing starts", async () => {
    const { sim, post } = await start();
    const refused: Array<[Record<string, unknown>, string, RegExp]> = [
      [{ tools: ['bash'] }, 'TOOL_NOT_ALLOWED', /^tools: "bash" is not among the caller's tools \(read_file, find_files, grep\)/],
      [{ tools: ['teleport'] }, 'TOOL_UNKNOWN', /^tools: "teleport" is not a built-in tool/],
      [{ model: 'gpt-9' }, 'MODEL_NOT_ALLOWED', /^model: "gpt-9" is not allowed for a spawn; allowed: "forkpool-sim", "cheap-model"/],
      [{ systemPrompt: PROMPT, replaceSystemPrompt: true }, 'PROMPT_REPLACE_NOT_ALLOWED', /^replaceSystemPrompt: /],
    ];
    for (const [spec, code, message] of refused) {
      const response = await post({ task: TASK, ...spec });
      expect(response.status, JSON.stringify(spec)).toBe(400);
      expect(response.body.error, JSON.stringify(spec)).toMatchObject({ code, message: expect.stringMatching(message) });
    }
    const malformed: Array<[Record<string, unknown>, string]> = [
      [{ tools: 'grep' }, 'body.tools'],
      [{ model: '' }, 'body.model'],
      [{ systemPrompt: 'x'.repeat(50_001) }, 'body.systemPrompt'],
      [{ replaceSystemPrompt: 'yes' }, 'body.replaceSystemPrompt'],
    ];
    for (const [spec, field] of malformed) {
      const response = await post({ task: TASK, ...spec });
      expect(response.status, JSON.stringify(spec)).toBe(400);
      expect(response.body.error.code).toBe('BAD_REQUEST');
      expect(response.body.error.issues.map((i: { field: string }) => i.field)).toContain(field);
    }
    expect(sim.requests).toHaveLength(0);
  });
});
