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
import { rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

// One UTF-16 code unit above 0xFF (no `u` flag: an emoji is two units, each escaped alone).
const NOT_LATIN1 = /[^\x00-\xff]/;
const NOT_LATIN1_ALL = /[^\x00-\xff]/g;
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
// V8 keeps each module's source in every isolate, as one byte a character only when every
// character is Latin-1: a single "→" in a comment makes the whole 1.3 MB chunk two bytes a
// character. Escaped as \uXXXX (the same string value in literals, plain text in comments).
let escaped = 0;
for (const chunk of result.output) {
  if (chunk.type !== 'chunk' || !NOT_LATIN1.test(chunk.code)) continue;
  writeFileSync(
    `${outDir}/${chunk.fileName}`,
    chunk.code.replace(NOT_LATIN1_ALL, (unit) => `\\u${unit.charCodeAt(0).toString(16).padStart(4, '0')}`),
  );
  escaped++;
}
const bytes = result.output.reduce((sum, o) => sum + (o.type === 'chunk' ? o.code.length : 0), 0);
process.stderr.write(
  `bundle-worker: ${result.output.length} files, ${(bytes / 2 ** 20).toFixed(2)} MB in dist/worker/bundle, ${escaped} escaped to Latin-1 (${Date.now() - started} ms)\n`,
);
