import { z } from 'zod';
import { DEFAULTS } from './defaults.js';
import { MAX_TIMER_MS } from './config-bounds.js';

/**
 * Config of adaptive concurrency and wave joins (docs/scale-out.md "Adaptive concurrency", docs/delivery.md "Wave joins"),
 * apart from config.ts so the schema there only names them.
 */

export const adaptiveSchema = z
  .strictObject({
    /** Fewest model requests in flight per endpoint. */
    floor: z.number().int().min(1).max(100_000).default(DEFAULTS.background.adaptive.floor),
    /** Most model requests in flight per endpoint. Default: `background.maxConcurrent`. */
    ceiling: z.number().int().min(1).max(100_000).optional(),
    /** Where the limit starts. Default: the floor. */
    initial: z.number().int().min(1).max(100_000).optional(),
    decreaseFactor: z.number().gt(0).lt(1).default(DEFAULTS.background.adaptive.decreaseFactor),
    /** 0 turns the latency signal off; otherwise at least 1.5 (a smaller one mistakes noise for congestion). */
    latencyTolerance: z
      .number()
      .max(1_000)
      .refine((t) => t === 0 || t >= 1.5, 'a number: 0 (off) or at least 1.5')
      .default(DEFAULTS.background.adaptive.latencyTolerance),
  })
  .refine((a) => a.ceiling === undefined || a.ceiling >= a.floor, { message: 'ceiling must be >= floor', path: ['ceiling'] })
  .refine((a) => a.initial === undefined || (a.initial >= a.floor && (a.ceiling === undefined || a.initial <= a.ceiling)), {
    message: 'initial must lie between floor and ceiling',
    path: ['initial'],
  });

export type AdaptiveConfig = z.output<typeof adaptiveSchema>;

/**
 * When a wave's follow-up turn may come before all its jobs have ended: at a deadline after the
 * wave's first spawn, or once `quorum` of its jobs have ended; with both, whichever is first.
 */
export const joinSchema = z
  .strictObject({
    deadlineSeconds: z
      .number()
      .positive()
      .max(MAX_TIMER_MS / 1000),
    quorum: z.number().int().min(1).max(100_000),
  })
  .partial()
  .refine(
    (j) => j.deadlineSeconds !== undefined || j.quorum !== undefined,
    'an object with "deadlineSeconds" (a number of seconds) or "quorum" (a number of jobs)',
  );

export type JoinPolicy = z.output<typeof joinSchema>;
