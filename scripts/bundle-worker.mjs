/**
 * After `tsc`: bundles the worker entries (dist/worker/entry.js, naive-entry.js) with rolldown
 * into dist/worker/bundle/, so each worker thread loads one tree-shaken file (about 1 MB)
 * instead of ~290 modules (1.8 MB: all of zod's 64 locales, every openai resource). Tools that
 * load their libraries on first use (grep's re2js, find_files' picomatch, code_outline's
 * parser) stay separate chunks or packages, loaded only by threads that use them.
 *
 * rolldown is a dev dependency: without it (or if it fails) nothing is written and the
 * executors load dist/worker/entry.js as before (src/main/executor.ts, workerFileUrl).
 */
import { rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const dist = fileURLToPath(new URL('../dist/worker/', import.meta.url));
const outDir = `${dist}bundle`;
rmSync(outDir, { recursive: true, force: true });
let build;
try {
  ({ build } = await import('rolldown'));
} catch {
  process.stderr.write('bundle-worker: rolldown is not installed; workers will load dist/worker/entry.js unbundled\n');
  process.exit(0);
}
const started = Date.now();
const result = await build({
  input: { entry: `${dist}entry.js`, 'naive-entry': `${dist}naive-entry.js` },
  platform: 'node',
  treeshake: true,
  // @babel/parser is required at run time (createRequire), so it stays a package.
  external: [/^node:/, '@babel/parser'],
  output: { dir: outDir, format: 'esm', minify: false, sourcemap: false, entryFileNames: '[name].js', chunkFileNames: '[name]-[hash].js' },
  logLevel: 'warn',
  write: true,
});
const bytes = result.output.reduce((sum, o) => sum + (o.type === 'chunk' ? o.code.length : 0), 0);
process.stderr.write(`bundle-worker: ${result.output.length} files, ${(bytes / 2 ** 20).toFixed(2)} MB in dist/worker/bundle (${Date.now() - started} ms)\n`);
