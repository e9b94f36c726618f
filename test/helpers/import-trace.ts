/**
 * What a fresh Node process loads and how long its import takes: `sampleImport` runs a snippet of
 * imports in a child process and lists the packages it resolved. Used by the package tests (a light
 * `import 'forkpool'`, test/package/light-import.test.ts) and by the bench's import cost
 * (bench/import-cost.ts), which is why it needs nothing but Node.
 */
import { spawn, spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** Packages a background job never needs; none may load with `import 'forkpool'`. */
export const HEAVY_PACKAGES = ['bullmq', 'ioredis', 'fastify', 'ink', 'react', 'commander', 'pino-pretty', '@babel/parser', 'tinypool'] as const;

/**
 * A child's script: runs `body` (imports) and prints one JSON line with the import's
 * milliseconds. With `trace`, it first hooks module resolution and lists every resolved URL too
 * (CommonJS files also come from the require cache); the hook slows every resolution down, so
 * timed rounds run without it. The hook is `module.registerHooks` (in-thread, synchronous): every
 * Node in `engines` has it (22.15+), and `module.register`, the off-thread one used before, is
 * deprecated on Node 26 and says so on stderr (DEP0205).
 */
function childScript(body: string, trace: boolean): string {
  return `
import { createRequire, registerHooks } from 'node:module';
const seen = new Set();
const hooks = ${trace} ? registerHooks({ resolve(s, c, next) { const r = next(s, c); seen.add(r.url); return r; } }) : undefined;
const started = performance.now();
${body}
const ms = performance.now() - started;
hooks?.deregister();
for (const file of Object.keys(createRequire(import.meta.url).cache)) seen.add(file);
console.log(JSON.stringify({ ms, urls: [...seen] }));
`;
}

export interface ImportSample {
  ms: number;
  /** Packages resolved under node_modules (scoped ones as `@scope/name`), sorted; complete only when traced. */
  packages: string[];
  /** Everything else resolved: the repository's own files (paths relative to `cwd`) and builtins (`node:sqlite`), sorted; complete only when traced. */
  files: string[];
  /** What the child wrote on stderr (Node's warnings among it). */
  stderr: string;
}

const childArgs = (body: string, trace: boolean) => ['--input-type=module', '-e', childScript(body, trace)];
const childEnv = () => ({ ...process.env, NODE_OPTIONS: '' });

/** Runs `body` in a fresh Node process with `cwd` as its folder; `trace` lists what it loaded. */
export function sampleImport(cwd: string, body: string, trace = false): ImportSample {
  const r = spawnSync(process.execPath, childArgs(body, trace), { cwd, encoding: 'utf8', timeout: 60_000, env: childEnv() });
  return readSample(cwd, r.status, r.stdout, r.stderr);
}

/**
 * {@link sampleImport} without blocking this thread, so a test file can run several side by side
 * (test/package/light-import.test.ts). For traces only: timed rounds run one at a time.
 */
export function sampleImportAsync(cwd: string, body: string, trace = false): Promise<ImportSample> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, childArgs(body, trace), { cwd, env: childEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.once('error', reject);
    child.once('close', (status) => {
      clearTimeout(timer);
      try {
        resolve(readSample(cwd, status, stdout, stderr));
      } catch (error) {
        reject(error);
      }
    });
  });
}

function readSample(cwd: string, status: number | null, stdout: string, stderr: string): ImportSample {
  const line = stdout.trim().split('\n').pop() ?? '';
  if (status !== 0 || !line.startsWith('{')) throw new Error(`the import child failed (exit ${status}): ${stderr.trim().slice(0, 2_000)}`);
  const { ms, urls } = JSON.parse(line) as { ms: number; urls: string[] };
  const packages = new Set<string>();
  const files = new Set<string>();
  for (const url of urls) {
    const file = url.startsWith('file:') ? fileURLToPath(url) : url;
    const match = /node_modules[\\/]((?:@[^\\/]+[\\/])?[^\\/]+)/.exec(file.slice(file.lastIndexOf('node_modules')));
    if (match?.[1]) packages.add(match[1].replace(/\\/g, '/'));
    else if (!file.startsWith('data:')) files.add(path.isAbsolute(file) ? path.relative(cwd, file).replace(/\\/g, '/') : file);
  }
  return { ms, packages: [...packages].sort(), files: [...files].sort(), stderr };
}
