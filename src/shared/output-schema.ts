import { z } from 'zod';
import { ForkpoolError } from './errors.js';

/**
 * A job's output schema (docs/delivery.md "Typed results"): a JSON Schema object on the wire,
 * checked once where it comes in (a spawn, the config, `fanout --schema`) and compiled again in
 * the worker with zod 4's `z.fromJSONSchema`, which validates the job's final value. No other
 * validator is bundled: `fromJSONSchema` covers the draft-2020-12 keywords a structured-output
 * endpoint accepts (types, properties, required, enum, const, items, anyOf, $ref to $defs).
 */
export type OutputSchema = Record<string, unknown>;

/** The name of the terminating tool a job calls with its result (`structuredOutput: "tool"`). */
export const SUBMIT_RESULT_TOOL = 'submit_result';
/** Longest output schema accepted, as JSON characters: it is sent with every request of the job. */
export const OUTPUT_SCHEMA_MAX_CHARS = 100_000;
/** How a typed job's answer is bound: see {@link structuredOutputMode}. */
export const STRUCTURED_OUTPUT_MODES = ['auto', 'response_format', 'tool'] as const;
export type StructuredOutputMode = (typeof STRUCTURED_OUTPUT_MODES)[number];

/** The wire shape: a JSON object (checked further by {@link checkOutputSchema}). */
export const outputSchemaWire = z.record(z.string(), z.unknown());

/**
 * Checks that `schema` is a JSON Schema a job can be bound to; throws a ForkpoolError
 * (`TOOL_ARGUMENTS_INVALID`) naming `field` and what is wrong. Returns the schema unchanged.
 */
export function checkOutputSchema(schema: unknown, field: string): OutputSchema {
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) {
    throw new ForkpoolError('TOOL_ARGUMENTS_INVALID', `${field}: expected a JSON Schema object, received ${describe(schema)}`);
  }
  const json = JSON.stringify(schema);
  if (json.length > OUTPUT_SCHEMA_MAX_CHARS) {
    throw new ForkpoolError('TOOL_ARGUMENTS_INVALID', `${field}: the schema is ${json.length} characters of JSON; at most ${OUTPUT_SCHEMA_MAX_CHARS}`);
  }
  if (!('type' in schema) && !('anyOf' in schema) && !('oneOf' in schema) && !('$ref' in schema) && !('enum' in schema) && !('const' in schema)) {
    throw new ForkpoolError(
      'TOOL_ARGUMENTS_INVALID',
      `${field}: a JSON Schema with a "type" (e.g. "object"), received one with keys ${Object.keys(schema).join(', ') || 'none'}`,
    );
  }
  try {
    z.fromJSONSchema(schema as z.core.JSONSchema.JSONSchema);
  } catch (error) {
    throw new ForkpoolError('TOOL_ARGUMENTS_INVALID', `${field}: not a usable JSON Schema: ${(error as Error).message}`);
  }
  return schema;
}

/** An output schema in the config (`agents.<name>.outputSchema`): a config error names the field and what is wrong. */
export const outputSchemaConfig = outputSchemaWire.superRefine((schema, ctx) => {
  try {
    checkOutputSchema(schema, 'outputSchema');
  } catch (error) {
    ctx.addIssue({ code: 'custom', message: (error as Error).message.replace(/^outputSchema: /, '') });
  }
});

/** A library caller's schema: a zod schema (converted with `z.toJSONSchema`) or a JSON Schema object. */
export function outputSchemaFrom(schema: unknown, field: string): OutputSchema {
  if (schema instanceof z.ZodType) {
    let json: OutputSchema;
    try {
      json = z.toJSONSchema(schema, { target: 'draft-2020-12' });
    } catch (error) {
      throw new ForkpoolError('TOOL_ARGUMENTS_INVALID', `${field}: this zod schema has no JSON Schema form: ${(error as Error).message}`);
    }
    // `$schema` is noise on the wire (and some endpoints refuse unknown keys at the root).
    const { $schema: _dialect, ...rest } = json;
    return checkOutputSchema(rest, field);
  }
  return checkOutputSchema(schema, field);
}

/** The outcome of checking a value against the schema: the (parsed) data, or readable errors. */
export type OutputCheck = { ok: true; data: unknown } | { ok: false; errors: string };

/** Compiles the schema once; the returned function checks a value against it. */
export function outputValidator(schema: OutputSchema): (value: unknown) => OutputCheck {
  const compiled = z.fromJSONSchema(schema);
  return (value) => {
    const parsed = compiled.safeParse(value);
    return parsed.success ? { ok: true, data: value } : { ok: false, errors: z.prettifyError(parsed.error) };
  };
}

/**
 * True when `schema` meets strict structured output's rules (OpenAI's `strict: true`): every
 * object lists all its properties in `required` and sets `additionalProperties: false`, and no
 * keyword strict mode refuses is used. Otherwise a `response_format` request goes with `strict: false`.
 */
export function isStrictCompatible(schema: unknown): boolean {
  if (Array.isArray(schema)) return schema.every(isStrictCompatible);
  if (schema === null || typeof schema !== 'object') return true;
  const node = schema as Record<string, unknown>;
  for (const refused of ['patternProperties', 'unevaluatedProperties', 'if', 'then', 'else', 'not', 'dependentRequired', 'dependentSchemas']) {
    if (refused in node) return false;
  }
  const isObject = node.type === 'object' || (Array.isArray(node.type) && node.type.includes('object')) || 'properties' in node;
  if (isObject) {
    if (node.additionalProperties !== false) return false;
    const properties = Object.keys((node.properties as Record<string, unknown> | undefined) ?? {});
    const required = Array.isArray(node.required) ? node.required : [];
    if (!properties.every((name) => required.includes(name))) return false;
  }
  return Object.entries(node).every(
    ([key, value]) => key === 'enum' || key === 'const' || key === 'default' || key === 'examples' || isStrictCompatible(value),
  );
}

/**
 * The mechanic a job uses: `response_format` where the endpoint is known to support
 * `json_schema` (OpenAI's own API), else the terminating `submit_result` tool, which every
 * endpoint with tool calls supports. A set mode is used as it is.
 */
export function structuredOutputMode(mode: StructuredOutputMode, baseUrl: string | undefined): 'response_format' | 'tool' {
  if (mode !== 'auto') return mode;
  try {
    return baseUrl !== undefined && new URL(baseUrl).hostname === 'api.openai.com' ? 'response_format' : 'tool';
  } catch {
    return 'tool';
  }
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'string' ? `the string ${JSON.stringify(value.slice(0, 60))}` : typeof value;
}
