/**
 * One bench cell on a peer executor (another SDK, in-process): the same phases and figures as
 * cell.ts's forkpool cell, without a BackgroundManager — warm-up, a timed fan-out with the main
 * thread sampled, warm-start and cooperative-cancel probes on one job at a time, and a hard
 * probe: a job whose first tool call spins in synchronous code. In-process, nothing can stop that job, so
 * it is reported as not stopped when it outlives {@link HARD_STOP_LIMIT_MS} after its cancel.
 */
import { performance } from 'node:perf_hooks';
import { p50OrNull, percentile, round3, rssMb, startSampling, within } from '../measure.js';
import { PEER_EXECUTORS, isPeerExecutor, type CellResult, type CellSpec, type PeerExecutorName } from '../types.js';
import { taskOf } from '../workloads.js';
import { HARD_STOP_LIMIT_MS, type PeerExecutor } from './toolkit.js';

const WARMUP_MAX_JOBS = 100;
/** A probe is abandoned after this long (the stuck job's spin is shorter). */
const PROBE_TIMEOUT_MS = HARD_STOP_LIMIT_MS + 10_000;

type ToolResultHook = (name: string, ok: boolean, ms: number) => void;

async function createPeer(name: PeerExecutorName, spec: CellSpec, onToolResult: ToolResultHook): Promise<PeerExecutor> {
  try {
    if (name === 'openai-agents') return (await import('./openai-agents.js')).createOpenAiAgentsPeer(spec, onToolResult);
    return (await import('./ai-sdk.js')).createAiSdkPeer(spec, onToolResult);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(`the ${name} peer needs the bench's dev dependencies (@openai/agents 0.9, ai 6, @ai-sdk/openai-compatible): ${reason}`, { cause: error });
  }
}

interface ProbeSample {
  warmMs: number | null;
  cancelMs: number | null;
  unstopped: boolean;
}

/**
 * One job alone. Cooperative: at its first model request (once the request is on its way),
 * cancel it. Stubborn: cancel it as its first tool call starts spinning; the abort can only run when the
 * spin lets the thread go.
 */
async function probe(peer: PeerExecutor, task: string, stubborn: boolean): Promise<ProbeSample> {
  const controller = new AbortController();
  let startedAt: number | undefined;
  let warmMs: number | null = null;
  let cancelAt: number | undefined;
  const run = peer.runOne(task, {
    signal: controller.signal,
    onStart: () => (startedAt ??= performance.now()),
    onModelRequest: () => {
      if (stubborn || warmMs !== null || startedAt === undefined) return;
      warmMs = performance.now() - startedAt;
      setImmediate(() => {
        cancelAt = performance.now();
        controller.abort(new Error('cancelled by the bench probe'));
      });
    },
    ...(stubborn
      ? {
          stubborn: {
            onSpin: () => {
              cancelAt ??= performance.now();
              setTimeout(() => controller.abort(new Error('cancelled by the bench probe')), 0);
            },
          },
        }
      : {}),
  });
  let outcome: { ok: boolean } | undefined;
  const settled = await within(
    run.then((o) => (outcome = o)),
    PROBE_TIMEOUT_MS,
  );
  const endedAt = performance.now();
  if (!settled || cancelAt === undefined) return { warmMs, cancelMs: null, unstopped: stubborn && !settled };
  const cancelMs = endedAt - cancelAt;
  if (stubborn && cancelMs > HARD_STOP_LIMIT_MS) return { warmMs, cancelMs: null, unstopped: true };
  // A job that answered anyway was not cancelled: no sample.
  return { warmMs, cancelMs: outcome?.ok ? null : cancelMs, unstopped: false };
}

