/**
 * Seeds for the property tests (fast-check). A property's budget of runs is split over:
 *
 * - {@link PINNED_SEEDS}: the same seeds every run, so CI draws the same schedules each time and a
 *   red CI run is red again on a laptop;
 * - one fresh seed drawn now (its value in the test's name), so every run also explores new
 *   schedules. On failure the error says the seed, fast-check's shrunk counterexample and its
 *   path, and the command that replays it.
 *
 * `FORKPOOL_PROPERTY_SEED=<seed>` runs only that seed (the whole budget), to replay a failure:
 *   FORKPOOL_PROPERTY_SEED=123 npx vitest run test/property
 * and with `FORKPOOL_PROPERTY_PATH=<path>` (from the report) only its shrunk counterexample.
 * `FORKPOOL_PROPERTY_RUNS=<n>` scales each property's budget (see the test files).
 *
 * Not re-exported from index.ts: it loads fast-check, which only the property tests need.
 */
import fc from 'fast-check';
import { expect } from 'vitest';

/** Fixed seeds (any 32-bit integers; changing them changes what CI draws). */
export const PINNED_SEEDS: readonly number[] = [0x5eed_0001, 0x5eed_0002, 0x5eed_0003, 0x5eed_0004];

/** One `fc.assert` of a property: a seed, how many schedules, a label for the test name. */
export interface PropertyRun {
  label: string;
  seed: number;
  numRuns: number;
  /** Replay only this counterexample (`FORKPOOL_PROPERTY_PATH`). */
  path?: string;
}

function envSeed(): number | undefined {
  const raw = process.env.FORKPOOL_PROPERTY_SEED;
  if (raw === undefined || raw === '') return undefined;
  const seed = Number(raw);
  if (!Number.isSafeInteger(seed)) throw new Error(`FORKPOOL_PROPERTY_SEED must be an integer (a seed from a failure report), not ${JSON.stringify(raw)}`);
  return seed;
}

/**
 * The runs of a property with `budget` schedules in all: a fifth (at least one) on a fresh
 * seed, the rest split over the pinned seeds (at least one each). The total stays `budget`
 * (for a budget of at least five). Under FORKPOOL_PROPERTY_SEED, one run of that seed instead.
 */
export function propertyRuns(budget: number): PropertyRun[] {
  const replay = envSeed();
  if (replay !== undefined) {
    const path = process.env.FORKPOOL_PROPERTY_PATH;
    return [{ label: `seed ${replay} from FORKPOOL_PROPERTY_SEED${path ? `, path ${path}` : ''}`, seed: replay, numRuns: budget, ...(path ? { path } : {}) }];
  }
  const fresh = Math.max(1, Math.round(budget / 5));
  const pinned = Math.max(PINNED_SEEDS.length, budget - fresh);
  const runs = PINNED_SEEDS.map((seed, i) => ({
    label: `pinned seed ${seed}`,
    seed,
    numRuns: Math.floor(pinned / PINNED_SEEDS.length) + (i < pinned % PINNED_SEEDS.length ? 1 : 0),
  }));
  // Math.random, not a clock: two files starting in the same millisecond still differ.
  const seed = Math.floor(Math.random() * 0x7fff_ffff);
  return [...runs, { label: `fresh seed ${seed}`, seed, numRuns: fresh }];
}

/**
 * `fc.assert` with the run's seed and count. On failure, rethrows fast-check's report (seed,
 * path, shrunk counterexample, the property's own error) with the command that replays it.
 */
export async function assertProperty<T>(property: fc.IAsyncProperty<T>, run: PropertyRun): Promise<void> {
  try {
    await fc.assert(property, { seed: run.seed, numRuns: run.numRuns, ...(run.path !== undefined ? { path: run.path, endOnFailure: true } : {}) });
  } catch (error) {
    const file = expect.getState().testPath?.replace(`${process.cwd()}/`, '') ?? 'test/property';
    const path = /path: "([^"]*)"/.exec(error instanceof Error ? error.message : '')?.[1];
    const replay = [
      `Re-run this seed:           FORKPOOL_PROPERTY_SEED=${run.seed} npx vitest run ${file}`,
      ...(path ? [`Replay the shrunk case:     FORKPOOL_PROPERTY_SEED=${run.seed} FORKPOOL_PROPERTY_PATH=${path} npx vitest run ${file}`] : []),
    ].join('\n');
    if (error instanceof Error) {
      error.message = `${error.message}\n\n${replay}`;
      throw error;
    }
    throw new Error(`${String(error)}\n\n${replay}`, { cause: error });
  }
}
