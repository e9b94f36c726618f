/**
 * A per-test cleanup list (STYLE habit 12): register a teardown next to the thing it tears down;
 * every registered function runs after each test, newest first, even when the test failed.
 *
 *   const cleanup = useCleanup();            // at the top of a test file (calls afterEach)
 *   const sim = await startSimServer(...);
 *   cleanup.add(() => sim.close());
 */
import { afterEach, type TestContext } from 'vitest';

export type CleanupFn = () => unknown;

export interface Cleanup {
  /** Registers a teardown. */
  add(fn: CleanupFn): void;
  /** Runs (and forgets) every teardown now, newest first; collects errors and throws the first. */
  run(): Promise<void>;
}

/** A cleanup list without hooks; pair it with your own `afterEach(() => list.run())`. */
export function createCleanup(): Cleanup {
  const fns: CleanupFn[] = [];
  return {
    add: (fn) => {
      fns.push(fn);
    },
    run: async () => {
      const errors: unknown[] = [];
      for (const fn of fns.splice(0).reverse()) {
        try {
          await fn();
        } catch (error) {
          errors.push(error);
        }
      }
      // The first failure, after every cleanup has run.
      if (errors.length > 0) throw errors[0];
    },
  };
}

/**
 * A cleanup list of one test, run when that test finishes: for the tests of a concurrent group
 * (`describe.concurrent`), where useCleanup's list, shared by the file, would tear down one
 * test's servers and pools when a neighbour ends. Pass the test's context:
 *
 *   it('…', async (context) => { const cleanup = cleanupOf(context); … });
 */
export function cleanupOf(context: Pick<TestContext, 'onTestFinished'>): Cleanup {
  const list = createCleanup();
  context.onTestFinished(() => list.run());
  return list;
}

/** A cleanup list whose teardowns run after each test of the calling file. */
export function useCleanup(): Cleanup {
  const list = createCleanup();
  afterEach(() => list.run());
  return list;
}

/**
 * The one `waitFor` of the suite: waits until `check()` is truthy, checking every `intervalMs`.
 * For state with no event to listen to (e.g. `sim.requests.length`), never as a delay; to wait
 * for a manager event use `nextEvent` (helpers/pool.ts). Rejects with `what` after `timeoutMs`
 * (a safety net against a hang, generous so a loaded machine never trips it; not a measurement).
 */
export async function waitFor<T>(check: () => T | undefined | null | false, what: string, opts: { timeoutMs?: number; intervalMs?: number } = {}): Promise<T> {
  const timeoutMs = opts.timeoutMs ?? 20_000;
  const intervalMs = opts.intervalMs ?? 10;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
