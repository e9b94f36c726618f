import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ForkpoolError } from '../shared/errors.js';

/**
 * Absolute path of a built bench file: beside this module when it runs from dist/, else under
 * dist/bench/ (when a test imports the TypeScript source). Child processes and worker threads
 * need the built JavaScript.
 */
export function builtBenchFile(name: 'cell-child' | 'sim-child' | 'stubborn-entry'): string {
  const candidates = [new URL(`./${name}.js`, import.meta.url), new URL(`../../dist/bench/${name}.js`, import.meta.url)];
  for (const url of candidates) {
    const file = fileURLToPath(url);
    if (existsSync(file)) return file;
  }
  throw new ForkpoolError(
    'INTERNAL',
    `bench file ${name}.js not found; run \`npm run build\` first (looked in ${candidates.map((u) => fileURLToPath(u)).join(' and ')})`,
  );
}
