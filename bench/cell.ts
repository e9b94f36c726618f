/**
 * One cell of the matrix, run in its own process (see cell-child.ts): a BackgroundManager over
 * one executor, a timed fan-out with the main thread sampled, then warm-start, cooperative- and
 * hard-cancel probes. Every wait is bounded by the cell's timeout.
 */
import { availableParallelism } from 'node:os';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import type { ExecutorKind } from '#dist/main/executors/executor.js';
import { createExecutor } from '#dist/main/jobs/executor-factory.js';
import { BackgroundManager } from '#dist/main/jobs/manager.js';
import { parseConfig, type ForkpoolConfig } from '#dist/shared/config.js';
import { p50OrNull, percentile, round3, rssMb, startSampling, within } from './measure.js';
import { builtBenchFile } from './paths.js';
import { isPeerExecutor, type CellResult, type CellSpec, type ExecutorName } from './types.js';
import { taskOf } from './workloads.js';

/** Warm-up jobs at most: enough to start every thread (cap 50) and get the code hot. */
const WARMUP_MAX_JOBS = 100;
/** A single probe (warm start, cancel) is abandoned after this long. */
const PROBE_TIMEOUT_MS = 15_000;

const KIND: Record<Exclude<ExecutorName, 'openai-agents' | 'ai-sdk'>, ExecutorKind> = {
  inline: 'inline',
  'piscina-thread': 'piscina',
  'piscina-shared': 'piscina',
  tinypool: 'tinypool',
  'worker-per-job': 'worker-per-job',
};

/** `modelConnectionsPerThread` of the scale workload's cells: 2,000 sockets on 2 cores. */
export const SCALE_CONNECTIONS_PER_THREAD = 1_000;

/** `tasksPerThread` that spreads `concurrency` jobs over every core in shared isolation. */
export function sharedTasksPerThread(concurrency: number): number {
  return Math.min(100_000, Math.max(1, Math.ceil(concurrency / Math.max(1, availableParallelism()))));
}

function configFor(spec: CellSpec, concurrency: number, cancelGraceMs: number): ForkpoolConfig {
  // A job's budget covers the whole cell's bound: with every job in flight at once, the last
  // ones end only when the machine has done all the others' work (100,000 jobs: ~25 minutes).
  const minutes = Math.max(30, Math.ceil(spec.timeoutMs / 60_000));
  return parseConfig({
    baseUrl: spec.simUrl,
    workspaceRoot: spec.workspace,
    maxRetries: 2,
    // Scale holds every job in flight at once: more connections than the default 256 per thread
    // (still far below the open-file limit), so 3 calls × 100,000 jobs at 1 s end within the cell.
    ...(spec.workload === 'scale' ? { modelConnectionsPerThread: SCALE_CONNECTIONS_PER_THREAD } : {}),
    background: {
      maxConcurrent: concurrency,
      isolation: spec.executor === 'piscina-shared' ? 'shared' : 'thread',
      tasksPerThread: spec.tasksPerThread,
      timeoutMinutes: minutes,
      // Scale: past its default 10 minutes the wall-clock budget stops the first jobs, and a hard
      // stop in shared isolation used to end every neighbour on the thread (docs/performance.md,
      // issue 23): the bench measures holding jobs, so the budget is the job timeout's.
      ...(spec.workload === 'scale' ? { budget: { maxWallclockMinutes: minutes } } : {}),
      // No heap cap of its own: a thread holding thousands of jobs gets 2,047 MiB by default, where
      // V8 grows a heap to 2× its live size between collections; the 4 GiB it had here let each
      // thread's heap grow to 4× (halfway to the cap) at 100,000 jobs (docs/performance.md, issue 40).
      cancelGraceMs,
      closeTimeoutMs: 5_000,
    },
  });
}

interface ProbeSample {
  warmMs: number | null;
  cancelMs: number | null;
}

/**
 * Spawns one job on an idle manager; at its first `model_request` cancels it. Returns spawn →
 * first request, and cancel → done when the job ended the expected way (`endedBy`).
 */
