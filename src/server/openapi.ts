import { z } from 'zod';
import { ROUTE_DOCS, responsesOf, type RouteDoc } from './route-docs.js';
import { responseSchemas } from './responses.js';

export interface OpenApiOptions {
  /** Where the routes are mounted (`forkpoolRoutes`' `prefix`): the document's one server. Default: the root. */
  prefix?: string;
  /** The routes to document; default {@link ROUTE_DOCS}. */
  routes?: readonly RouteDoc[];
}

type JsonSchema = Record<string, unknown>;

/**
 * The OpenAPI 3.1 document of the API (`GET /openapi.json`), from the zod schemas the routes
 * parse requests with (schemas.ts) and build bodies by (responses.ts). Response bodies are
 * components (`#/components/schemas/JobDetail`, ...), so a generated client has a named type
 * for each; a response schema that has no name gets `<OperationId><status>`.
 */
export function openApiDocument(version: string, options: OpenApiOptions = {}): Record<string, unknown> {
  const routes = options.routes ?? ROUTE_DOCS;
  // A response schema without a name gets one here, once: every body is a component.
  const name = (schema: z.ZodType, fallback: string) => {
    if (!responseSchemas.has(schema)) responseSchemas.add(schema, { id: fallback });
    return responseSchemas.get(schema)?.id ?? fallback;
  };
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const responses: Record<string, unknown> = {};
    for (const [status, response] of Object.entries(responsesOf(route))) {
      const id = name(response.schema, `${route.operationId[0]?.toUpperCase()}${route.operationId.slice(1)}${status}`);
      responses[status] = {
        description: response.description,
        content: { [response.contentType ?? 'application/json']: { schema: { $ref: `#/components/schemas/${id}` } } },
      };
    }
    const body = route.body;
    paths[route.path] = {
      ...paths[route.path],
      [route.method]: {
        operationId: route.operationId,
        summary: route.summary,
        ...(route.params || route.query ? { parameters: parametersOf(route) } : {}),
        ...(body ? { requestBody: { required: !body.safeParse(undefined).success, content: { 'application/json': { schema: requestSchema(body) } } } } : {}),
        responses,
        ...(route.auth === false ? { security: [] } : {}),
      },
    };
  }
  const components = z.toJSONSchema(responseSchemas, { uri: (id) => `#/components/schemas/${id}`, unrepresentable: 'any' }).schemas;
  return {
    openapi: '3.1.0',
    info: { title: 'forkpool serve', version, description: 'Background sub-agents over HTTP: jobs, sessions, events.' },
    servers: [{ url: options.prefix || '/', description: 'Relative to where this document is served' }],
    security: [{ bearer: [] }],
    paths,
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      // Each is embedded in this document: its own `$schema` and `$id` would make it a document of its own.
      schemas: Object.fromEntries(Object.entries(components).map(([id, schema]) => [id, withoutSchemaKeys(schema as JsonSchema)])),
    },
  };
}

function parametersOf(route: RouteDoc): unknown[] {
  const parameters: unknown[] = [];
  for (const [where, schema] of [
    ['path', route.params],
    ['query', route.query],
  ] as const) {
    if (!schema) continue;
    const shape = requestSchema(schema) as { properties?: Record<string, JsonSchema>; required?: string[] };
    for (const [name, property] of Object.entries(shape.properties ?? {})) {
      const { description, ...rest } = property;
      parameters.push({
        name,
        in: where,
        required: where === 'path' || (shape.required ?? []).includes(name),
        ...(typeof description === 'string' ? { description } : {}),
        schema: rest,
      });
    }
  }
  return parameters;
}

/** A request part as it may be sent (`io: input`: defaults optional, coerced query numbers as their input). */
function requestSchema(schema: z.ZodType): JsonSchema {
  return withoutSchemaKeys(z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }));
}

function withoutSchemaKeys(schema: JsonSchema): JsonSchema {
  const { $schema: _schema, $id: _id, ...rest } = schema;
  return rest;
}
