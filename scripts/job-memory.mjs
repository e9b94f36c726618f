/**
 * What a job in flight costs (issue 23): N jobs started in `shared` isolation and held (the
 * simulator answers after --latency ms): those within the threads' connections in their first
 * model call, the rest waiting to build their loop (thread-backlog.ts); then process RSS, the
 * main thread's heap and each worker's heap. Run twice (N=1000, N=4000) and compare: the slope
 * is the cost. `--connections 1` holds nearly every job waiting to start.
 *
 *   npm run bench:build && node --expose-gc scripts/job-memory.mjs --jobs 1000 [--snapshot out.heapsnapshot]
 *
 * `--isolation thread` holds one thread per job. Prints one JSON line. --snapshot writes one worker's heap snapshot (it forces a GC there).
 */
import { mkdtempSync, mkdirSync, writeFileSync, createWriteStream } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { createExecutor } from '../dist/main/jobs/executor-factory.js';
import { BackgroundManager } from '../dist/main/jobs/manager.js';
import { parseConfig } from '../dist/shared/config.js';
import { startSimProcess } from '../dist-bench/bench/sim-process.js';
import { sharedTasksPerThread, SCALE_CONNECTIONS_PER_THREAD } from '../dist-bench/bench/cell.js';

const { values } = parseArgs({
  options: {
    jobs: { type: 'string', default: '1000' },
    latency: { type: 'string', default: '600000' },
    settle: { type: 'string', default: '5000' },
    snapshot: { type: 'string' },
    // Run every job to its end (use --latency 1000, as the bench's scale cell) and report the peaks.
    drain: { type: 'boolean' },
    // background.youngHeapMb / heapMb of the workers (0: by isolation).
    'young-mb': { type: 'string', default: '0' },
    'heap-mb': { type: 'string', default: '0' },
    // A worker entry of your own (e.g. one that wraps dist/worker/entry.js to profile it).
    'worker-file': { type: 'string' },
    // With --drain: once this many jobs are done, each worker's heap before and after a GC (live vs garbage).
    'probe-at': { type: 'string' },
    // With --probe-at: write the first worker's heap snapshot (taken at the probe) to this file.
    'probe-snapshot': { type: 'string' },
    'main-snapshot': { type: 'string' },
    connections: { type: 'string', default: String(SCALE_CONNECTIONS_PER_THREAD) },
    // `thread`: one thread per job in flight (RSS per thread: run twice, e.g. 20 and 60 jobs).
    isolation: { type: 'string', default: 'shared' },
  },
});
const jobs = Number(values.jobs);
const workers = [];
process.on('worker', (w) => workers.push(w));

const mb = (b) => Math.round((b / 1048576) * 10) / 10;
const workspace = mkdtempSync(path.join(tmpdir(), 'job-memory-'));
mkdirSync(path.join(workspace, 'src'));
for (let i = 0; i < 8; i++) writeFileSync(path.join(workspace, 'src', `f${i}.ts`), `export const x${i} = ${i};\n`.repeat(40));

const sim = await startSimProcess({ latencyMs: Number(values.latency), jitterMs: 0, seed: 3, researchSteps: 3 });
const config = parseConfig({
  baseUrl: sim.url,
  workspaceRoot: workspace,
  maxRetries: 2,
  modelConnectionsPerThread: Number(values.connections),
  background: {
    maxConcurrent: jobs,
    isolation: values.isolation,
    ...(values.isolation === 'shared' ? { tasksPerThread: sharedTasksPerThread(jobs) } : {}),
    timeoutMinutes: 30,
    budget: { maxWallclockMinutes: 30 },
    closeTimeoutMs: 2_000,
    youngHeapMb: Number(values['young-mb']),
    heapMb: Number(values['heap-mb']),
  },
});
const executor = createExecutor(config, undefined, 'piscina', values['worker-file']);
const manager = new BackgroundManager({ config, executor });

// The pool starts its threads at once; let them load.
global.gc?.();
await sleep(1500);
const base = { rss: process.memoryUsage().rss, heap: process.memoryUsage().heapUsed };

const workerStats = async () =>
  Promise.all(
    workers
      .filter((w) => w.threadId > 0)
      .map(async (w) => {
        try {
          const h = await w.getHeapStatistics();
          return {
            threadId: w.threadId,
            usedMb: mb(h.used_heap_size),
            totalMb: mb(h.total_heap_size),
            externalMb: mb(h.external_memory),
            mallocedMb: mb(h.malloced_memory),
          };
        } catch (error) {
          return { threadId: w.threadId, error: String(error) };
        }
      }),
  );
const sum = (ws, k) => Math.round(ws.reduce((a, w) => a + (w[k] ?? 0), 0) * 10) / 10;

