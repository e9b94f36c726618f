import { createHash } from 'node:crypto';
import path from 'node:path';
import { availableParallelism } from 'node:os';
import type { Logger } from 'pino';
import type { ForkpoolConfig } from '../../shared/config.js';
import type { Executor, ExecutorKind } from '../executors/executor.js';
import { PiscinaExecutor } from '../executors/piscina-executor.js';
import { InlineExecutor, WorkerPerJobExecutor } from '../executors/other-executors.js';
import { LazyExecutor } from '../executors/lazy-executor.js';
import { loadOptional } from '../executors/optional-package.js';
import { ConfigError } from '../../shared/errors.js';
import { workerHeapMb } from '../../shared/defaults.js';

/**
 * Threads for a config: in `thread` isolation one per concurrent job; in `shared`, enough
 * threads of `tasksPerThread` jobs each, but no more than the machine has cores.
 */
export function threadsFor(background: ForkpoolConfig['background']): number {
  if (background.threads > 0) return background.threads;
  if (background.isolation === 'thread') return background.maxConcurrent;
  return Math.max(1, Math.min(availableParallelism(), Math.ceil(background.maxConcurrent / background.tasksPerThread)));
}

/**
 * `ledgerScope`: the durable ledger scope of the manager that will use it. The BullMQ executor
 * then names its jobs after the ledger file and scope, so a process restarted on the same
 * ledger takes over the runs (and waiting results) of the one before it.
 */
export function createExecutor(config: ForkpoolConfig, logger?: Logger, kind: ExecutorKind = 'piscina', workerFile?: string, ledgerScope?: string): Executor {
  const bg = config.background;
  const threads = threadsFor(bg);
  const file = workerFile === undefined ? {} : { workerFile };
  switch (kind) {
    case 'inline':
      return new InlineExecutor();
    // tinypool and BullMQ (optional peers) load on the first job, not with forkpool.
    case 'tinypool':
      return new LazyExecutor('tinypool', { isolation: 'thread', hardStop: true, exclusive: true }, async () => {
        const { TinypoolExecutor } = await loadOptional('the "tinypool" executor', ['tinypool'], () => import('../executors/tinypool-executor.js'));
        return new TinypoolExecutor({ threads, heapMb: workerHeapMb({ ...bg, isolation: 'thread' }), ...file });
      });
    case 'worker-per-job':
      return new WorkerPerJobExecutor({ heapMb: workerHeapMb({ ...bg, isolation: 'thread' }), ...file });
    case 'bullmq':
      // parseConfig already insists on redisUrl with this executor.
      if (config.redisUrl === undefined)
        throw new ConfigError([{ field: 'redisUrl', expected: 'a redis:// URL (required by executor "bullmq")', received: 'nothing' }]);
      {
        const options = {
          redisUrl: config.redisUrl,
          bullmq: { ...config.bullmq, namespace: bullmqNamespace(config, ledgerScope) },
          ...(logger ? { logger } : {}),
        };
        return new LazyExecutor('bullmq', { isolation: 'thread', hardStop: true, exclusive: false, reruns: true, remote: true, steering: true }, async () => {
          const { BullmqExecutor } = await loadOptional('the "bullmq" executor', ['bullmq', 'ioredis'], () => import('../bullmq/executor.js'));
          return new BullmqExecutor(options);
        });
      }
    case 'piscina': {
      // Enough room per thread that the cap, not Piscina's own queue, decides what runs.
      const tasksPerThread = bg.isolation === 'shared' ? Math.max(bg.tasksPerThread, Math.ceil(bg.maxConcurrent / threads)) : 1;
      return new PiscinaExecutor({
        isolation: bg.isolation,
        threads,
        tasksPerThread,
        heapMb: bg.heapMb,
        youngHeapMb: bg.youngHeapMb,
        niceIncrement: bg.niceIncrement,
        ...file,
        ...(logger ? { logger } : {}),
      });
    }
    default:
      throw new ConfigError([
        { field: 'executor', expected: 'piscina, tinypool, worker-per-job, inline or bullmq (or pass an Executor object)', received: JSON.stringify(kind) },
      ]);
  }
}

/** `bullmq.namespace`, else one derived from the durable ledger (file and scope), else none (random). */
function bullmqNamespace(config: ForkpoolConfig, ledgerScope: string | undefined): string | undefined {
  if (config.bullmq.namespace !== undefined) return config.bullmq.namespace;
  if (config.ledger.path === undefined || ledgerScope === undefined) return undefined;
  return `l${createHash('sha256')
    .update(`${path.resolve(config.ledger.path)}\0${ledgerScope}`)
    .digest('hex')
    .slice(0, 16)}`;
}
