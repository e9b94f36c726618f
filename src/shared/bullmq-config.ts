/**
 * The `bullmq` section of the config and the top-level `redisUrl`: where jobs go when
 * `executor` is "bullmq" (see docs/scale-out.md "BullMQ"). Pure: imported by the
 * config schema, which both threads load.
 */
import { z } from 'zod';
import { modelUrlSchema } from './model-url.js';

export const BULLMQ_DEFAULTS = {
  queue: 'forkpool',
  // A killed worker's jobs run again within lockMs + lockMs / 2 (about 9 s): the README's promise.
  lockMs: 6_000,
  maxStalls: 2,
  attempts: 3,
  globalConcurrency: 0,
  closeTimeoutMs: 10_000,
  pollMs: 2_000,
  noWorkerWarnMs: 30_000,
} as const;

/** A `redis://` or `rediss://` URL. */
export const redisUrlSchema = z.url({ protocol: /^rediss?$/ });

export const bullmqSchema = z.strictObject({
  /** The BullMQ queue name; every main process and worker of one cluster uses the same. */
  queue: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,64}$/, 'a queue name: letters, digits, "_" or "-" (at most 64)')
    .default(BULLMQ_DEFAULTS.queue),
  /**
   * A worker holds a job's lock this long and renews it at half of it. A worker that dies (or
   * whose event loop stalls past it) loses the job: the stalled-job check, every half lock,
   * re-queues it, so another worker re-runs it within about 1.5 lock periods (9 s by default).
   */
  lockMs: z.number().int().min(1_000).max(600_000).default(BULLMQ_DEFAULTS.lockMs),
  /** A job whose worker died this many times (it stalled) is failed with that reason, not re-run again. */
  maxStalls: z.number().int().min(0).max(100).default(BULLMQ_DEFAULTS.maxStalls),
  /**
   * Tries of a job whose worker failed to run it (its pool closed under it). A job that ran and
   * ended (even failed or cancelled) is never retried.
   */
  attempts: z.number().int().min(1).max(100).default(BULLMQ_DEFAULTS.attempts),
  /** Jobs running at once across every worker of the queue (BullMQ global concurrency); 0: no cluster cap. */
  globalConcurrency: z.number().int().min(0).max(100_000).default(BULLMQ_DEFAULTS.globalConcurrency),
  /** A worker's close() gives up waiting after this long; the executor's, after this long without progress. */
  closeTimeoutMs: z.number().int().min(0).max(600_000).default(BULLMQ_DEFAULTS.closeTimeoutMs),
  /**
   * Names this main process's jobs in the queue (BullMQ job ids are `<namespace>.<job id>.<launch>`).
   * Unset: a random one per executor, so two processes' `bg-1` never meet. A main process that
   * restarts and must take over its previous run's jobs (results waiting, runs still going)
   * sets the same namespace again (with a durable ledger: one per ledger).
   */
  namespace: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,64}$/, 'a namespace: letters, digits, "_" or "-" (at most 64)')
    .optional(),
  /** The main side asks Redis about a job it heard nothing of for this long (missed events, lost jobs). */
  pollMs: z.number().int().min(100).max(600_000).default(BULLMQ_DEFAULTS.pollMs),
  /**
   * Main side: with jobs out and no worker connected to the queue for this long, say so (a
   * warning on stderr, and `/healthz` shows `executor.ok: false`) instead of waiting without a word.
   */
  noWorkerWarnMs: z.number().int().min(0).max(3_600_000).default(BULLMQ_DEFAULTS.noWorkerWarnMs),
  /**
   * Worker side: model endpoints a queued job may name besides this worker's own `baseUrl` and
   * its agents' (see src/bullmq/worker-policy.ts). No key is ever sent to them. Default none.
   */
  allowedBaseUrls: z.array(modelUrlSchema).default([]),
});

export type BullmqConfig = z.output<typeof bullmqSchema>;
