/**
 * `npm run bench:bullmq-queue`: queueing N jobs (default 100,000) through the real BullMQ
 * executor the way `forkpool fanout --executor bullmq` does (one BackgroundManager,
 * `maxConcurrent` = N, no worker running), and what it costs: jobs/s queued, Redis bytes per
 * queued job (`INFO memory` before and after), the producer's peak RSS, the main loop's p99
 * delay, the time to queue all. `--drain W` then starts W `forkpool worker` processes on the
 * simulated model and reports the drain throughput and lost/doubled jobs. Starts its own
 * redis-server (loopback, no persistence).
 *
 * `--close` (without --drain) then closes the manager with every job still waiting and reports
 * how long cancelling them took and what is left in Redis.
 *
 *   node dist-bench/bench/bullmq-queue.js [--jobs 100000] [--drain 0] [--concurrency 16] [--timeout 900] [--close]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { startRedis } from './redis-server.js';
import { Redis } from 'ioredis';
import { BackgroundManager } from 'forkpool';
import { parseConfig } from 'forkpool/protocol';
import { startSimServer } from 'forkpool/sim';
import { CLI } from './paths.js';

const TASK = 'Where is the retry backoff implemented? Answer from the files in the workspace.';
const QUEUE = 'bench-queue';

/** A `forkpool worker` whose `run-ended` lines are counted per BullMQ job id. */
function startWorker(redisUrl: string, concurrency: number, configFile: string, ended: Map<string, number>): Promise<ChildProcess> {
  const child = spawn(
    process.execPath,
    [CLI, 'worker', '--redis', redisUrl, '--queue', QUEUE, '--config', configFile, '--concurrency', String(concurrency), '--json', '--log-level', 'error'],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  return new Promise((resolve, reject) => {
    let rest = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      const lines = (rest + chunk.toString()).split('\n');
      rest = lines.pop() ?? '';
      for (const line of lines) {
        if (line.includes('"worker-ready"')) resolve(child);
        if (!line.includes('"run-ended"')) continue;
        const { bullId, evicted } = JSON.parse(line) as { bullId: string; evicted: boolean };
        if (!evicted) ended.set(bullId, (ended.get(bullId) ?? 0) + 1);
      }
    });
    child.once('exit', (code) => reject(new Error(`worker exited (${code}) before it was ready`)));
  });
}

