/**
 * A private redis-server per test (loopback, a free port, no persistence), restartable on the
 * same port, killed after the test; and `forkpool worker` processes on it. Tests that never
 * restart Redis may share the one `.ci/run` starts (FORKPOOL_TEST_REDIS_URL) instead.
 *
 *   const redis = await startRedis(cleanup);
 *   const worker = await startWorker(cleanup, redis.url, { config: { baseUrl: sim.url, workspaceRoot: ws }, lockMs: 4000 });
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { acceptsConnections, freeLoopbackPort } from '../../src/shared/loopback.js';
import type { BullmqExecutor } from '../../src/main/bullmq/executor.js';
import type { LazyExecutor } from '../../src/main/executors/lazy-executor.js';
import type { BackgroundManager } from '../../src/main/jobs/manager.js';
import type { Cleanup } from './cleanup.js';
import { makeWorkspace } from './config.js';
import { makeConfig, makeManager } from './pool.js';
import { startSim } from './sim.js';
import type { ForkpoolConfigInput } from '../../src/shared/config.js';
import type { SimServer, SimServerOptions } from '../../src/sim/index.js';
import { skipWithout } from './system.js';
import { startTcpProxy as startLoopbackProxy, type TcpProxy } from './tcp-proxy.js';
import { spawnCli, parseJsonLines, type CliProcess } from './cli.js';

export const REDIS_SERVER = ['/usr/bin/redis-server', '/usr/local/bin/redis-server'].find((file) => existsSync(file)) ?? 'redis-server';

/**
 * True when the Redis tests should be skipped: no redis-server binary runs here. Says so in one
 * line (under `.ci/run` they run and fail instead). A function, so that only test files that
 * need Redis say it.
 */
export function skipWithoutRedis(): boolean {
  return skipWithout('redis-server', spawnSync(REDIS_SERVER, ['--version'], { encoding: 'utf8' }).status === 0);
}

export interface TestRedis {
  url: string;
  port: number;
  /** Kills the server (SIGKILL: without `persist` nothing is saved) and starts it again on the same port. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * `password`: the server requires it (`--requirepass`), and `url` carries it (`redis://:password@…`).
 * `persist`: an append-only file fsynced on every write, so a SIGKILLed server restarts with its data.
 */
export async function startRedis(cleanup: Cleanup, options: { password?: string; persist?: boolean } = {}): Promise<TestRedis> {
  const port = await freeLoopbackPort();
  let child: ChildProcess | undefined;
  const auth = options.password === undefined ? [] : ['--requirepass', options.password];
  let persistence = ['--save', '', '--appendonly', 'no'];
  if (options.persist) {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'forkpool-redis-aof-'));
    cleanup.add(() => rmSync(dir, { recursive: true, force: true }));
    persistence = ['--save', '', '--appendonly', 'yes', '--appendfsync', 'always', '--dir', dir];
  }
  const start = async () => {
    child = spawn(REDIS_SERVER, ['--bind', '127.0.0.1', '--port', String(port), ...persistence, '--loglevel', 'warning', ...auth], {
      stdio: 'ignore',
    });
    const deadline = Date.now() + 10_000;
    while (!(await acceptsConnections(port))) {
      if (Date.now() > deadline) throw new Error(`redis-server did not accept connections on port ${port}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };
  const stop = async () => {
    const running = child;
    child = undefined;
    if (!running || running.exitCode !== null || running.signalCode !== null) return;
    const exited = new Promise((resolve) => running.once('exit', resolve));
    running.kill('SIGKILL');
    await exited;
  };
  await start();
  cleanup.add(stop);
  return {
    url: options.password === undefined ? `redis://127.0.0.1:${port}` : `redis://:${encodeURIComponent(options.password)}@127.0.0.1:${port}`,
    port,
    restart: async () => {
      await stop();
      await start();
    },
    stop,
  };
}

/**
 * A Redis for a test that never restarts it, and a queue name of its own: the one `.ci/run`
 * started (FORKPOOL_TEST_REDIS_URL) when there is one, else a private server.
 */
export async function testRedis(cleanup: Cleanup): Promise<{ url: string; queue: string }> {
  const queue = `fp-${process.pid}-${++queues}`;
  const shared = process.env.FORKPOOL_TEST_REDIS_URL;
  if (shared) return { url: shared, queue };
  return { url: (await startRedis(cleanup)).url, queue };
}
let queues = 0;

export interface TestWorker {
  cli: CliProcess;
  pid: number;
  /** Its BullMQ worker name (`host:pid`), as jobs' `processedBy` shows it. */
  name: string;
  /** The runs it reported ending (`run-ended` lines). */
  runsEnded(): Array<Record<string, unknown>>;
}

export interface TestWorkerOptions {
  /**
   * The worker's own config file (`--config`): its model endpoints and keys, workspace, grants.
   * Jobs run only on endpoints it names, in its workspace (see src/bullmq/worker-policy.ts).
   */
  config: Record<string, unknown>;
  concurrency?: number;
  lockMs?: number;
  maxStalls?: number;
  queue?: string;
  env?: Record<string, string>;
}

/** Starts `forkpool worker --json` on `redisUrl` and waits until it takes jobs. */
export async function startWorker(cleanup: Cleanup, redisUrl: string, options: TestWorkerOptions): Promise<TestWorker> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'forkpool-worker-config-'));
  cleanup.add(() => rmSync(dir, { recursive: true, force: true }));
  const configFile = path.join(dir, 'worker.config.json');
  writeFileSync(configFile, JSON.stringify(options.config));
  const args = ['worker', '--redis', redisUrl, '--config', configFile, '--json', '--concurrency', String(options.concurrency ?? 2), '--log-level', 'warn'];
  if (options.lockMs !== undefined) args.push('--lock-ms', String(options.lockMs));
  if (options.maxStalls !== undefined) args.push('--max-stalls', String(options.maxStalls));
  if (options.queue !== undefined) args.push('--queue', options.queue);
  const cli = spawnCli(args, { cleanup, timeoutMs: 180_000, ...(options.env ? { env: options.env } : {}) });
  await cli.waitForStdout((out) => out.includes('"worker-ready"'));
  const ready = parseJsonLines(cli.stdout()).find((line) => line.type === 'worker-ready') as { name: string; pid: number };
  return { cli, pid: ready.pid, name: ready.name, runsEnded: () => parseJsonLines(cli.stdout()).filter((line) => line.type === 'run-ended') };
}

