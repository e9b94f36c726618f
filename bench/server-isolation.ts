/**
 * `npm run bench:server`: `forkpool serve` with a tool that blocks, on `piscina` and on `inline`.
 * Jobs outline the largest files of a generated TypeScript tree (code_outline: a synchronous
 * parse per file) while another process polls `/healthz` every 10 ms. With threads the parses
 * run off the server's event loop; inline, every parse is a pause of the whole server. The
 * poller is a separate process, so a blocked server cannot also delay the clock that measures it.
 *
 *   node dist-bench/bench/server-isolation.js [--quick] [--out bench/results]
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { ForkpoolConfig } from 'forkpool';
import { parseConfig } from 'forkpool/protocol';
import { startForkpoolServer } from 'forkpool/server';
import { percentile, round3 } from './measure.js';
import { generateSourceTree, parseTask } from './parse-workload.js';
import { startSimProcess } from './sim-process.js';

const TOKEN = 'bench-server-isolation-token';

/**
 * Polls a URL every 10 ms (a poll waits for the previous answer) until stdin closes, then prints
 * the latencies (ms) as one JSON line. Not back to back: a poller spinning on two cores would
 * starve the worker threads it means to observe.
 */
const POLLER = `
const url = process.argv[1];
const latencies = [];
let failures = 0;
let stop = false;
process.stdin.on('end', () => { stop = true; });
process.stdin.on('close', () => { stop = true; });
process.stdin.resume();
while (!stop) {
  const t0 = performance.now();
  try { const r = await fetch(url); await r.arrayBuffer(); if (r.status !== 200) failures++; } catch { failures++; }
  latencies.push(performance.now() - t0);
  await new Promise((resolve) => setTimeout(resolve, 10));
}
process.stdout.write(JSON.stringify({ latencies, failures }) + '\\n');
`;

export interface ServerIsolationRow {
  executor: 'piscina' | 'inline';
  jobs: number;
  wallS: number;
  polls: number;
  failures: number;
  healthzP50Ms: number;
  healthzP99Ms: number;
  healthzMaxMs: number;
}

async function measure(executor: ServerIsolationRow['executor'], config: ForkpoolConfig, task: string, jobs: number): Promise<ServerIsolationRow> {
  const server = await startForkpoolServer({ config: { ...config, executor }, token: TOKEN, port: 0 });
  const poller = spawn(process.execPath, ['--input-type=module', '-e', POLLER, `${server.url}/healthz`], { stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  poller.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const pollerDone = new Promise<void>((resolve) => poller.once('exit', () => resolve()));
  const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
  try {
    const started = performance.now();
    const body = JSON.stringify({ tasks: Array.from({ length: jobs }, (_, i) => ({ task, label: `parse-${i + 1}` })) });
    const created = await fetch(`${server.url}/v1/jobs`, { method: 'POST', headers, body });
    if (created.status !== 202) throw new Error(`POST /v1/jobs: HTTP ${created.status} ${await created.text()}`);
    const { jobs: spawned } = (await created.json()) as { jobs: Array<{ id: string }> };
    const records = await Promise.all(spawned.map(({ id }) => endOf(`${server.url}/v1/jobs/${id}/result?wait=120`, headers)));
    const wallS = (performance.now() - started) / 1000;
    const bad = records.filter((r) => r.status !== 'ok' && r.status !== 'partial');
    if (bad.length > 0) throw new Error(`${bad.length} ${executor} jobs did not end ok: ${JSON.stringify(bad[0]).slice(0, 300)}`);
    poller.stdin.end();
    await pollerDone;
    const { latencies, failures } = JSON.parse(out) as { latencies: number[]; failures: number };
    const sorted = [...latencies].sort((a, b) => a - b); // for the max; percentile sorts its own copy
    return {
      executor,
      jobs,
      wallS: round3(wallS),
      polls: latencies.length,
      failures,
      healthzP50Ms: round3(percentile(sorted, 50)),
      healthzP99Ms: round3(percentile(sorted, 99)),
      healthzMaxMs: round3(sorted.at(-1) ?? 0),
    };
  } finally {
    if (poller.exitCode === null) poller.kill('SIGKILL');
    await server.close();
  }
}

/** Long-polls a job's result until it has ended (a 202 means "still running, ask again"). */
async function endOf(url: string, headers: Record<string, string>): Promise<{ status: string }> {
  for (;;) {
    const response = await fetch(url, { headers });
    const body = (await response.json()) as { status: string };
    if (response.status !== 202) return body;
  }
}

export function serverIsolationTable(rows: readonly ServerIsolationRow[]): string {
  const threaded = rows.find((r) => r.executor === 'piscina');
  const lines = [
    '| executor | jobs | wall s | /healthz polls | failed | p50 ms | p99 ms | max ms | p99 ÷ piscina |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows.map((r) => {
      const ratio = threaded && threaded.healthzP99Ms > 0 ? (r.healthzP99Ms / threaded.healthzP99Ms).toFixed(1) : '–';
      return `| ${r.executor} | ${r.jobs} | ${r.wallS.toFixed(2)} | ${r.polls} | ${r.failures} | ${r.healthzP50Ms.toFixed(1)} | ${r.healthzP99Ms.toFixed(1)} | ${r.healthzMaxMs.toFixed(1)} | ${ratio} |`;
    }),
  ];
  return lines.join('\n');
}

export async function runServerIsolationBench(options: { quick: boolean }): Promise<{ rows: ServerIsolationRow[]; summary: string }> {
  const shape = options.quick
    ? { files: 80, outlined: 6, minBytes: 20_000, maxBytes: 150_000 }
    : { files: 300, outlined: 20, minBytes: 40_000, maxBytes: 400_000 };
  const jobs = options.quick ? 4 : 8;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'forkpool-bench-server-'));
  const sim = await startSimProcess({ latencyMs: 5, jitterMs: 0, seed: 4, researchSteps: 3 });
  try {
    const tree = generateSourceTree(dir, shape);
    const config = parseConfig({
      workspaceRoot: dir,
      baseUrl: sim.url,
      apiKey: 'sim-key',
      model: 'sim',
      background: { maxConcurrent: 4 },
      toolLimits: { outlineMaxBytes: 2 * 1024 * 1024, toolTimeoutMs: 600_000 },
    });
    const task = parseTask(tree.largest);
    const rows = [await measure('piscina', config, task, jobs), await measure('inline', config, task, jobs)];
    const summary = `${shape.files} generated TypeScript files; each of ${jobs} jobs (cap 4) outlines the ${shape.outlined} largest (${(tree.largestBytes / 2 ** 20).toFixed(1)} MB) while another process polls /healthz every 10 ms.`;
    return { rows, summary };
  } finally {
    await sim.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { quick: { type: 'boolean', default: false }, out: { type: 'string' } } });
  const quick = values.quick ?? false;
  const { rows, summary } = await runServerIsolationBench({ quick });
  const text = `# forkpool serve with a blocking tool: /healthz while jobs parse\n\n${summary}\n\n${serverIsolationTable(rows)}\n`;
  process.stdout.write(`${text}\n`);
  const outDir = values.out ?? path.join('bench', 'results', quick ? 'quick' : '');
  mkdirSync(outDir, { recursive: true });
  writeFileSync(path.join(outDir, 'server-isolation.md'), text);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