function probe(manager: BackgroundManager, task: string, expect: 'cooperative' | 'hard'): Promise<ProbeSample> {
  return new Promise((resolve) => {
    let id = '';
    let warmMs: number | null = null;
    let cancelAt: number | undefined;
    const finish = (sample: ProbeSample) => {
      clearTimeout(timer);
      offProgress();
      offDone();
      resolve(sample);
    };
    const timer = setTimeout(() => finish({ warmMs, cancelMs: null }), PROBE_TIMEOUT_MS);
    const offProgress = manager.on('progress', ({ jobId, event }) => {
      if (jobId !== id || event.type !== 'model_request' || cancelAt !== undefined) return;
      cancelAt = performance.now();
      warmMs = cancelAt - started;
      manager.cancel(id);
    });
    const offDone = manager.on('done', (record) => {
      if (record.id !== id) return;
      const ok = cancelAt !== undefined && record.status === 'cancelled' && record.endedBy === expect;
      finish({ warmMs, cancelMs: ok ? performance.now() - (cancelAt as number) : null });
    });
    const started = performance.now();
    id = manager.spawn({ task, label: `probe-${expect}` }).id;
  });
}

export async function runCell(spec: CellSpec): Promise<CellResult> {
  // Other SDKs' executors have no manager: their own cell (imported only then: dev dependencies).
  if (isPeerExecutor(spec.executor)) return (await import('./peers/cell.js')).runPeerCell(spec);
  const kind = KIND[spec.executor];
  const notes: string[] = [];
  const phasesMs: Record<string, number> = {};
  let phaseStart = performance.now();
  const phase = (name: string) => {
    const now = performance.now();
    phasesMs[name] = Math.round(now - phaseStart);
    phaseStart = now;
  };
  const baseRssMb = rssMb();
  const config = configFor(spec, spec.concurrency, 2_000);
  const executor = createExecutor(config, undefined, kind);
  const manager = new BackgroundManager({ config, executor });
  const probeUrl = spec.simUrl.replace(/\/v1$/, '/v1/models');

  try {
    if (spec.warmup) {
      // Untimed: pools start their threads and every thread's code gets hot (the main thread's
      // too), so the timed fan-out measures steady state. One full round of real jobs.
      for (let i = 0, n = Math.min(spec.concurrency, spec.jobs, WARMUP_MAX_JOBS); i < n; i++) manager.spawn({ task: taskOf(spec, i), label: `warmup-${i}` });
      if (!(await within(manager.onIdle(), spec.timeoutMs))) notes.push('warm-up did not finish in time');
    }
    phase('setup+warmup');

    const starts = new Map<string, number>();
    const latencies: number[] = [];
    const spawnTimes: number[] = [];
    let ok = 0;
    let firstFailure: string | undefined;
    let resolveAll: () => void = () => {};
    const allDone = new Promise<void>((resolve) => (resolveAll = resolve));
    // Tool calls that failed (e.g. timed out): a job can still end `ok` on a degraded answer.
    const toolErrors = new Map<string, number>();
    let slowestToolMs = 0;
    // What the first failed tool call said (a timeout, a descriptor limit...): the count alone does not say why.
    let firstToolError: string | undefined;
    const offProgress = manager.on('progress', ({ jobId, event }) => {
      if (event.type !== 'tool_result' || !starts.has(jobId)) return;
      slowestToolMs = Math.max(slowestToolMs, event.ms);
      if (event.ok) return;
      toolErrors.set(event.name, (toolErrors.get(event.name) ?? 0) + 1);
      firstToolError ??= `${event.name} after ${Math.round(event.ms)} ms: ${(event.output ?? '').slice(0, 200)}`;
    });
    const offDone = manager.on('done', (record) => {
      const started = starts.get(record.id);
      if (started === undefined) return;
      latencies.push(performance.now() - started);
      if (record.status === 'ok') ok++;
      else firstFailure ??= `${record.status}: ${record.error?.message ?? record.resultText ?? ''}`.slice(0, 300);
      if (latencies.length === spec.jobs) resolveAll();
    });

    const sampler = startSampling(probeUrl, () => executor.threadCount());
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    // One synchronous loop, as a parent's tool handler spawns a wave.
    for (let i = 0; i < spec.jobs; i++) {
      const before = performance.now();
      const { id } = manager.spawn({ task: taskOf(spec, i), label: `job-${i}` });
      const after = performance.now();
      spawnTimes.push(after - before);
      starts.set(id, before);
    }
    if (!(await within(allDone, spec.timeoutMs))) notes.push(`timed out: ${latencies.length} of ${spec.jobs} jobs delivered`);
    const wallMs = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    const sampled = await sampler.stop();
    phase('fanout');
    offDone();
    offProgress();
    if (toolErrors.size > 0)
      notes.push(
        `failed tool calls: ${[...toolErrors].map(([name, n]) => `${name} ×${n}`).join(', ')} (slowest tool call ${Math.round(slowestToolMs)} ms; tool timeout ${config.toolLimits.toolTimeoutMs} ms; first: ${firstToolError ?? '?'})`,
      );
    if (firstFailure) notes.push(`${latencies.length - ok} jobs did not end ok; first: ${firstFailure}`);

    const coop: ProbeSample[] = [];
    for (let i = 0; i < spec.probes; i++) coop.push(await probe(manager, taskOf(spec, i), 'cooperative'));
    phase('probes');
    const report = await manager.close({ timeoutMs: 5_000 });
    if (report.stragglers.length > 0) notes.push(`close: ${report.stragglers.length} stragglers hard-stopped`);
    phase('close');

    const hard = spec.executor === 'inline' ? [] : await hardProbes(spec, kind);
    phase('hard-probes');
    return {
      workload: spec.workload,
      executor: spec.executor,
      jobs: spec.jobs,
      concurrency: spec.concurrency,
      delivered: latencies.length,
      ok,
      toolErrors: [...toolErrors.values()].reduce((a, b) => a + b, 0),
      wallMs: round3(wallMs),
      jobsPerSec: round3(latencies.length / (wallMs / 1000)),
      latencyP50Ms: round3(percentile(latencies, 50)),
      latencyP95Ms: round3(percentile(latencies, 95)),
      latencyP99Ms: round3(percentile(latencies, 99)),
      ...sampled,
      spawnP50Ms: round3(percentile(spawnTimes, 50)),
      spawnP99Ms: round3(percentile(spawnTimes, 99)),
      warmStartP50Ms: p50OrNull(coop.map((s) => s.warmMs)),
      cancelCoopP50Ms: p50OrNull(coop.map((s) => s.cancelMs)),
      cancelHardP50Ms: spec.executor === 'inline' ? null : p50OrNull(hard),
      cancelHardUnstopped: false,
      idealMs: null,
      efficiency: null,
      baseRssMb,
      cpuMsPerJob: round3((cpu.user + cpu.system) / 1000 / Math.max(1, latencies.length)),
      phasesMs,
      notes,
    };
  } finally {
    await manager.close({ timeoutMs: 1_000 });
  }
}

/**
 * Hard-stop samples: jobs that spin in synchronous code (stubborn-entry.ts) and never see the
 * cooperative cancel; the grace period is 0, so cancel → done is the hard stop's latency.
 */
async function hardProbes(spec: CellSpec, kind: ExecutorKind): Promise<Array<number | null>> {
  const config = configFor(spec, 1, 0);
  const file = pathToFileURL(builtBenchFile('stubborn-entry')).href;
  const manager = new BackgroundManager({ config, executor: createExecutor(config, undefined, kind, file) });
  try {
    const samples: Array<number | null> = [];
    for (let i = 0; i < spec.hardProbes; i++) samples.push((await probe(manager, taskOf(spec, i), 'hard')).cancelMs);
    return samples;
  } finally {
    await manager.close({ timeoutMs: 1_000 });
  }
}
