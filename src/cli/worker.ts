import { ForkpoolWorker } from '../main/bullmq/worker.js';
import { WorkerPolicy } from '../main/bullmq/worker-policy.js';
import { redisUrlSchema } from '../shared/bullmq-config.js';
import { createLogger, LOG_LEVELS, type LogLevel } from '../main/setup/logger.js';
import { loadConfig } from '../main/setup/config-load.js';
import { ConfigError } from '../shared/errors.js';
import { escapeForTerminal, jsonForTerminal } from '../shared/terminal-text.js';
import { onTermination } from './common.js';
import { startSimServer, type SimServer } from '../sim/index.js';
import type { ForkpoolConfig } from '../shared/config.js';
import { startCliTracing } from './tracing.js';

export interface WorkerFlags {
  redis?: string;
  concurrency?: number;
  queue?: string;
  lockMs?: number;
  maxStalls?: number;
  config?: string;
  logLevel?: string;
  json?: boolean;
}

/**
 * `forkpool worker --redis URL [--concurrency N]`: runs jobs of the BullMQ queue in this
 * machine's Piscina pool until SIGINT/SIGTERM, then closes within `bullmq.closeTimeoutMs`
 * (running jobs are stopped and go back to the queue for another worker). Keys, model endpoints,
 * workspace, sandbox and grants come from this machine (its config file and environment), never
 * from Redis (see src/bullmq/worker-policy.ts).
 */
export async function workerCommand(flags: WorkerFlags): Promise<number> {
  const level = (flags.logLevel ?? 'warn') as LogLevel;
  if (!LOG_LEVELS.includes(level))
    throw new ConfigError([
      { field: 'logLevel', expected: `one of ${LOG_LEVELS.join(', ')}`, received: JSON.stringify(flags.logLevel), source: 'flag --log-level' },
    ]);
  const config = loadConfig({ fromEnv: true, file: flags.config ?? true, onWarning: (message) => process.stderr.write(`forkpool: warning: ${message}\n`) });
  const redisUrl = flags.redis ?? process.env.FORKPOOL_REDIS_URL ?? config.redisUrl;
  const parsedUrl = redisUrlSchema.safeParse(redisUrl);
  if (!parsedUrl.success) {
    throw new ConfigError([
      {
        field: 'redisUrl',
        expected: 'a redis:// or rediss:// URL',
        received: redisUrl === undefined ? 'nothing' : JSON.stringify(redisUrl),
        source: 'flag --redis, FORKPOOL_REDIS_URL or the config file',
      },
    ]);
  }
  // Its runs' spans continue each job's trace (the job's traceparent), when OTEL_EXPORTER_OTLP_ENDPOINT is set.
  await startCliTracing(process.env, (line) => process.stderr.write(`${line}\n`));
  const say = (type: string, data: Record<string, unknown>, line: string) => {
    if (flags.json) process.stdout.write(`${jsonForTerminal({ type, ...data })}\n`);
    else process.stderr.write(`${escapeForTerminal(line)}\n`);
  };
  const sim = new OwnSimulator((url) =>
    say('simulator-started', { url }, `forkpool worker: started its own simulator at ${url} for jobs on a producer's simulator`),
  );
  try {
    await startWorker(flags, config, parsedUrl.data, level, sim, say);
  } catch (error) {
    await sim.close(); // its socket would keep the process alive after the error is printed
    throw error;
  }
  // Runs until a signal: onTermination exits once the worker has closed.
  return new Promise<number>(() => {});
}

type Say = (type: string, data: Record<string, unknown>, line: string) => void;

/**
 * The simulator jobs of a producer with no model (its built-in simulator, on its own loopback)
 * run on here: the README's BullMQ example works on a machine without a key. Started on the
 * first such job, not before: a worker on a real endpoint listens on no port of its own.
 */
class OwnSimulator {
  #server: Promise<SimServer> | undefined;
  readonly #onStart: (url: string) => void;

  constructor(onStart: (url: string) => void) {
    this.#onStart = onStart;
  }

  url(): Promise<string> {
    this.#server ??= startSimServer({ latencyMs: 40, jitterMs: 20, recordBodies: false }).then((server) => {
      this.#onStart(server.url);
      return server;
    });
    // A start that failed is tried again by the next job.
    return this.#server.then(
      (server) => server.url,
      (error: unknown) => {
        this.#server = undefined;
        throw error;
      },
    );
  }

  async close(): Promise<void> {
    const server = await this.#server?.catch(() => undefined);
    await server?.close();
  }
}

/** The worker, started; stops on SIGINT/SIGTERM (onTermination). */
async function startWorker(flags: WorkerFlags, config: ForkpoolConfig, redisUrl: string, level: LogLevel, sim: OwnSimulator, say: Say): Promise<void> {
  const policy = new WorkerPolicy(config, { simulatorOnDemand: true });
  const logger = createLogger({ level, secrets: [...policy.secrets, redisUrl] });
  if (policy.endpoints.length === 0) {
    process.stderr.write(
      `forkpool: warning: no model endpoint configured (baseUrl, OPENAI_BASE_URL, OPENAI_API_KEY, an agent's baseUrl or bullmq.allowedBaseUrls): only jobs on a forkpool simulator run (on this worker's own, started at the first such job); every other job fails with ENDPOINT_NOT_ALLOWED\n`,
    );
  }
  const concurrency = flags.concurrency ?? config.background.maxConcurrent;
  const worker = new ForkpoolWorker({
    redisUrl,
    queue: flags.queue ?? config.bullmq.queue,
    concurrency,
    heapMb: config.background.heapMb,
    lockMs: flags.lockMs ?? config.bullmq.lockMs,
    maxStalls: flags.maxStalls ?? config.bullmq.maxStalls,
    closeTimeoutMs: config.bullmq.closeTimeoutMs,
    config,
    simulator: () => sim.url(),
    logger,
    onRunEnded: (report) => {
      if (flags.json) process.stdout.write(`${jsonForTerminal({ type: 'run-ended', ...report })}\n`);
      else logger.info(report, 'run ended');
    },
  });
  onTermination(async (signal) => {
    await worker.close();
    await sim.close();
    say('worker-closed', { signal }, `forkpool worker: closed (${signal})`);
  });
  await worker.start();
  say(
    'worker-ready',
    { name: worker.name, queue: flags.queue ?? config.bullmq.queue, concurrency, pid: process.pid, endpoints: policy.endpoints },
    `forkpool worker ${worker.name}: taking jobs of queue "${flags.queue ?? config.bullmq.queue}", ${concurrency} at a time`,
  );
}
