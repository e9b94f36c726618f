/**
 * Typed results through the HTTP API (docs/delivery.md "Typed results"): `POST /v1/jobs` with an
 * `outputSchema` runs a typed job on the real pool; its `data` is in `GET /v1/jobs/{id}`, its
 * `/result`, the list and the SSE `done` event, every answer checked against the served OpenAPI
 * document; a bad schema is a 400 naming `outputSchema`, and nothing starts.
 */
import { describe, expect, it } from 'vitest';
import { useCleanup } from '../helpers/cleanup.js';
import { ApiContract, type OpenApiDoc } from '../helpers/openapi.js';
import { readEvents, startTestServer } from '../helpers/server.js';

const cleanup = useCleanup();
const TASK = 'Where is the retry backoff implemented?';
const SCHEMA = {
  type: 'object',
  properties: { file: { type: 'string' }, lines: { type: 'integer', minimum: 1 } },
  required: ['file', 'lines'],
  additionalProperties: false,
};

describe('typed results over HTTP', () => {
  it('POST /v1/jobs with outputSchema: data in the job, its result, the list and the SSE done event, as the document says', async () => {
    const server = await startTestServer(cleanup, { structuredOutput: 'response_format' });
    const contract = new ApiContract((await (await server.api('/openapi.json')).json()) as OpenApiDoc);
    const call = async (path: string, init: Parameters<typeof server.api>[1] = {}) => {
      const response = await server.api(path, init);
      return { status: response.status, body: await contract.check(init.json !== undefined ? 'POST' : 'GET', path, response) };
    };
    const events = readEvents(server.url, { until: (seen) => seen.some((e) => e.event === 'done') });
    const created = await call('/v1/jobs', { json: { task: TASK, label: 'typed', outputSchema: SCHEMA } });
    expect(created.status).toBe(202);
    const id = created.body.jobs[0].id as string;
    const result = await call(`/v1/jobs/${id}/result?wait=60`);
    expect(result.body).toMatchObject({ state: 'ended', status: 'ok', data: { file: expect.any(String), lines: 1 } });
    const data = result.body.data;
    expect(JSON.parse(result.body.resultText)).toEqual(data);
    expect((await call(`/v1/jobs/${id}`)).body.data).toEqual(data);
    expect((await call('/v1/jobs')).body.jobs.find((j: { id: string }) => j.id === id).data).toEqual(data);
    const done = (await events).events.find((e) => e.event === 'done');
    expect(JSON.parse(done?.data ?? '{}')).toMatchObject({ job: { id, data } });
    // The job's requests carried the schema as its response_format.
    const bound = server.sim.requests.map((r) => (r.body as { response_format?: { json_schema?: { schema?: unknown } } }).response_format);
    expect(bound.length).toBeGreaterThan(0);
    expect(bound.every((format) => JSON.stringify(format?.json_schema?.schema) === JSON.stringify(SCHEMA))).toBe(true);
  });

  it('a bad outputSchema is a 400 naming it; an untyped job has data null', async () => {
    const server = await startTestServer(cleanup);
    const contract = new ApiContract((await (await server.api('/openapi.json')).json()) as OpenApiDoc);
    const response = await server.api('/v1/jobs', { json: { task: TASK, outputSchema: { type: 'objekt' } } });
    const body = await contract.check('POST', '/v1/jobs', response);
    expect(response.status).toBe(400);
    expect(body.error.code).toBe('TOOL_ARGUMENTS_INVALID');
    expect(body.error.message).toMatch(/outputSchema: not a usable JSON Schema: Unsupported type: objekt/);
    const notObject = await server.api('/v1/jobs', { json: { task: TASK, outputSchema: 'object' } });
    expect(notObject.status).toBe(400);
    expect(JSON.stringify(await contract.check('POST', '/v1/jobs', notObject))).toContain('outputSchema');
    expect(server.sim.requests).toHaveLength(0);

    const plain = await server.api('/v1/jobs', { json: { task: TASK } });
    const id = ((await contract.check('POST', '/v1/jobs', plain)) as { jobs: Array<{ id: string }> }).jobs[0]?.id;
    const ended = await server.api(`/v1/jobs/${id}/result?wait=60`);
    expect(await contract.check('GET', `/v1/jobs/${id}/result`, ended)).toMatchObject({ status: 'ok', data: null });
  });
});
