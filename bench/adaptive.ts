/**
 * `npm run bench:adaptive` (also a section of `npm run bench`): adaptive concurrency against
 * fixed caps, on a simulated endpoint with a server capacity (requests in flight past it get a
 * 429 with Retry-After). Each mode runs the same fan-out while a parent agent sends one model
 * request after another; the table puts side by side the wall time, the 429s received (jobs and
 * parent), and the parent's request latency (gate wait and retries included).
 *
 *   node dist-bench/bench/adaptive.js [--jobs 200] [--capacity 8] [--rounds 1] [--quick]
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { isEntry } from './entry.js';
import { parseArgs } from 'node:util';
import { BackgroundManager } from '#dist/main/jobs/manager.js';
import { parseConfig, type ForkpoolConfig } from '#dist/shared/config.js';
import { callModel, createModelClient } from '#dist/shared/model-call.js';
import { percentile } from './measure.js';
import { startSimProcess } from './sim-process.js';

export interface AdaptiveBenchOptions {
  jobs?: number;
  capacity?: number;
  /** Each mode runs this many times; the table shows medians. Default 1. */
  rounds?: number;
  /** 40 jobs instead of 200 (a smoke run). */
  quick?: boolean;
  log?: (line: string) => void;
}

export interface ModeResult {
  mode: string;
  wallMs: number;
  ok: number;
  jobs: number;
  /** 429s the jobs and the parent received. */
  rateLimited: number;
  /** ... of which the parent's. */
  parentRateLimited: number;
  parentRequests: number;
  parentP50Ms: number;
  parentP99Ms: number;
  /** Adaptive mode: the lowest and highest limit it set, and where it ended. */
  limits?: { min: number; max: number; last: number };
}

interface Mode {
  name: string;
  background: Record<string, unknown>;
}

const MODES: Mode[] = [
  { name: 'fixed 8', background: { maxConcurrent: 8 } },
  { name: 'fixed 32', background: { maxConcurrent: 32 } },
  { name: 'adaptive (≤32 jobs)', background: { maxConcurrent: 32, concurrency: 'adaptive' } },
];

/** The sim's answers: 40 ms + up to 20 ms per request, 4 requests a job, 429s retried after 0.2 s. */
const SIM = { latencyMs: 40, jitterMs: 20, seed: 7, researchSteps: 3, capacityRetryAfterSeconds: 0.2 };
/** The parent asks again this long after its previous answer (a person reading, tools running). */
const PARENT_GAP_MS = 100;
const TASK = 'Where is the retry backoff implemented? Answer from the files in the workspace.';
const FILES: Record<string, string> = {
  'src/retry.ts':
    '// Retry with exponential backoff and jitter.\nexport function retryBackoff(attempt: number): number {\n  return Math.min(8000, 500 * 2 ** attempt);\n}\n',
  'src/cache.ts': '// An LRU cache with a size limit.\nexport class LruCache {}\n',
  'README.md': '# demo workspace\nThe retry backoff lives in src/retry.ts.\n',
};

function configFor(mode: Mode, simUrl: string, workspaceRoot: string): ForkpoolConfig {
  return parseConfig({
    baseUrl: simUrl,
    workspaceRoot,
    // Enough that a 429 storm slows jobs down rather than failing them: the table counts both.
    maxRetries: 10,
    // Not niced: on a busy machine niced workers are starved, and the table would measure the
    // machine's load instead of the endpoint's capacity.
    background: { isolation: 'shared', threads: 2, niceIncrement: 0, timeoutMinutes: 30, closeTimeoutMs: 5_000, ...mode.background },
  });
}

