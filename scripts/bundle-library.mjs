/**
 * After `tsc`: bundles the library's entry points (package.json `exports`, each `import` a
 * dist/bundle/<name>.js) with rolldown into dist/bundle/, so `import 'forkpool'` reads about 20
 * files instead of ~100 of forkpool's own (issue 19: the import's time went mostly to Node's
 * module loader). One build for all entries: code they share sits in shared chunks, so a
 * program importing `forkpool` and `forkpool/executors` gets one copy of each class.
 *
 * - Every package stays external (a user's openai, zod and piscina are deduplicated as before;
 *   peers load only where they did), and `.d.ts` types stay tsc's (`exports` `types`).
 * - Every output file is one folder below dist/, so the paths modules resolve against
 *   `import.meta.url` (`../worker/` among the candidates in src/main/executors/executor.ts,
 *   `../../package.json` in src/server/app.ts) point at the same files from here.
 * - The inline executor's job runtime (dist/worker/job.js, loaded by URL on the main thread) is
 *   an entry too, `worker-job.js`: from the bundle it shares the bundle's modules (one cgroup
 *   counter, one search-slot limit per thread) instead of loading a second copy.
 * - The CLI, the bench's `#dist/…` imports (package.json `imports`) and tests that import dist/ by
 *   path keep loading tsc's modules; the bench's `forkpool…` imports load these bundles.
 *
 * Without rolldown (a dev dependency) each entry is written as a one-line re-export of tsc's file.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../', import.meta.url));
const outDir = `${root}dist/bundle/`;
const pkg = JSON.parse(readFileSync(`${root}package.json`, 'utf8'));
/** name → tsc's built file: `./dist/bundle/server.js` is built from `./dist/server/index.js` (its `types`, as .js). */
const input = { 'worker-job': `${root}dist/worker/job.js` };
for (const [subpath, target] of Object.entries(pkg.exports)) {
  if (typeof target === 'string') continue; // ./package.json
  const name = /^\.\/dist\/bundle\/([\w-]+)\.js$/.exec(target.import)?.[1];
  if (!name || !target.types.endsWith('.d.ts'))
    throw new Error(`bundle-library: exports["${subpath}"] must import ./dist/bundle/<name>.js and have .d.ts types`);
  input[name] = path.join(root, target.types.replace(/\.d\.ts$/, '.js'));
}
rmSync(outDir, { recursive: true, force: true });
// The bench once built into dist/bench (it is bench/ → dist-bench/ now): a checkout's older build
// would otherwise stay in dist/, which package.json `files` ships whole.
rmSync(`${root}dist/bench`, { recursive: true, force: true });
let build;
try {
  ({ build } = await import('rolldown'));
} catch {
  mkdirSync(outDir);
  for (const [name, file] of Object.entries(input)) writeFileSync(`${outDir}${name}.js`, `export * from ${JSON.stringify(path.relative(outDir, file))};\n`);
  process.stderr.write('bundle-library: rolldown is not installed; dist/bundle re-exports the unbundled modules\n');
  process.exit(0);
}
const started = Date.now();
const result = await build({
  input,
  platform: 'node',
  treeshake: true,
  // Bare specifiers are packages (and node: builtins): all external. Only forkpool's own files are bundled.
  external: (id) => !id.startsWith('.') && !id.startsWith('/') && !id.startsWith('file:'),
  output: {
    dir: outDir,
    format: 'esm',
    minify: false,
    sourcemap: false,
    // Class and function names as in the source (errors' names, stack traces), even where two modules' names collide.
    keepNames: true,
    entryFileNames: '[name].js',
    chunkFileNames: '[name]-[hash].js',
  },
  logLevel: 'warn',
  write: true,
});
const bytes = result.output.reduce((sum, o) => sum + (o.type === 'chunk' ? o.code.length : 0), 0);
process.stderr.write(`bundle-library: ${result.output.length} files, ${(bytes / 2 ** 20).toFixed(2)} MB in dist/bundle (${Date.now() - started} ms)\n`);
