/**
 * What the bench samples on the main thread while a fan-out runs: event-loop delay, the
 * parent's own responsiveness (a small HTTP request every 50 ms), RSS and thread count.
 */
import http from 'node:http';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import type { CellResult } from './types.js';

/** Resolution of the event-loop delay timer, in ms. The reported delay is lateness beyond it. */
const ELD_RESOLUTION_MS = 1;
const PROBE_INTERVAL_MS = 50;
/** A probe slower than this is recorded at this value and abandoned. */
const PROBE_TIMEOUT_MS = 5_000;
const THREADS_INTERVAL_MS = 100;
const MB = 1024 * 1024;

/** Nearest-rank percentile of unsorted samples; NaN when there are none. */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] as number;
}

/** Rounds to 3 decimals (µs precision for ms values) to keep the JSON readable. */
export function round3(value: number): number {
  return Math.round(value * 1000) / 1000;
}

/** What the sampler measures during a fan-out: the matching fields of a cell's result. */
export type Sampled = Pick<CellResult, 'eldP50Ms' | 'eldP99Ms' | 'eldMaxMs' | 'respP50Ms' | 'respP99Ms' | 'respSamples' | 'peakRssMb' | 'threadsMax'>;

export interface Sampler {
  /** Stops the timers, waits for a probe still in flight (bounded), returns the figures. */
  stop(): Promise<Sampled>;
}

/**
 * Starts sampling. `probeUrl` is a cheap GET on another process (the simulator's /v1/models):
 * its round trip is how long the parent takes to do a little work of its own while jobs run.
 */
export function startSampling(probeUrl: string, threadCount: () => number): Sampler {
  const eld = monitorEventLoopDelay({ resolution: ELD_RESOLUTION_MS });
  eld.enable();
  // Its own keep-alive agent: the probe never queues behind the jobs' connections.
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const probes: number[] = [];
  let inFlight: Promise<void> | undefined;
  let threadsMax = threadCount();

  const tick = () => {
    // One probe at a time: a slow one is recorded once, not stacked.
    if (inFlight) return;
    const started = performance.now();
    inFlight = new Promise<void>((resolve) => {
      let settled = false;
      const finish = () => {
        if (settled) return;
        settled = true;
        probes.push(performance.now() - started);
        inFlight = undefined;
        resolve();
      };
      const req = http.get(probeUrl, { agent, timeout: PROBE_TIMEOUT_MS }, (res) => {
        res.resume();
        res.once('end', finish);
        res.once('error', finish);
      });
      req.once('timeout', () => req.destroy());
      req.once('error', finish);
    });
  };
  tick();
  const probe = setInterval(tick, PROBE_INTERVAL_MS);

  const threads = setInterval(() => {
    threadsMax = Math.max(threadsMax, threadCount());
  }, THREADS_INTERVAL_MS);

  let result: Sampled | undefined;
  return {
    async stop() {
      if (result) return result;
      clearInterval(probe);
      clearInterval(threads);
      eld.disable();
      // The probe's own timeout bounds this wait.
      if (inFlight) await inFlight;
      agent.destroy();
      threadsMax = Math.max(threadsMax, threadCount());
      const late = (ns: number) => round3(Math.max(0, ns / 1e6 - ELD_RESOLUTION_MS));
      result = {
        eldP50Ms: late(eld.percentile(50)),
        eldP99Ms: late(eld.percentile(99)),
        eldMaxMs: late(eld.max),
        respP50Ms: round3(percentile(probes, 50)),
        respP99Ms: round3(percentile(probes, 99)),
        respSamples: probes.length,
        peakRssMb: round3(peakRssBytes() / MB),
        threadsMax,
      };
      return result;
    },
  };
}

/**
 * The process's peak resident set so far (getrusage): exact, where sampling could miss a spike,
 * and it needs no file descriptor (process.memoryUsage.rss() reads /proc/self/stat, which throws
 * EMFILE when 10,000 jobs in flight hold the process at its open-file limit). Each cell runs in
 * its own process, so this is the cell's peak.
 */
function peakRssBytes(): number {
  return process.resourceUsage().maxRSS * 1024;
}

export function rssMb(): number {
  return round3(process.memoryUsage.rss() / MB);
}

/** The median of the samples that were taken (null: none was), rounded. */
export function p50OrNull(samples: Array<number | null>): number | null {
  const values = samples.filter((v): v is number => v !== null);
  return values.length > 0 ? round3(percentile(values, 50)) : null;
}

/** Resolves `true` when `promise` settles within `ms`, `false` otherwise; clears its timer. */
export async function within(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([promise.then(() => true as const), late]);
  } finally {
    clearTimeout(timer);
  }
}