async function runMode(mode: Mode, jobs: number, simUrl: string, workspaceRoot: string): Promise<ModeResult> {
  const config = configFor(mode, simUrl, workspaceRoot);
  const manager = new BackgroundManager({ config });
  let rateLimited = 0;
  let parentRateLimited = 0;
  manager.on('progress', ({ event }) => {
    if (event.type === 'retry' && event.reason.startsWith('HTTP 429')) rateLimited++;
  });
  const limits: number[] = [];
  const reasons: Record<string, number> = {};
  manager.requestGates?.on('limit', (e) => {
    limits.push(e.limit);
    reasons[e.reason] = (reasons[e.reason] ?? 0) + 1;
  });
  const parentGate = manager.parentRateGate();
  const client = createModelClient(config);
  const parentLatencies: number[] = [];
  let running = true;
  const parent = (async () => {
    const signal = new AbortController().signal;
    while (running) {
      const started = performance.now();
      try {
        await callModel({
          client,
          config,
          params: { messages: [{ role: 'user', content: 'Say hello in one short sentence.' }] },
          signal,
          rateGate: parentGate,
          onRetry: (e) => {
            if (e.reason.startsWith('HTTP 429')) parentRateLimited++;
          },
        });
        parentLatencies.push(performance.now() - started);
      } catch {
        parentLatencies.push(performance.now() - started);
      }
      await new Promise((resolve) => setTimeout(resolve, PARENT_GAP_MS));
    }
  })();
  const started = performance.now();
  const ids = Array.from({ length: jobs }, (_, i) => manager.spawn({ task: TASK, label: `job ${i}` }).id);
  const records = await Promise.all(ids.map((id) => manager.result(id)));
  const wallMs = performance.now() - started;
  running = false;
  await parent;
  await manager.close({ timeoutMs: 5_000 });
  if (limits.length > 0) process.stderr.write(`[bench:adaptive] limit changes ${JSON.stringify(reasons)}\n`);
  return {
    mode: mode.name,
    wallMs,
    ok: records.filter((r) => r.status === 'ok').length,
    jobs,
    rateLimited: rateLimited + parentRateLimited,
    parentRateLimited,
    parentRequests: parentLatencies.length,
    parentP50Ms: percentile(parentLatencies, 50),
    parentP99Ms: percentile(parentLatencies, 99),
    ...(limits.length > 0 ? { limits: { min: Math.min(...limits), max: Math.max(...limits), last: limits.at(-1) as number } } : {}),
  };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)] as number;
}

/** Per mode, the round with the median wall time. */
function medianRound(rounds: ModeResult[]): ModeResult {
  const wall = median(rounds.map((r) => r.wallMs));
  return rounds.find((r) => r.wallMs === wall) as ModeResult;
}

export function adaptiveTable(results: readonly ModeResult[], capacity: number): string {
  const s = (ms: number) => (ms / 1000).toFixed(2);
  const lines = [
    `Adaptive concurrency: ${results[0]?.jobs ?? 0} jobs against a server capacity of ${capacity} requests in flight (429 + Retry-After ${SIM.capacityRetryAfterSeconds} s past it)`,
    '',
    "| mode | wall s | jobs ok | 429s (parent's) | parent requests | parent p50 ms | parent p99 ms | limit (min–max, last) |",
    '|---|---:|---:|---:|---:|---:|---:|---|',
    ...results.map(
      (r) =>
        `| ${r.mode} | ${s(r.wallMs)} | ${r.ok}/${r.jobs} | ${r.rateLimited} (${r.parentRateLimited}) | ${r.parentRequests} | ${r.parentP50Ms.toFixed(1)} | ${r.parentP99Ms.toFixed(1)} | ${r.limits ? `${r.limits.min}–${r.limits.max}, ${r.limits.last}` : '–'} |`,
    ),
  ];
  const [fixed8, fixed32, adaptive] = results;
  if (fixed8 && fixed32 && adaptive) {
    const fewer = adaptive.rateLimited / Math.max(1, fixed32.rateLimited);
    const speed = adaptive.wallMs / fixed8.wallMs;
    lines.push(
      '',
      `- 429s, adaptive / fixed 32: ${fewer.toFixed(3)} (target: far fewer, ≤ 0.2) ${fewer <= 0.2 ? 'PASS' : 'FAIL'}`,
      `- wall time, adaptive / fixed 8: ${speed.toFixed(2)} (target: no slower, ≤ 1.05 on a noisy machine) ${speed <= 1.05 ? 'PASS' : 'FAIL'}`,
      `- parent p99, adaptive / fixed 8: ${(adaptive.parentP99Ms / fixed8.parentP99Ms).toFixed(2)}; adaptive / fixed 32: ${(adaptive.parentP99Ms / fixed32.parentP99Ms).toFixed(2)}`,
    );
  }
  return lines.join('\n');
}

