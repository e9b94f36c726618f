import { z } from 'zod';
import type { ZodType } from 'zod';
import { ForkpoolError } from './errors.js';

/**
 * The public tool contract (`import { tool } from 'forkpool'`): one small value per tool, as the
 * AI SDK's and @openai/agents' `tool()`. The loop owns validation, gating, timeouts, the output
 * cap and redaction, so a tool is its name, description, schema and `run`. Built-ins, the
 * embedder's host tools, tool modules and MCP tools are all such definitions in one catalog
 * (src/main/tools/catalog.ts); docs/tools.md "Your own tools".
 */

/** A JSON value: what a tool may return besides a string (sent to the model as JSON text). */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/** What a tool's `run` gets besides its arguments. */
export interface ToolCallContext {
  /** Aborted on cancel, hard stop, job timeout, the tool's timeout, or its job's thread dying mid-call. */
  signal: AbortSignal;
  /** The job that called it (`parent` for the parent agent's own loop). */
  jobId: string;
  /** The model's tool call id. */
  callId: string;
  /** The job's agent (a key of `config.agents`), or `fork` for a fork of the parent, `parent` for the parent. */
  agent: string;
}

/** One tool a model may call. Build it with {@link tool}, which checks it. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a plain `ToolDefinition` (a list of tools) holds tools of any argument type
export interface ToolDefinition<Args = any> {
  /** `^[a-zA-Z0-9_-]{1,64}$`, unique in the catalog (no clash with a built-in or another tool). */
  name: string;
  description: string;
  /** A zod 4 schema or a JSON Schema object describing an object; arguments are validated with it before `run`. */
  parameters: ZodType<Args> | Record<string, unknown>;
  /** Needs a grant (`grantedTools`, or a person's answer in the parent) before it runs, as `bash`. Default false. */
  gated?: boolean;
  /** This tool's timeout in ms; default `toolLimits.toolTimeoutMs`. */
  timeoutMs?: number;
  /** Its answer: a string, or a JSON value sent as JSON text. A throw goes back to the model as the call's error. */
  run(args: Args, ctx: ToolCallContext): Promise<string | JsonValue> | string | JsonValue;
}

export const TOOL_NAME_PATTERN = /^[a-zA-Z0-9_-]{1,64}$/;
/** The longest tool timeout accepted (a day): beyond it a job's own limits decide. */
const MAX_TOOL_TIMEOUT_MS = 86_400_000;
const MAX_DESCRIPTION_CHARS = 10_000;

/**
 * Checks a tool definition and returns it unchanged: name, description, parameters (a zod 4
 * schema or a JSON Schema of an object), `gated`, `timeoutMs` and `run`. Throws a
 * `CONFIG_INVALID` ForkpoolError naming the tool, the field, what was expected and what came.
 */
export function tool<Args>(def: ToolDefinition<Args>): ToolDefinition<Args> {
  checkToolDefinition(def, 'tool()');
  return def;
}

/** The checks of {@link tool}; `where` says where the definition came from (a module path, `tools[2]`). */
export function checkToolDefinition(def: unknown, where: string): asserts def is ToolDefinition {
  // `received` is the value itself, or (`said`) already in words.
  const fail = (field: string, expected: string, received: unknown, said = false): never => {
    const name = isRecord(def) && typeof def.name === 'string' ? ` "${def.name}"` : '';
    throw new ForkpoolError(
      'CONFIG_INVALID',
      `${where}: tool${name}: ${field}: expected ${expected}, received ${said ? String(received) : describe(received)}`,
    );
  };
  if (!isRecord(def)) return fail('definition', 'an object { name, description, parameters, run }', def);
  if (typeof def.name !== 'string' || !TOOL_NAME_PATTERN.test(def.name)) fail('name', 'a name matching ^[a-zA-Z0-9_-]{1,64}$', def.name);
  if (typeof def.description !== 'string' || def.description.trim() === '' || def.description.length > MAX_DESCRIPTION_CHARS)
    fail('description', `a non-empty string of at most ${MAX_DESCRIPTION_CHARS} characters`, def.description);
  if (def.gated !== undefined && typeof def.gated !== 'boolean') fail('gated', 'true or false', def.gated);
  const timeout = def.timeoutMs;
  if (timeout !== undefined && (typeof timeout !== 'number' || !Number.isInteger(timeout) || timeout < 1 || timeout > MAX_TOOL_TIMEOUT_MS))
    fail('timeoutMs', `an integer from 1 to ${MAX_TOOL_TIMEOUT_MS}`, timeout);
  if (typeof def.run !== 'function') fail('run', 'a function (args, ctx) => string | JSON value', def.run);
  const parameters = def.parameters;
  if (!isRecord(parameters)) return fail('parameters', 'a zod schema or a JSON Schema object', parameters);
  let json: Record<string, unknown>;
  try {
    json = jsonSchemaOf(parameters);
    argsSchemaOf(parameters);
  } catch (error) {
    return fail(
      'parameters',
      'a zod 4 schema or a JSON Schema object zod can read',
      `one it cannot (${error instanceof Error ? error.message : String(error)})`,
      true,
    );
  }
  // The model's tool call carries an object of named arguments: a string or array schema cannot be offered.
  if (json.type !== 'object') fail('parameters', 'a schema of an object (type: "object")', `type ${describe(json.type)}`, true);
}

/** A zod 4 schema (classic or mini, any copy of zod): it carries `_zod`. */
function isZodSchema(value: object): value is ZodType {
  return '_zod' in value && typeof (value as { safeParse?: unknown }).safeParse === 'function';
}

/** The JSON Schema a model is shown for these parameters (`$schema` dropped). Cached per schema object. */
export function jsonSchemaOf(parameters: ToolDefinition['parameters']): Record<string, unknown> {
  const cached = jsonSchemas.get(parameters);
  if (cached) return cached;
  const raw = (isZodSchema(parameters) ? z.toJSONSchema(parameters, { io: 'input' }) : parameters) as Record<string, unknown>;
  const { $schema: _ignored, ...schema } = raw;
  jsonSchemas.set(parameters, schema);
  return schema;
}

/**
 * The zod schema arguments are validated with: the tool's own, or its JSON Schema read by zod's
 * `z.fromJSONSchema` (zod 4.1+, no other dependency). Cached per schema object.
 */
export function argsSchemaOf(parameters: ToolDefinition['parameters']): ZodType {
  if (isZodSchema(parameters)) return parameters;
  let schema = argsSchemas.get(parameters);
  if (!schema) {
    schema = z.fromJSONSchema(parameters as Parameters<typeof z.fromJSONSchema>[0]);
    argsSchemas.set(parameters, schema);
  }
  return schema;
}

/** A tool's answer as the text the model reads: a string as is, anything else as JSON. */
export function toolAnswerText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === undefined) return '';
  const text = JSON.stringify(value);
  // A function, a symbol, or a value JSON cannot hold.
  if (text === undefined) throw new Error(`the tool returned ${typeof value}, not a string or a JSON value`);
  return text;
}

const jsonSchemas = new WeakMap<object, Record<string, unknown>>();
const argsSchemas = new WeakMap<object, ZodType>();

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (typeof value === 'function') return 'a function';
  if (typeof value === 'string') return JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}…` : value);
  if (Array.isArray(value)) return 'an array';
  if (value === null) return 'null';
  if (typeof value === 'symbol') return value.toString();
  if (typeof value !== 'object') return `${value as number | boolean | bigint}`;
  return 'an object';
}