export async function runPeerCell(spec: CellSpec): Promise<CellResult> {
  const name = spec.executor;
  if (!isPeerExecutor(name)) throw new Error(`runPeerCell expects a peer executor (${PEER_EXECUTORS.join(', ')}); received ${name}`);
  const notes: string[] = [];
  const phasesMs: Record<string, number> = {};
  let phaseStart = performance.now();
  const phase = (name: string) => {
    const now = performance.now();
    phasesMs[name] = Math.round(now - phaseStart);
    phaseStart = now;
  };
  const baseRssMb = rssMb();
  let counting = false;
  const toolErrors = new Map<string, number>();
  const peer = await createPeer(name, spec, (name, ok) => {
    if (counting && !ok) toolErrors.set(name, (toolErrors.get(name) ?? 0) + 1);
  });

  if (spec.warmup) {
    const n = Math.min(spec.concurrency, spec.jobs, WARMUP_MAX_JOBS);
    const tasks = Array.from({ length: n }, (_, i) => taskOf(spec, i));
    const noop = () => {};
    if (!(await within(peer.fanOut(tasks, { started: noop, running: noop, released: noop, ended: noop, toolResult: noop }), spec.timeoutMs)))
      notes.push('warm-up did not finish in time');
  }
  phase('setup+warmup');

  const tasks = Array.from({ length: spec.jobs }, (_, i) => taskOf(spec, i));
  const startedAt = new Array<number | undefined>(spec.jobs);
  const latencies: number[] = [];
  const startGaps: number[] = [];
  let firstStart: number | undefined;
  let lastStart: number | undefined;
  let lastEnd = 0;
  const running = new Set<number>();
  let inFlightMax = 0;
  let ok = 0;
  let firstFailure: string | undefined;
  const requestsBefore = peer.modelRequests();
  counting = true;
  const sampler = startSampling(spec.simUrl.replace(/\/v1$/, '/v1/models'), () => 0);
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const fanout = peer.fanOut(tasks, {
    started: (index) => {
      const now = performance.now();
      firstStart ??= now;
      if (lastStart !== undefined) startGaps.push(now - lastStart);
      lastStart = now;
      startedAt[index] = now;
    },
    running: (index) => {
      running.add(index);
      inFlightMax = Math.max(inFlightMax, running.size);
    },
    released: (index) => running.delete(index),
    ended: (index, answered, detail) => {
      const now = performance.now();
      lastEnd = now;
      latencies.push(now - (startedAt[index] ?? t0));
      if (answered) ok++;
      else firstFailure ??= (detail ?? 'ended without an answer').slice(0, 300);
    },
    toolResult: () => {},
  });
  const finished = await within(
    fanout.catch((error: unknown) => notes.push(`fan-out failed: ${error instanceof Error ? error.message : String(error)}`.slice(0, 300))),
    spec.timeoutMs,
  );
  const fanoutEnd = performance.now();
  if (!finished) notes.push(`timed out: ${latencies.length} of ${spec.jobs} jobs delivered`);
  // First job start → last job end, as a forkpool cell's first spawn() → last done; for the
  // Agents SDK the orchestrator's own model calls fall before and after this window.
  const wallMs = (finished ? lastEnd : fanoutEnd) - (firstStart ?? t0);
  const cpu = process.cpuUsage(cpu0);
  const sampled = await sampler.stop();
  counting = false;
  phasesMs['before-first-job'] = Math.round((firstStart ?? t0) - t0);
  phasesMs['after-last-job'] = Math.round(fanoutEnd - (lastEnd || fanoutEnd));
  phase('fanout');
  const modelCalls = peer.modelRequests() - requestsBefore;
  if (toolErrors.size > 0) notes.push(`failed tool calls: ${[...toolErrors].map(([name, n]) => `${name} ×${n}`).join(', ')}`);
  if (firstFailure) notes.push(`${latencies.length - ok} jobs did not end ok; first: ${firstFailure}`);

  const coop: ProbeSample[] = [];
  for (let i = 0; i < spec.probes; i++) coop.push(await probe(peer, taskOf(spec, i), false));
  phase('probes');
  // One sample is enough and each costs the whole spin: in-process, nothing ends it sooner.
  const hard = spec.hardProbes > 0 ? [await probe(peer, taskOf(spec, 0), true)] : [];
  phase('hard-probes');

  return {
    workload: spec.workload,
    executor: name,
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
    // Peers have no spawn(): the gap between two job starts in the fan-out (0 when there was one job).
    spawnP50Ms: round3(startGaps.length > 0 ? percentile(startGaps, 50) : 0),
    spawnP99Ms: round3(startGaps.length > 0 ? percentile(startGaps, 99) : 0),
    warmStartP50Ms: p50OrNull(coop.map((s) => s.warmMs)),
    cancelCoopP50Ms: p50OrNull(coop.map((s) => s.cancelMs)),
    cancelHardP50Ms: p50OrNull(hard.map((s) => s.cancelMs)),
    cancelHardUnstopped: hard.some((s) => s.unstopped),
    idealMs: null,
    efficiency: null,
    modelCallsPerJob: round3(modelCalls / Math.max(1, spec.jobs)),
    jobsInFlightMax: inFlightMax,
    baseRssMb,
    cpuMsPerJob: round3((cpu.user + cpu.system) / 1000 / Math.max(1, latencies.length)),
    phasesMs,
    notes,
  };
}