export async function runAdaptiveBench(options: AdaptiveBenchOptions = {}): Promise<{ results: ModeResult[]; table: string }> {
  const jobs = options.jobs ?? (options.quick ? 40 : 200);
  const capacity = options.capacity ?? 8;
  const rounds = options.rounds ?? 1;
  const log = options.log ?? ((line: string) => process.stderr.write(`[bench:adaptive] ${line}\n`));
  const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'forkpool-adaptive-')));
  for (const [file, text] of Object.entries(FILES)) {
    mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    writeFileSync(path.join(root, file), text);
  }
  const sim = await startSimProcess({ ...SIM, capacity });
  try {
    // Warm-up: threads started and code hot before anything is timed.
    await runMode(MODES[0] as Mode, 16, sim.url, root);
    const byMode = new Map<string, ModeResult[]>();
    for (let round = 1; round <= rounds; round++) {
      for (const mode of MODES) {
        const result = await runMode(mode, jobs, sim.url, root);
        log(
          `round ${round} ${mode.name}: ${(result.wallMs / 1000).toFixed(2)} s, ${result.rateLimited} 429s, ${result.ok}/${jobs} ok, parent p99 ${result.parentP99Ms.toFixed(1)} ms`,
        );
        byMode.set(mode.name, [...(byMode.get(mode.name) ?? []), result]);
      }
    }
    const results = MODES.map((m) => medianRound(byMode.get(m.name) ?? []));
    return { results, table: adaptiveTable(results, capacity) };
  } finally {
    await sim.stop();
    rmSync(root, { recursive: true, force: true });
  }
}

/** `node dist-bench/bench/adaptive.js [flags]`. Exit code 1 when a job failed, 2 on bad flags. */
export async function adaptiveMain(argv: readonly string[]): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: { jobs: { type: 'string' }, capacity: { type: 'string' }, rounds: { type: 'string' }, quick: { type: 'boolean' } },
      strict: true,
    }));
  } catch (error) {
    process.stderr.write(`bench:adaptive: ${error instanceof Error ? error.message : String(error)}\n`);
    return 2;
  }
  const int = (name: string, value: string | undefined, max: number) => {
    if (value === undefined) return undefined;
    const n = Number(value);
    if (!Number.isInteger(n) || n < 1 || n > max) throw new RangeError(`--${name} expects an integer 1..${max}; received ${value}`);
    return n;
  };
  try {
    const jobs = int('jobs', values.jobs, 100_000);
    const capacity = int('capacity', values.capacity, 10_000);
    const rounds = int('rounds', values.rounds, 20);
    const { results, table } = await runAdaptiveBench({
      quick: values.quick ?? false,
      ...(jobs ? { jobs } : {}),
      ...(capacity ? { capacity } : {}),
      ...(rounds ? { rounds } : {}),
    });
    process.stdout.write(`${table}\n`);
    return results.every((r) => r.ok === r.jobs) ? 0 : 1;
  } catch (error) {
    process.stderr.write(`bench:adaptive: ${error instanceof Error ? error.message : String(error)}\n`);
    return error instanceof RangeError ? 2 : 1;
  }
}

if (isEntry(import.meta.url)) process.exitCode = await adaptiveMain(process.argv.slice(2));
