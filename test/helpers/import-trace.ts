/**
 * What a fresh Node process loads and how long its import takes: `sampleImport` runs a snippet of
 * imports in a child process and lists the packages it resolved. Used by the package tests (a light
 * `import 'forkpool'`, test/package/light-import.test.ts) and by the bench's import cost
 * (bench/import-cost.ts), which is why it needs nothing but Node.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** Packages a background job never needs; none may load with `import 'forkpool'`. */
export const HEAVY_PACKAGES = ['bullmq', 'ioredis', 'fastify', 'ink', 'react', 'commander', 'pino-pretty', '@babel/parser', 'tinypool'] as const;

/**
 * A child's script: runs `body` (imports) and prints one JSON line with the import's
 * milliseconds. With `trace`, it first registers a resolve hook that reports every resolved
 * URL over a port (ES modules; CommonJS ones come from the require cache) and lists them too;
 * the hook slows every resolution down, so timed rounds run without it.
 */
function childScript(body: string, trace: boolean): string {
  const hook = `export let port; export function initialize(d) { port = d.port; } export async function resolve(s, c, next) { const r = await next(s, c); port.postMessage(r.url); return r; }`;
  return `
import { register, createRequire } from 'node:module';
import { MessageChannel } from 'node:worker_threads';
const seen = new Set();
const { port1, port2 } = new MessageChannel();
port1.on('message', (url) => seen.add(url));
port1.unref();
if (${trace}) register('data:text/javascript,' + encodeURIComponent(${JSON.stringify(hook)}), import.meta.url, { data: { port: port2 }, transferList: [port2] });
const started = performance.now();
${body}
const ms = performance.now() - started;
if (${trace}) await new Promise((resolve) => setTimeout(resolve, 50));
port1.close();
for (const file of Object.keys(createRequire(import.meta.url).cache)) seen.add(file);
console.log(JSON.stringify({ ms, urls: [...seen] }));
`;
}

export interface ImportSample {
  ms: number;
  /** Packages resolved under node_modules (scoped ones as `@scope/name`), sorted; complete only when traced. */
  packages: string[];
}

/** Runs `body` in a fresh Node process with `cwd` as its folder; `trace` lists what it loaded. */
export function sampleImport(cwd: string, body: string, trace = false): ImportSample {
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', childScript(body, trace)], {
    cwd,
    encoding: 'utf8',
    timeout: 60_000,
    env: { ...process.env, NODE_OPTIONS: '' },
  });
  const line = r.stdout.trim().split('\n').pop() ?? '';
  if (r.status !== 0 || !line.startsWith('{')) throw new Error(`the import child failed (exit ${r.status}): ${r.stderr.trim().slice(0, 2_000)}`);
  const { ms, urls } = JSON.parse(line) as { ms: number; urls: string[] };
  const packages = new Set<string>();
  for (const url of urls) {
    const file = url.startsWith('file:') ? fileURLToPath(url) : url;
    const match = /node_modules[\\/]((?:@[^\\/]+[\\/])?[^\\/]+)/.exec(file.slice(file.lastIndexOf('node_modules')));
    if (match?.[1]) packages.add(match[1].replace(/\\/g, '/'));
  }
  return { ms, packages: [...packages].sort() };
}
