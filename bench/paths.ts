import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The checkout's root: the nearest folder above this module with a package.json. The same from
 * bench/ (a test imports the TypeScript source) and from the bench's build (dist-bench/bench/).
 */
export const REPO_ROOT = findRoot(path.dirname(fileURLToPath(import.meta.url)));

function findRoot(dir: string): string {
  for (let at = dir; ; at = path.dirname(at)) {
    if (existsSync(path.join(at, 'package.json'))) return at;
    if (path.dirname(at) === at) throw new Error(`no package.json above ${dir}`);
  }
}

/** The library's CLI as the bench starts it in child processes (`forkpool worker`, `forkpool fanout`): the build in dist/. */
export const CLI = path.join(REPO_ROOT, 'dist/cli/index.js');

/**
 * Absolute path of a built bench file: beside this module when it runs from the bench's build,
 * else in dist-bench/bench/ (when a test imports the TypeScript source). Child processes and
 * worker threads need the built JavaScript.
 */
export function builtBenchFile(name: 'cell-child' | 'sim-child' | 'stubborn-entry'): string {
  const candidates = [fileURLToPath(new URL(`./${name}.js`, import.meta.url)), path.join(REPO_ROOT, 'dist-bench/bench', `${name}.js`)];
  const file = candidates.find((candidate) => existsSync(candidate));
  if (file) return file;
  throw new Error(`bench file ${name}.js not found; run \`npm run bench:build\` first (looked in ${candidates.join(' and ')})`);
}
