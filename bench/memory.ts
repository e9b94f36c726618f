/**
 * Memory of one long-lived BackgroundManager (issue 8 §5): pushes many jobs through ONE manager
 * (real Piscina pool, `shared` isolation) against the simulator in the same process, in
 * batches, draining each batch as a parent turn would, and prints RSS and heap after a full GC
 * at the end of every batch. A process that keeps what it no longer needs grows linearly; one
 * with bounded retention levels off.
 *
 *   npm run bench:memory                       # 10 × 500 jobs
 *   node --expose-gc dist-bench/bench/memory.js --batches 4 --batch-size 100 --concurrency 20
 *
 * Needs `--expose-gc` (the npm script passes it). Output: one table row per batch on stdout,
 * and with `--json` one JSON line per batch instead.
 */
import { mkdtempSync, realpathSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { BackgroundManager, Deliveries } from 'forkpool';
import { parseConfig } from 'forkpool/protocol';
import { startSimServer } from 'forkpool/sim';

const MB = 1024 * 1024;

const { values } = parseArgs({
  options: {
    batches: { type: 'string', default: '10' },
    'batch-size': { type: 'string', default: '500' },
    concurrency: { type: 'string', default: '50' },
    'task-chars': { type: 'string', default: '2000' },
    /** Overrides of `background.retention` (defaults: the config's). */
    'keep-results': { type: 'string' },
    'keep-records': { type: 'string' },
    'sim-log': { type: 'string' },
    json: { type: 'boolean', default: false },
  },
});
const batches = Number(values.batches);
const batchSize = Number(values['batch-size']);
const concurrency = Number(values.concurrency);
const taskChars = Number(values['task-chars']);

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) {
  process.stderr.write('bench:memory needs --expose-gc (run it with `npm run bench:memory`)\n');
  process.exit(2);
}

/** A full collection, twice: the first may only schedule finalizers and weak-map sweeps. */
async function settledGc(): Promise<void> {
  for (let i = 0; i < 2; i++) {
    gc?.();
    await new Promise((resolve) => setImmediate(resolve));
  }
}

const workspace = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'forkpool-memory-')));
mkdirSync(path.join(workspace, 'src'), { recursive: true });
writeFileSync(path.join(workspace, 'README.md'), '# memory bench\nThe tool loop lives in src/loop.ts.\n');
writeFileSync(
  path.join(workspace, 'src/loop.ts'),
  `export function toolLoop() {\n${'  // retries with backoff, stops at maxIterations\n'.repeat(40)}  return 42;\n}\n`,
);

const sim = await startSimServer({ seed: 7, ...(values['sim-log'] === undefined ? {} : { requestLogLimit: Number(values['sim-log']) }) });
const retention = {
  ...(values['keep-results'] === undefined ? {} : { keepResults: Number(values['keep-results']) }),
  ...(values['keep-records'] === undefined ? {} : { keepRecords: Number(values['keep-records']) }),
};
const config = parseConfig({
  baseUrl: sim.url,
  workspaceRoot: workspace,
  maxRetries: 1,
  background: { isolation: 'shared', maxConcurrent: concurrency, ...(Object.keys(retention).length ? { retention } : {}) },
});
const manager = new BackgroundManager({ config });
const deliveries = new Deliveries(manager);
// A task as a parent would write one: a question plus a block of context (padded to size).
const padding = ' Context: the loop retries with backoff and stops at maxIterations.'.repeat(Math.ceil(taskChars / 66));
const taskFor = (i: number) => `Where is the tool loop and what does it return? (job ${i})${padding}`.slice(0, taskChars);

interface Row {
  batch: number;
  jobs: number;
  ok: number;
  rssMb: number;
  heapUsedMb: number;
  records: number;
  resultChars: number;
  simRequests: number;
  jobsCallMs: number;
  seconds: number;
}

const rows: Row[] = [];
const started = performance.now();
let ok = 0;
manager.on('done', (job) => {
  if (job.status === 'ok') ok++;
});
await settledGc();
const base = process.memoryUsage();
const header = 'batch   jobs     ok   rss MB  heap MB  records  result chars  sim log  jobs() ms      s';
if (!values.json) {
  process.stdout.write(`before: rss ${(base.rss / MB).toFixed(1)} MB, heap ${(base.heapUsed / MB).toFixed(1)} MB\n${header}\n`);
}
for (let b = 1; b <= batches; b++) {
  for (let i = 0; i < batchSize; i++) {
    manager.spawn({ task: taskFor((b - 1) * batchSize + i), label: `b${b}-${i}`, wave: b });
  }
  deliveries.sealWave(b);
  await manager.onIdle();
  // The parent's next turn takes the batch's results.
  deliveries.drain(b);
  await settledGc();
  const memory = process.memoryUsage();
  // What a panel pays to render the job list once.
  const t0 = performance.now();
  const snapshot = manager.jobs();
  const jobsCallMs = performance.now() - t0;
  const row: Row = {
    batch: b,
    jobs: b * batchSize,
    ok,
    rssMb: memory.rss / MB,
    heapUsedMb: memory.heapUsed / MB,
    records: snapshot.length,
    resultChars: snapshot.reduce((sum, r) => sum + (r.resultText?.length ?? 0) + r.task.length, 0),
    simRequests: sim.requests.length,
    jobsCallMs,
    seconds: (performance.now() - started) / 1000,
  };
  rows.push(row);
  if (values.json) process.stdout.write(`${JSON.stringify(row)}\n`);
  else {
    process.stdout.write(
      `${String(row.batch).padStart(5)} ${String(row.jobs).padStart(6)} ${String(row.ok).padStart(6)} ${row.rssMb.toFixed(1).padStart(8)} ${row.heapUsedMb.toFixed(1).padStart(8)}` +
        ` ${String(row.records).padStart(8)} ${String(row.resultChars).padStart(13)} ${String(row.simRequests).padStart(8)} ${row.jobsCallMs.toFixed(2).padStart(9)} ${row.seconds.toFixed(1).padStart(6)}\n`,
    );
  }
}
await manager.close();
await sim.close();
rmSync(workspace, { recursive: true, force: true });

// Levelling off: the growth over the second half of the run, per batch, against the first half.
if (rows.length >= 4 && !values.json) {
  const half = Math.floor(rows.length / 2);
  const first = rows[half - 1] as Row;
  const last = rows[rows.length - 1] as Row;
  const early = rows[0] as Row;
  const perBatchLate = (last.heapUsedMb - first.heapUsedMb) / (rows.length - half);
  const perBatchEarly = (first.heapUsedMb - early.heapUsedMb) / Math.max(1, half - 1);
  process.stdout.write(`heap growth per batch: first half ${perBatchEarly.toFixed(2)} MB, second half ${perBatchLate.toFixed(2)} MB\n`);
}
