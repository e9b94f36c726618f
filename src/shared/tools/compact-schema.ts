/**
 * The compact form of a tool's JSON Schema as the model is sent it (issue 40: the fixed part of
 * every request). Bounds a model does not need to call the tool well — string and array lengths,
 * numeric ranges, patterns, `additionalProperties: false` — are dropped from what is sent, because
 * the arguments are still validated against the full zod schema before the tool runs, and a call
 * past a bound comes back to the model as a tool error naming the field, the bound and the value.
 * Types, enums, required fields, defaults and descriptions are kept.
 */

/** Keywords the validation enforces and the model can learn from its error instead. */
const VALIDATION_ONLY = new Set(['minLength', 'maxLength', 'minItems', 'maxItems', 'pattern', 'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum']);

/** A copy of `schema` without {@link VALIDATION_ONLY} keywords nor `additionalProperties: false`, at any depth. */
export function compactSchema(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(compactSchema);
  if (schema === null || typeof schema !== 'object') return schema;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    if (VALIDATION_ONLY.has(key) && typeof value !== 'object') continue;
    if (key === 'additionalProperties' && value === false) continue;
    // `properties` maps names to schemas: a property may be called `pattern` or `maximum` itself.
    out[key] = key === 'properties' && value && typeof value === 'object' ? mapValues(value as Record<string, unknown>) : compactSchema(value);
  }
  return out;
}

function mapValues(properties: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(properties).map(([name, schema]) => [name, compactSchema(schema)]));
}
