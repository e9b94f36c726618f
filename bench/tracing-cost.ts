/**
 * `npm run bench:tracing`: CPU per job of the I/O workload's 1,000-job cell (Piscina, a thread
 * per job, cap 50, five model calls per job over a 40-file tree, the model in its own process)
 * with tracing off (no provider) and on (the SDK's tracer provider, a batch processor, an
 * exporter that counts and drops: the cost of making the spans, not of a network). Rounds
 * alternate off/on so drift on a shared machine hits both. Then the no-op check alone: the
 * nanoseconds `startAgentSpan` costs with no provider (once per turn and per job).
 *
 *   node dist-bench/bench/tracing-cost.js [--jobs 1000] [--rounds 2] [--latency 20]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { ROOT_CONTEXT, trace } from '@opentelemetry/api';
import { BatchSpanProcessor, TracerProvider, type ReadableSpan, type SpanExporter } from '@opentelemetry/sdk-trace';
import { BackgroundManager } from '#dist/main/jobs/manager.js';
import { parseConfig } from '#dist/shared/config.js';
import { startAgentSpan } from '#dist/shared/tracing.js';
import { startSimProcess } from './sim-process.js';
import { generateTree, taskFor } from './workloads.js';

const { values } = parseArgs({
  options: { jobs: { type: 'string', default: '1000' }, rounds: { type: 'string', default: '2' }, latency: { type: 'string', default: '20' } },
});
const jobs = Number(values.jobs);
const rounds = Number(values.rounds);
const latencyMs = Number(values.latency);

/** Counts what it is given and sends it nowhere. */
class CountingExporter implements SpanExporter {
  spans = 0;
  export(spans: ReadableSpan[], done: (result: { code: number }) => void): void {
    this.spans += spans.length;
    done({ code: 0 });
  }
  shutdown(): Promise<void> {
    return Promise.resolve();
  }
}

async function cell(simUrl: string, workspace: string): Promise<{ cpuMsPerJob: number; mainCpuMsPerJob: number; wallMs: number; ok: number }> {
  const config = parseConfig({
    baseUrl: simUrl,
    workspaceRoot: workspace,
    maxRetries: 2,
    background: { maxConcurrent: 50, isolation: 'thread', timeoutMinutes: 30, closeTimeoutMs: 5_000 },
  });
  const manager = new BackgroundManager({ config, closeExecutor: true });
  // Warm: the pool's threads and the code, as the bench's cells do.
  await Promise.all(Array.from({ length: 50 }, (_, i) => manager.spawn({ task: taskFor(i), label: `warm-${i}` })).map((h) => ended(manager, h.id)));
  let ok = 0;
  let done = 0;
  const all = new Promise<void>((resolve) =>
    manager.on('done', (record) => {
      if (!record.label.startsWith('job-')) return;
      if (record.status === 'ok') ok++;
      if (++done === jobs) resolve();
    }),
  );
  const cpu0 = process.cpuUsage();
  // The main thread alone, where the spans are made: less noise from the workers' share.
  const main0 = process.threadCpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < jobs; i++) manager.spawn({ task: taskFor(i), label: `job-${i}` });
  await all;
  const wallMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const main = process.threadCpuUsage(main0);
  await manager.close();
  return { cpuMsPerJob: (cpu.user + cpu.system) / 1000 / jobs, mainCpuMsPerJob: (main.user + main.system) / 1000 / jobs, wallMs, ok };
}

function ended(manager: BackgroundManager, id: string): Promise<void> {
  return new Promise((resolve) => {
    if (manager.get(id)?.state === 'ended') return resolve();
    const off = manager.on('done', (record) => {
      if (record.id !== id) return;
      off();
      resolve();
    });
  });
}

/** Nanoseconds per no-op check (no provider registered). */
function noopCheckNs(): number {
  const n = 1_000_000;
  for (let i = 0; i < 10_000; i++) startAgentSpan('fork', {}, ROOT_CONTEXT);
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) startAgentSpan('fork', { 'forkpool.job.id': 'bg-1' }, ROOT_CONTEXT);
  return Number(process.hrtime.bigint() - t0) / n;
}

async function main(): Promise<void> {
  const workspace = mkdtempSync(path.join(os.tmpdir(), 'forkpool-tracing-bench-'));
  generateTree(workspace, { files: 40, bytesPerFile: 2_000 });
  const sim = await startSimProcess({ latencyMs, jitterMs: Math.round(latencyMs / 2), seed: 1, researchSteps: 5 });
  const exporter = new CountingExporter();
  const provider = new TracerProvider({ spanProcessors: [new BatchSpanProcessor({ exporter, maxQueueSize: 100_000 })] });
  try {
    console.log(`no-op check (no provider): ${noopCheckNs().toFixed(0)} ns per turn or job`);
    for (let round = 1; round <= rounds; round++) {
      for (const mode of ['off', 'on'] as const) {
        if (mode === 'on') trace.setGlobalTracerProvider(provider);
        else trace.disable();
        const r = await cell(sim.url, workspace);
        const load = os.loadavg()[0]?.toFixed(1);
        const row = `round ${round} tracing ${mode}: ${r.cpuMsPerJob.toFixed(3)} ms CPU per job (main thread ${r.mainCpuMsPerJob.toFixed(3)}), ${(r.wallMs / 1000).toFixed(1)} s wall, ${r.ok}/${jobs} ok, load ${load}`;
        console.log(row);
      }
    }
    await provider.forceFlush();
    console.log(`spans exported while on: ${exporter.spans}`);
  } finally {
    trace.disable();
    await provider.shutdown();
    await sim.stop();
    rmSync(workspace, { recursive: true, force: true });
  }
}

await main();
