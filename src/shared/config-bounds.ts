/**
 * The fixed bounds the configuration's schema checks against (config-schema.ts, agent-schema.ts):
 * what a Node timer can hold, and caps past which a value is a unit mistake, not a plan. Apart
 * from the schema so that modules the schema imports (budget.ts, scheduling-config.ts) can use
 * them too.
 */
import { z } from 'zod';

/**
 * Node's timers hold a signed 32-bit millisecond count: a longer delay fires after 1 ms
 * (with a `TimeoutOverflowWarning`), so every timeout in the schema is bounded by this.
 */
export const MAX_TIMER_MS = 2_147_483_647;
/** The longest job timeout in minutes whose milliseconds still fit a timer (≈ 24.8 days). */
export const MAX_TIMEOUT_MINUTES = Math.floor(MAX_TIMER_MS / 60_000);
/**
 * Worker heap cap bound: 64 GiB. A per-thread heap above it is a unit mistake (bytes or KiB
 * for MiB), not a plan; a fixed bound keeps a config valid on every machine it moves to.
 */
export const MAX_HEAP_MB = 65_536;
/** The smallest heap cap a worker thread can start with, MiB. */
export const MIN_HEAP_MB = 16;
/** Young-generation cap bound: 1 GiB. Like MAX_HEAP_MB, anything above is a unit mistake. */
export const MAX_YOUNG_HEAP_MB = 1_024;
/** Nesting bound: deeper delegation is a runaway, not a plan. */
export const MAX_DEPTH = 5;

/**
 * The longest tool output in characters (about 250,000 tokens, more than any model's context):
 * a larger cap is a unit mistake, and every tool result is held whole in memory before capping.
 */
export const MAX_OUTPUT_CHARS = 1_000_000;

/** A millisecond timeout: a whole number that a Node timer can hold. */
export const timerMs = (min: number) => z.number().int().min(min).max(MAX_TIMER_MS);
