/**
 * `npm run bench:bullmq`: the same I/O fan-out (default 1,000 jobs) on the Piscina executor and
 * on the BullMQ executor with 1, 2 and 4 `forkpool worker` processes on this machine, the same
 * number of job threads in total; throughput, spawn-to-start latency (p50/p99) and cancel
 * latency (cancel() → the job's end, while its model call hangs), as ratios to Piscina, in one
 * run. Starts its own redis-server (loopback, no persistence) and simulated model.
 *
 *   node dist-bench/bench/bullmq.js [--jobs 1000] [--threads 16] [--latency 50] [--cancels 20] [--out bench/results]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { startRedis } from './redis-server.js';
import { BackgroundManager, type ForkpoolConfig } from 'forkpool';
import { parseConfig } from 'forkpool/protocol';
import { startSimServer, type SimServer } from 'forkpool/sim';
import { percentile } from './measure.js';
import { CLI } from './paths.js';

const TASK = 'Where is the retry backoff implemented? Answer from the files in the workspace.';

interface Row {
  setup: string;
  jobs: number;
  seconds: number;
  jobsPerSecond: number;
  startP50Ms: number;
  startP99Ms: number;
  cancelP50Ms: number;
  cancelP99Ms: number;
}

/** `configFile`: the worker's own config (its model endpoints and workspace; jobs carry neither). */
function startWorker(redisUrl: string, queue: string, concurrency: number, configFile: string): Promise<ChildProcess> {
  const child = spawn(
    process.execPath,
    [CLI, 'worker', '--redis', redisUrl, '--queue', queue, '--config', configFile, '--concurrency', String(concurrency), '--json', '--log-level', 'error'],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('"worker-ready"')) resolve(child);
    });
    child.once('exit', (code) => reject(new Error(`worker exited (${code}) before it was ready`)));
  });
}

function workspace(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'forkpool-bench-bullmq-'));
  mkdirSync(path.join(dir, 'src'));
  writeFileSync(
    path.join(dir, 'src/retry.ts'),
    '// Retry with exponential backoff and jitter.\nexport function retryBackoff(attempt: number): number {\n  return Math.min(8000, 500 * 2 ** attempt);\n}\n',
  );
  writeFileSync(path.join(dir, 'README.md'), '# bench workspace\nThe retry backoff lives in src/retry.ts.\n');
  return dir;
}

async function fanOut(config: ForkpoolConfig, jobs: number): Promise<{ seconds: number; startLatencies: number[] }> {
  const manager = new BackgroundManager({ config });
  const spawnedAt = new Map<string, number>();
  const startLatencies: number[] = [];
  manager.on('started', (record) => {
    const at = spawnedAt.get(record.id);
    if (at !== undefined && record.attempts === 1) startLatencies.push(performance.now() - at);
  });
  const began = performance.now();
  const ids: string[] = [];
  for (let i = 0; i < jobs; i++) {
    const now = performance.now();
    const { id } = manager.spawn({ task: TASK, label: `fan ${i}` });
    spawnedAt.set(id, now);
    ids.push(id);
  }
  const records = await Promise.all(ids.map((id) => manager.result(id)));
  const seconds = (performance.now() - began) / 1000;
  const bad = records.filter((r) => r.status !== 'ok').length;
  if (bad > 0) process.stderr.write(`bench:bullmq: ${bad} job(s) did not end ok\n`);
  await manager.close({ timeoutMs: 5_000 });
  return { seconds, startLatencies };
}

/** Cancel while the job's model call hangs: cancel() → its `done`, one job at a time. */
async function cancels(config: ForkpoolConfig, count: number, hangingSim: SimServer): Promise<number[]> {
  const manager = new BackgroundManager({ config: { ...config, baseUrl: hangingSim.url } });
  const latencies: number[] = [];
  for (let i = 0; i < count; i++) {
    const { id } = manager.spawn({ task: TASK, label: `cancel ${i}` });
    const requestsBefore = hangingSim.requests.length;
    await new Promise<void>((resolve) => {
      const check = () => (manager.get(id)?.state === 'running' && hangingSim.requests.length > requestsBefore ? resolve() : void setTimeout(check, 5));
      check();
    });
    const at = performance.now();
    const ended = manager.result(id);
    manager.cancel(id);
    const record = await ended;
    latencies.push(performance.now() - at);
    if (record.status !== 'cancelled') process.stderr.write(`bench:bullmq: cancelled job ended ${record.status}\n`);
  }
  await manager.close({ timeoutMs: 5_000 });
  return latencies;
}

function row(setup: string, jobs: number, run: { seconds: number; startLatencies: number[] }, cancel: number[]): Row {
  const r = (n: number) => Math.round(n * 10) / 10;
  return {
    setup,
    jobs,
    seconds: r(run.seconds),
    jobsPerSecond: r(jobs / run.seconds),
    startP50Ms: r(percentile(run.startLatencies, 50)),
    startP99Ms: r(percentile(run.startLatencies, 99)),
    cancelP50Ms: r(percentile(cancel, 50)),
    cancelP99Ms: r(percentile(cancel, 99)),
  };
}

