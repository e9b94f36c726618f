/**
 * The OpenAPI document's request parts are generated from the route declarations the server
 * serves with (src/server/route-spec.ts `serve`): one object per route holds its prose, the zod
 * schemas its request is parsed with and its responses. So a schema change is the route's and
 * the document's at once: checked on a route of its own, then over every real route (each refuses
 * an unknown field, and its document entry says it would).
 */
import Fastify, { type FastifyError } from 'fastify';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { openApiDocument } from '../../src/server/openapi.js';
import { ROUTE_DOCS } from '../../src/server/route-docs.js';
import { serve, type RouteDoc } from '../../src/server/route-spec.js';
import { errorBody } from '../../src/server/responses.js';
import { BadRequestError } from '../../src/server/schemas.js';
import { useCleanup } from '../helpers/cleanup.js';
import { startTestServer } from '../helpers/server.js';

const cleanup = useCleanup();

type JsonSchema = { properties?: Record<string, unknown>; required?: string[]; additionalProperties?: unknown; anyOf?: JsonSchema[] };
type Operation = { requestBody?: { content: Record<string, { schema: JsonSchema }> }; parameters?: Array<{ name: string; in: string; required: boolean }> };

function operationOf(doc: Record<string, unknown>, path: string, method: string): Operation {
  return (doc.paths as Record<string, Record<string, Operation>>)[path]?.[method] as Operation;
}

/** A route of its own, declared once; the app answers a bad request as the plugin does (400, each field named). */
async function appServing(route: RouteDoc) {
  const app = Fastify();
  app.setErrorHandler((error: FastifyError, _request, reply) =>
    error instanceof BadRequestError ? reply.code(400).send({ issues: error.issues }) : reply.code(500).send({ message: error.message }),
  );
  serve(app, route, async (input) => input);
  cleanup.add(() => app.close());
  await app.ready();
  return app;
}

const noteRoute = (body: z.ZodType) =>
  ({
    method: 'post',
    path: '/v1/notes/{id}',
    operationId: 'addNote',
    summary: 'Add a note.',
    params: z.strictObject({ id: z.string().min(1) }),
    query: z.strictObject({ dryRun: z.coerce.boolean().default(false) }),
    body,
    responses: { 200: { description: 'The note', schema: errorBody } },
  }) satisfies RouteDoc;

describe('route declarations: the route and its document entry are one object', () => {
  it('what the route parses is what the document says, and a schema change moves both', async () => {
    const text = z.strictObject({ text: z.string().min(1).describe('The note.'), pinned: z.boolean().default(false) });
    const route = noteRoute(text);
    const app = await appServing(route);
    // The handler gets the parsed parts: defaults applied, params from the path.
    const ok = await app.inject({ method: 'POST', url: '/v1/notes/n1', payload: { text: 'hi' } });
    expect(ok.json()).toEqual({ params: { id: 'n1' }, query: { dryRun: false }, body: { text: 'hi', pinned: false } });
    const bad = await app.inject({ method: 'POST', url: '/v1/notes/n1', payload: { text: '', color: 'red' } });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().issues.map((i: { field: string }) => i.field)).toEqual(expect.arrayContaining(['body.text', 'body.color']));
    const op = operationOf(openApiDocument('t', { routes: [route] }), '/v1/notes/{id}', 'post');
    const schema = op.requestBody?.content['application/json']?.schema as JsonSchema;
    expect(Object.keys(schema.properties ?? {})).toEqual(['text', 'pinned']);
    expect(schema.required).toEqual(['text']);
    expect(schema.additionalProperties).toBe(false);
    expect(op.parameters?.map((p) => `${p.in} ${p.name} ${p.required}`)).toEqual(['path id true', 'query dryRun false']);

    // The schema grows a field: the route takes it and the document shows it, with nothing else changed.
    const grown = noteRoute(text.extend({ color: z.enum(['red', 'blue']) }));
    const app2 = await appServing(grown);
    const colored = await app2.inject({ method: 'POST', url: '/v1/notes/n1', payload: { text: 'hi', color: 'red' } });
    expect(colored.json().body).toEqual({ text: 'hi', pinned: false, color: 'red' });
    expect((await app2.inject({ method: 'POST', url: '/v1/notes/n1', payload: { text: 'hi', color: 'green' } })).statusCode).toBe(400);
    const grownOp = operationOf(openApiDocument('t', { routes: [grown] }), '/v1/notes/{id}', 'post');
    const grownSchema = grownOp.requestBody?.content['application/json']?.schema as JsonSchema;
    expect(grownSchema.properties?.color).toEqual({ type: 'string', enum: ['red', 'blue'] });
    expect(grownSchema.required).toEqual(['text', 'color']);
  });

  it('every real route refuses an unknown body field or query parameter, naming it, as its document entry says', async () => {
    const server = await startTestServer(cleanup, {});
    const doc = (await (await server.api('/openapi.json')).json()) as Record<string, unknown>;
    const concrete = (path: string) => path.replace('{id}', 'bg-404').replace('{callId}', 'call-1');
    let checked = 0;
    for (const route of ROUTE_DOCS) {
      const op = operationOf(doc, route.path, route.method);
      expect(op, `${route.method} ${route.path} is in the document`).toBeDefined();
      if (route.body) {
        const schema = op.requestBody?.content['application/json']?.schema as JsonSchema;
        // The document forbids other fields (each branch of a union body too)...
        for (const branch of schema.anyOf ?? [schema]) expect(branch.additionalProperties, `${route.operationId}'s body`).toBe(false);
        // ...and so does the route: a 400 that names it.
        const response = await server.api(concrete(route.path), { method: route.method.toUpperCase(), json: { __probe: 1 } });
        expect(response.status, `${route.operationId} with an unknown body field`).toBe(400);
        expect(JSON.stringify(await response.json())).toContain('body.__probe');
        checked++;
      }
      if (route.query) {
        const names = (op.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name);
        expect(names).not.toContain('__probe');
        const response = await server.api(`${concrete(route.path)}?__probe=1`, { method: route.method.toUpperCase() });
        expect(response.status, `${route.operationId} with an unknown query parameter`).toBe(400);
        expect(JSON.stringify(await response.json())).toContain('query.__probe');
        checked++;
      }
    }
    expect(checked).toBeGreaterThanOrEqual(12);
  });
});