const inFlight = new Set();
let allIn;
const ready = new Promise((resolve) => (allIn = resolve));
// Every job started in its thread: those past the thread's connections wait to build their loop (ConnectionSlots.enter).
manager.on('started', ({ id }) => {
  inFlight.add(id);
  if (inFlight.size === jobs) allIn();
});
const t0 = Date.now();
for (let i = 0; i < jobs; i++) manager.spawn({ task: `Find where parseConfig is defined and explain it (${i})`, label: `job-${i}` });
if (values.drain) {
  let done = 0;
  let finish;
  const finished = new Promise((resolve) => (finish = resolve));
  const probe = { at: Number(values['probe-at'] ?? 0) };
  manager.on('done', () => {
    if (++done === jobs) finish();
    if (done !== probe.at) return;
    void (async () => {
      const heldBefore = await workerStats();
      probe.rssMb = mb(process.memoryUsage.rss());
      probe.usedBeforeGcMb = sum(heldBefore, 'usedMb');
      let written = false;
      for (const w of workers.filter((x) => x.threadId > 0)) {
        const sink = values['probe-snapshot'] && !written ? createWriteStream(values['probe-snapshot']) : new Writable({ write: (_c, _e, next) => next() });
        written = true;
        await pipeline(await w.getHeapSnapshot(), sink);
      }
      probe.usedAfterGcMb = sum(await workerStats(), 'usedMb');
      probe.inFlight = jobs - done;
    })();
  });
  const peak = { rssMb: 0, workerUsedMb: 0, workerTotalMb: 0, mainHeapMb: 0, atRssPeak: {} };
  const sampler = setInterval(async () => {
    const ws = await workerStats();
    const rss = mb(process.memoryUsage.rss());
    const used = sum(ws, 'usedMb');
    const total = sum(ws, 'totalMb');
    const main = mb(process.memoryUsage().heapUsed);
    peak.workerUsedMb = Math.max(peak.workerUsedMb, used);
    peak.workerTotalMb = Math.max(peak.workerTotalMb, total);
    peak.mainHeapMb = Math.max(peak.mainHeapMb, main);
    if (rss > peak.rssMb)
      Object.assign(peak, {
        rssMb: rss,
        atRssPeak: { workerUsedMb: used, workerTotalMb: total, workerExternalMb: sum(ws, 'externalMb'), mainHeapMb: main, done },
      });
  }, 250);
  await finished;
  clearInterval(sampler);
  console.log(JSON.stringify({ jobs, drained: true, wallMs: Date.now() - t0, baseRssMb: mb(base.rss), peak, ...(probe.at ? { probe } : {}) }));
  await manager.close({ timeoutMs: 2_000 });
  await sim.stop();
  process.exit(0);
}
await ready;
const startedMs = Date.now() - t0;
await sleep(Number(values.settle));

const mem = process.memoryUsage();
const settledWorkers = await workerStats();
const before = {
  rssMb: mb(mem.rss),
  mainHeapMb: mb(mem.heapUsed),
  externalMb: mb(mem.external),
  arrayBuffersMb: mb(mem.arrayBuffers),
  workers: settledWorkers,
  workerUsedMb: sum(settledWorkers, 'usedMb'),
  workerTotalMb: sum(settledWorkers, 'totalMb'),
  workerExternalMb: sum(settledWorkers, 'externalMb'),
};
global.gc?.();
if (values['main-snapshot']) (await import('node:v8')).writeHeapSnapshot(values['main-snapshot']);
let snapshotMs;
// A heap snapshot collects the thread's garbage first: the one written, or each read and dropped.
for (const w of workers.filter((x) => x.threadId > 0)) {
  const s0 = Date.now();
  const stream = await w.getHeapSnapshot();
  if (values.snapshot && !snapshotMs) await pipeline(stream, createWriteStream(values.snapshot));
  else await pipeline(stream, new Writable({ write: (_chunk, _encoding, done) => done() }));
  if (values.snapshot) snapshotMs ??= Date.now() - s0;
}
await sleep(1000);
const mem2 = process.memoryUsage();
const afterWorkers = await workerStats();
const after = { rssMb: mb(mem2.rss), mainHeapMb: mb(mem2.heapUsed), workerUsedMb: sum(afterWorkers, 'usedMb'), workers: afterWorkers };
console.log(
  JSON.stringify({
    jobs,
    threads: executor.threadCount(),
    startedMs,
    baseRssMb: mb(base.rss),
    baseHeapMb: mb(base.heap),
    settled: before,
    afterGc: after,
    ...(snapshotMs ? { snapshotMs } : {}),
  }),
);
await manager.close({ timeoutMs: 2_000 });
await sim.stop();
process.exit(0);