function table(rows: Row[]): string {
  const base = rows[0] as Row;
  const ratio = (value: number, of: number) => (of > 0 ? `${(value / of).toFixed(2)}×` : '-');
  const lines = [
    '| setup | jobs | s | jobs/s | × piscina | start p50 ms | start p99 ms | × p50 | cancel p50 ms | cancel p99 ms | × p50 |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const row of rows) {
    lines.push(
      `| ${row.setup} | ${row.jobs} | ${row.seconds} | ${row.jobsPerSecond} | ${ratio(row.jobsPerSecond, base.jobsPerSecond)} | ${row.startP50Ms} | ${row.startP99Ms} | ${ratio(row.startP50Ms, base.startP50Ms)} | ${row.cancelP50Ms} | ${row.cancelP99Ms} | ${ratio(row.cancelP50Ms, base.cancelP50Ms)} |`,
    );
  }
  return lines.join('\n');
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      jobs: { type: 'string', default: '1000' },
      threads: { type: 'string', default: '16' },
      latency: { type: 'string', default: '50' },
      cancels: { type: 'string', default: '20' },
      workers: { type: 'string', default: '1,2,4' },
      out: { type: 'string', default: 'bench/results' },
    },
  });
  const jobs = Number(values.jobs);
  const threads = Number(values.threads);
  const cancelCount = Number(values.cancels);
  const workerCounts = String(values.workers).split(',').map(Number);
  const sim = await startSimServer({ latencyMs: Number(values.latency), recordBodies: false });
  const hanging = await startSimServer({ latencyMs: 600_000, recordBodies: false });
  const redis = await startRedis();
  const root = workspace();
  const base = { workspaceRoot: root, baseUrl: sim.url, apiKey: 'bench', maxRetries: 0, background: { maxConcurrent: threads, cancelGraceMs: 2_000 } };
  // Outside the workspace: the workers' own config, allowing both simulated endpoints.
  const workerConfig = path.join(mkdtempSync(path.join(os.tmpdir(), 'forkpool-bench-worker-')), 'worker.config.json');
  writeFileSync(workerConfig, JSON.stringify({ workspaceRoot: root, baseUrl: sim.url, apiKey: 'bench', bullmq: { allowedBaseUrls: [hanging.url] } }));
  const rows: Row[] = [];
  try {
    const piscina = parseConfig({ ...base, executor: 'piscina' });
    process.stderr.write(`bench:bullmq: piscina, ${threads} threads, ${jobs} jobs\n`);
    rows.push(row(`piscina (${threads} threads)`, jobs, await fanOut(piscina, jobs), await cancels(piscina, cancelCount, hanging)));
    for (const count of workerCounts) {
      const queue = `bench-${count}`;
      const perWorker = Math.max(1, Math.ceil(threads / count));
      const workers = await Promise.all(Array.from({ length: count }, () => startWorker(redis.url, queue, perWorker, workerConfig)));
      // Everything goes into the queue; the workers' threads (count × perWorker) are the cap.
      const config = parseConfig({
        ...base,
        executor: 'bullmq',
        redisUrl: redis.url,
        bullmq: { queue },
        background: { maxConcurrent: jobs, cancelGraceMs: 2_000 },
      });
      process.stderr.write(`bench:bullmq: bullmq, ${count} worker(s) × ${perWorker} threads, ${jobs} jobs\n`);
      try {
        rows.push(
          row(
            `bullmq ${count} worker(s) × ${perWorker}`,
            jobs,
            await fanOut(config, jobs),
            await cancels({ ...config, background: { ...config.background, maxConcurrent: threads } }, cancelCount, hanging),
          ),
        );
      } finally {
        await Promise.all(
          workers.map(
            (w) =>
              new Promise((resolve) => {
                w.once('exit', resolve);
                w.kill('SIGTERM');
                setTimeout(() => w.kill('SIGKILL'), 15_000).unref();
              }),
          ),
        );
      }
    }
  } finally {
    await redis.stop();
    await sim.close();
    await hanging.close();
    rmSync(root, { recursive: true, force: true });
    rmSync(path.dirname(workerConfig), { recursive: true, force: true });
  }
  const markdown = table(rows);
  process.stdout.write(`${markdown}\n`);
  mkdirSync(values.out, { recursive: true });
  writeFileSync(
    path.join(values.out, 'bullmq.json'),
    `${JSON.stringify({ at: new Date().toISOString(), node: process.version, cores: os.availableParallelism(), threads, rows }, null, 2)}\n`,
  );
  writeFileSync(path.join(values.out, 'bullmq.md'), `${markdown}\n`);
}

await main();