/** The loaded BullMQ executor behind a manager's (lazy) `bullmq` executor. */
export function bullmqOf(manager: BackgroundManager): BullmqExecutor {
  const loaded = (manager.executor as LazyExecutor).loaded;
  if (loaded === undefined) throw new Error('the bullmq executor is not loaded yet (make the manager with bullManager)');
  return loaded as BullmqExecutor;
}

/** makeManager on the bullmq executor, which createExecutor loads on first use: loaded before the test looks inside. */
export async function bullManager(...args: Parameters<typeof makeManager>): Promise<BackgroundManager> {
  const manager = makeManager(...args);
  await (manager.executor as LazyExecutor).ready();
  return manager;
}

/** A loopback TCP proxy to `targetPort` (closed after the test): a network between two processes that a test can cut. */
export async function startTcpProxy(cleanup: Cleanup, targetPort: number): Promise<TcpProxy> {
  const proxy = await startLoopbackProxy(targetPort);
  cleanup.add(() => proxy.close());
  return proxy;
}

export interface BullmqPairOptions {
  sim?: SimServerOptions;
  /** The worker process: its options, and what its config adds to the sim's `baseUrl` and the workspace. */
  worker?: Omit<TestWorkerOptions, 'config' | 'queue'> & { config?: Record<string, unknown> };
  /** The producer: its `background` limits, its config beside the bullmq executor, and `bullmq` options beside the queue. */
  producer?: {
    background?: NonNullable<ForkpoolConfigInput['background']>;
    config?: Partial<ForkpoolConfigInput>;
    bullmq?: Record<string, unknown>;
  };
}

export interface BullmqPair {
  redis: { url: string; queue: string };
  sim: SimServer;
  workspace: string;
  worker: TestWorker;
  manager: BackgroundManager;
}

/**
 * A producer and a `forkpool worker` process on one queue: a Redis (testRedis), a sim, a
 * workspace, the worker (its config on the sim and the workspace) and a manager on the bullmq
 * executor (polling every 500 ms), all closed after the test.
 */
export async function startBullmqPair(cleanup: Cleanup, options: BullmqPairOptions = {}): Promise<BullmqPair> {
  const redis = await testRedis(cleanup);
  const sim = await startSim(cleanup, options.sim);
  const workspace = await makeWorkspace(cleanup);
  const { config: workerConfig, ...workerOptions } = options.worker ?? {};
  const worker = await startWorker(cleanup, redis.url, {
    ...workerOptions,
    queue: redis.queue,
    config: { baseUrl: sim.url, workspaceRoot: workspace, ...workerConfig },
  });
  const producer = options.producer ?? {};
  const config = makeConfig(sim, workspace, producer.background, {
    executor: 'bullmq',
    redisUrl: redis.url,
    bullmq: { queue: redis.queue, pollMs: 500, ...producer.bullmq },
    ...producer.config,
  });
  const manager = await bullManager(config, cleanup);
  return { redis, sim, workspace, worker, manager };
}