async function usedMemory(redis: Redis): Promise<number> {
  const info = await redis.info('memory');
  return Number(/used_memory:(\d+)/.exec(info)?.[1] ?? Number.NaN);
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      jobs: { type: 'string', default: '100000' },
      drain: { type: 'string', default: '0' },
      concurrency: { type: 'string', default: '16' },
      timeout: { type: 'string', default: '900' },
      close: { type: 'boolean', default: false },
    },
  });
  const jobs = Number(values.jobs);
  const drainWorkers = Number(values.drain);
  const timeoutMs = Number(values.timeout) * 1_000;
  const redis = await startRedis();
  const sim = await startSimServer({ latencyMs: 0, recordBodies: false });
  const root = mkdtempSync(path.join(os.tmpdir(), 'forkpool-bench-queue-'));
  writeFileSync(path.join(root, 'README.md'), '# bench workspace\nThe retry backoff lives in src/retry.ts.\n');
  const probe = new Redis(redis.url);
  const workers: ChildProcess[] = [];
  try {
    const config = parseConfig({
      workspaceRoot: root,
      baseUrl: sim.url,
      apiKey: 'bench',
      maxRetries: 0,
      executor: 'bullmq',
      redisUrl: redis.url,
      bullmq: { queue: QUEUE },
      background: { maxConcurrent: jobs },
    });
    const manager = new BackgroundManager({ config });
    // A first job loads the executor and connects, so the Redis baseline includes BullMQ's own keys.
    const warm = manager.spawn({ task: TASK, label: 'warm-up' });
    while ((await probe.llen(`bull:${QUEUE}:wait`)) < 1) await new Promise((resolve) => setTimeout(resolve, 20));
    const before = await usedMemory(probe);
    const loop = monitorEventLoopDelay({ resolution: 10 });
    loop.enable();
    let peakRss = process.memoryUsage.rss();
    const rssTimer = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage.rss())), 100);
    const began = performance.now();
    const ids = [warm.id];
    // As fanout does: each line becomes a job at once, the reader yielding between chunks.
    for (let i = 0; i < jobs - 1; i++) {
      ids.push(manager.spawn({ task: `${TASK} (${i})`, label: `fan ${i}` }).id);
      if (i % 1_000 === 999) await new Promise((resolve) => setImmediate(resolve));
    }
    let queued = 0;
    while ((queued = await probe.llen(`bull:${QUEUE}:wait`)) < jobs) {
      if (performance.now() - began > timeoutMs) break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const seconds = (performance.now() - began) / 1_000;
    loop.disable();
    const after = await usedMemory(probe);
    const load = os.loadavg().map((l) => l.toFixed(2));
    const lines = [
      `jobs queued:          ${queued} of ${jobs}${queued < jobs ? ` (stopped after ${values.timeout} s)` : ''}`,
      `time to queue:        ${seconds.toFixed(1)} s`,
      `jobs/s queued:        ${Math.round((queued - 1) / seconds)}`,
      `redis bytes/job:      ${Math.round((after - before) / Math.max(1, queued - 1))}`,
      `producer peak RSS:    ${Math.round(peakRss / 2 ** 20)} MiB`,
      `main loop p99 delay:  ${(loop.percentile(99) / 1e6).toFixed(1)} ms (max ${(loop.max / 1e6).toFixed(1)} ms)`,
      `load average:         ${load.join(' ')}`,
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
    if (drainWorkers > 0 && queued === jobs) {
      const ended = new Map<string, number>();
      const workerConfig = path.join(root, 'worker.config.json');
      writeFileSync(workerConfig, JSON.stringify({ workspaceRoot: root, baseUrl: sim.url, apiKey: 'bench' }));
      const drainBegan = performance.now();
      for (let i = 0; i < drainWorkers; i++) workers.push(await startWorker(redis.url, Number(values.concurrency), workerConfig, ended));
      const records = await Promise.all(ids.map((id) => manager.result(id)));
      const drainSeconds = (performance.now() - drainBegan) / 1_000;
      const notOk = records.filter((r) => r.status !== 'ok').length;
      const doubled = [...ended.values()].filter((n) => n > 1).length;
      process.stdout.write(
        [
          `drain:                ${drainWorkers} worker(s) × ${values.concurrency}, ${drainSeconds.toFixed(1)} s`,
          `drain jobs/s:         ${Math.round(jobs / drainSeconds)} (${Math.round(jobs / drainSeconds / drainWorkers)} per worker)`,
          `not ok (lost):        ${notOk}`,
          `ran twice (doubled):  ${doubled}`,
          `load average:         ${os
            .loadavg()
            .map((l) => l.toFixed(2))
            .join(' ')}`,
        ].join('\n') + '\n',
      );
    }
    clearInterval(rssTimer);
    // Drained: a quick close. Not drained: a close only with --close (it cancels every queued job:
    // another measurement); else the process exits below.
    if (drainWorkers > 0) await manager.close({ timeoutMs: 5_000 });
    else if (values.close) {
      const closeBegan = performance.now();
      const report = await manager.close();
      const closeRss = process.memoryUsage.rss();
      process.stdout.write(
        [
          `close:                ${((performance.now() - closeBegan) / 1_000).toFixed(1)} s, ${report.cancelled.length} cancelled, RSS after ${Math.round(closeRss / 2 ** 20)} MiB`,
          `left in Redis:        ${await probe.llen(`bull:${QUEUE}:wait`)} waiting, ${await probe.dbsize()} keys`,
          `load average:         ${os
            .loadavg()
            .map((l) => l.toFixed(2))
            .join(' ')}`,
        ].join('\n') + '\n',
      );
    }
  } finally {
    for (const worker of workers) worker.kill('SIGKILL');
    probe.disconnect();
    await redis.stop();
    await sim.close();
    rmSync(root, { recursive: true, force: true });
  }
}

await main();
process.exit(0);
