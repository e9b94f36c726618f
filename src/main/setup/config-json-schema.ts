/**
 * The JSON Schema of forkpool.config.json, made from the same zod schema that validates it
 * (`z.toJSONSchema`, the input side: every field optional where it has a default), for editors:
 * a file that starts with `"$schema": "…/forkpool.config.schema.json"` gets completion and
 * checks of every field. It also allows `$schema` itself and the seeds' snake_case aliases.
 * Written to the package root by `scripts/config-schema.mjs` (checked in CI); not loaded by
 * the library.
 */
import { z } from 'zod';
import { configSchema } from '../../shared/config-schema.js';
import { SNAKE_ALIASES } from '../../shared/config.js';

type JsonSchema = { properties?: Record<string, JsonSchema>; [key: string]: unknown };

export function configJsonSchema(): Record<string, unknown> {
  const schema = z.toJSONSchema(configSchema, { io: 'input', unrepresentable: 'any', target: 'draft-2020-12' }) as JsonSchema;
  const properties = schema.properties ?? {};
  const aliases = Object.fromEntries(
    Object.entries(SNAKE_ALIASES).map(([alias, [group, key]]) => [
      alias,
      { ...(properties[group]?.properties?.[key] ?? {}), description: `The seeds' name for ${group}.${key} (an alias).` },
    ]),
  );
  // workspaceRoot is required of a parsed config, not of a file: loading fills it (the working directory).
  const { required: _required, ...rest } = schema;
  return {
    ...rest,
    title: 'forkpool configuration (forkpool.config.json)',
    description: 'See docs/configuration.md. Keep API keys in the environment (OPENAI_API_KEY), not in this file.',
    properties: { $schema: { type: 'string', description: 'Where this schema is, for editors.' }, ...properties, ...aliases },
  };
}
