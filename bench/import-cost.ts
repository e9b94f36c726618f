/**
 * What `import 'forkpool'` costs a library user, against its baseline, in one run (issue 19 §4):
 *
 *   - cold start: `import('forkpool')` in a fresh Node process, against importing `piscina`,
 *     `openai` and `zod` alone (what any background-job library on them must load). Several
 *     rounds, the two alternating, each a new child process; the median of each and the ratio.
 *   - what the import loaded: the packages under node_modules that the child resolved, and
 *     whether any heavy one (BullMQ, ioredis, fastify, ink, React, commander, pino-pretty,
 *     @babel/parser, tinypool) is among them.
 *   - with `--install`: a library-only install (`npm pack`, then `npm install <tarball>` into
 *     an empty folder, from the npm cache; npm installs no dev and no optional peer dependency):
 *     packages installed and their size on disk.
 *
 *   npm run bench:build && node dist-bench/bench/import-cost.js [--rounds 9] [--install] [--root DIR] [--json]
 *
 * `--root`: the forkpool checkout to measure (built, with node_modules); default this one.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { HEAVY_PACKAGES, sampleImport, type ImportSample } from '../test/helpers/import-trace.js';
import { REPO_ROOT } from './paths.js';

/**
 * The file `import('forkpool')` loads: package.json `exports["."]` (the bundle, dist/bundle/index.js,
 * since the library build bundles its entries), by path: the checkout need not be installed as a package.
 */
export function forkpoolEntry(root: string, subpath = '.'): string {
  const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { exports?: Record<string, string | { import?: string }> };
  const target = pkg.exports?.[subpath];
  // An old checkout (--root) may export a plain string, or nothing: then dist/index.js.
  const file = typeof target === 'string' ? target : (target?.import ?? './dist/index.js');
  return path.join(root, file);
}

/** The import a library user writes. */
export function forkpoolImport(root: string): string {
  return `await import(${JSON.stringify(forkpoolEntry(root))});`;
}
export const BASELINE_IMPORT = `await import('piscina'); await import('openai'); await import('zod');`;

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

function folderBytes(dir: string): number {
  let bytes = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) bytes += folderBytes(full);
    else if (entry.isFile()) bytes += statSync(full).size;
  }
  return bytes;
}

/** Packages in a node_modules folder (scoped ones counted one by one; `.bin` and hidden ones not). */
function countPackages(nodeModules: string): number {
  let count = 0;
  for (const name of readdirSync(nodeModules)) {
    if (name.startsWith('.')) continue;
    if (name.startsWith('@')) count += readdirSync(path.join(nodeModules, name)).length;
    else count += 1;
    const nested = name.startsWith('@') ? [] : [path.join(nodeModules, name, 'node_modules')];
    for (const n of nested) if (statSync(n, { throwIfNoEntry: false })?.isDirectory()) count += countPackages(n);
  }
  return count;
}

export interface InstallFigures {
  packages: number;
  megabytes: number;
}

/** `npm pack` of `root`, installed alone into an empty folder from the npm cache. */
export function libraryInstall(root: string): InstallFigures {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'forkpool-install-'));
  try {
    const tarball = execFileSync('npm', ['pack', '--silent', '--ignore-scripts', '--pack-destination', dir], { cwd: root, encoding: 'utf8' })
      .trim()
      .split('\n')
      .pop() as string;
    // --ignore-scripts: the size of what is installed, without a native build (the old
    // better-sqlite3 compiled for minutes here, and its binary is not what is compared).
    execFileSync(
      'npm',
      ['install', '--prefer-offline', '--ignore-scripts', '--no-audit', '--no-fund', '--omit=dev', '--no-package-lock', path.join(dir, tarball)],
      { cwd: dir, stdio: 'ignore' },
    );
    const nodeModules = path.join(dir, 'node_modules');
    return { packages: countPackages(nodeModules), megabytes: folderBytes(nodeModules) / 2 ** 20 };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      rounds: { type: 'string', default: '9' },
      install: { type: 'boolean', default: false },
      root: { type: 'string' },
      json: { type: 'boolean', default: false },
    },
  });
  const root = path.resolve(values.root ?? REPO_ROOT);
  const rounds = Math.max(1, Number(values.rounds));
  const forkpool: ImportSample[] = [];
  const baseline: ImportSample[] = [];
  // One warm-up of each (the file-system cache), then alternating rounds.
  sampleImport(root, forkpoolImport(root));
  sampleImport(root, BASELINE_IMPORT);
  for (let round = 0; round < rounds; round += 1) {
    forkpool.push(sampleImport(root, forkpoolImport(root)));
    baseline.push(sampleImport(root, BASELINE_IMPORT));
  }
  const forkpoolMs = median(forkpool.map((s) => s.ms));
  const baselineMs = median(baseline.map((s) => s.ms));
  const loaded = sampleImport(root, forkpoolImport(root), true).packages;
  const heavy = loaded.filter((p) => (HEAVY_PACKAGES as readonly string[]).includes(p));
  const install = values.install ? libraryInstall(root) : undefined;
  const report = {
    node: process.version,
    rounds,
    forkpoolMs,
    baselineMs,
    ratio: forkpoolMs / baselineMs,
    packagesLoaded: loaded,
    heavyLoaded: heavy,
    ...(install ? { install } : {}),
  };
  if (values.json) {
    console.log(JSON.stringify(report));
    return;
  }
  console.log(`import cost (${process.version}, ${rounds} rounds, medians, each a fresh process)`);
  console.log(`  import('forkpool')            ${forkpoolMs.toFixed(0).padStart(6)} ms`);
  console.log(`  piscina + openai + zod alone  ${baselineMs.toFixed(0).padStart(6)} ms`);
  console.log(`  ratio                         ${report.ratio.toFixed(2).padStart(6)} ×`);
  console.log(`  packages loaded (${loaded.length}): ${loaded.join(', ')}`);
  console.log(`  heavy packages loaded: ${heavy.length === 0 ? 'none' : heavy.join(', ')}`);
  if (install) console.log(`  library-only install: ${install.packages} packages, ${install.megabytes.toFixed(1)} MB on disk (install scripts not run)`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main();
