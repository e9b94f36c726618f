import { readFileSync } from 'node:fs';
import { checkOutputSchema, type OutputSchema } from '../shared/output-schema.js';

/**
 * `fanout --schema FILE`: the JSON Schema every job's answer must match (docs/delivery.md
 * "Typed results"). Read and checked before anything starts: a problem names the file and what
 * is wrong with it (the caller exits 2).
 */
export function readSchemaFile(file: string): { schema: OutputSchema } | { problem: string } {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    return { problem: `--schema ${JSON.stringify(file)}: cannot read it (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})` };
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { problem: `--schema ${JSON.stringify(file)}: not JSON (${(error as Error).message})` };
  }
  try {
    return { schema: checkOutputSchema(value, `--schema ${JSON.stringify(file)}`) };
  } catch (error) {
    return { problem: (error as Error).message };
  }
}
