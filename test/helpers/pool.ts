/**
 * Helpers for the tests that run jobs through the real Piscina pool: a workspace on disk, the
 * simulated model on loopback, configs, the fault fixture executor, a cleanup list, and
 * event-based waiting (never sleeps).
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createExecutor } from '../../src/main/executor-factory.js';
import type { Executor } from '../../src/main/executor.js';
import type { JobRecord } from '../../src/main/ledger.js';
import { BackgroundManager, type ManagerEvents } from '../../src/main/manager.js';
import type { TypedEmitter } from '../../src/main/events.js';
import { parseConfig, type ForkpoolConfig, type ForkpoolConfigInput } from '../../src/shared/config.js';
import { startSimServer, type SimServer, type SimServerOptions } from '../../src/sim/index.js';

export const FAULTY_WORKER = new URL('../fixtures/faulty-worker.mjs', import.meta.url).href;

/** A research task the sim's plausible agent answers from the workspace below. */
export const RESEARCH_TASK = 'Where is the retry backoff implemented? Answer from the files in the workspace.';

/** Runs registered cleanups (last first) after each test. */
export class Cleanups {
  readonly #items: Array<() => Promise<unknown> | unknown> = [];

  add(fn: () => Promise<unknown> | unknown): void {
    this.#items.push(fn);
  }

  async run(): Promise<void> {
    const errors: unknown[] = [];
    for (const fn of this.#items.splice(0).reverse()) {
      try {
        await fn();
      } catch (error) {
        errors.push(error);
      }
    }
    if (errors.length > 0) throw new AggregateError(errors, 'cleanup failed');
  }
}

export async function makeWorkspace(cleanups: Cleanups): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'forkpool-test-'));
  cleanups.add(() => rm(root, { recursive: true, force: true }));
  await mkdir(join(root, 'src'), { recursive: true });
  await writeFile(
    join(root, 'src', 'retry.ts'),
    [
      '// Retry with exponential backoff and jitter.',
      'export function retryBackoff(attempt: number): number {',
      '  return Math.min(8000, 500 * 2 ** attempt);',
      '}',
      '',
    ].join('\n'),
  );
  await writeFile(join(root, 'src', 'cache.ts'), '// An LRU cache with a size limit.\nexport class LruCache {}\n');
  await writeFile(join(root, 'README.md'), '# demo workspace\nThe retry backoff lives in src/retry.ts.\n');
  return root;
}

export async function startSim(cleanups: Cleanups, options: SimServerOptions = {}): Promise<SimServer> {
  // Tests read request bodies (`sim.requests[i].body`): ask the sim to keep them (its default is not to).
  const sim = await startSimServer({ recordBodies: true, ...options });
  cleanups.add(() => sim.close());
  return sim;
}

/** A valid config pointed at the sim, with `background` overrides merged over the defaults. */
export function makeConfig(
  sim: SimServer | undefined,
  workspaceRoot: string,
  background: NonNullable<ForkpoolConfigInput['background']> = {},
  extra: Partial<ForkpoolConfigInput> = {},
): ForkpoolConfig {
  return parseConfig({
    workspaceRoot,
    apiKey: 'test-key',
    ...(sim ? { baseUrl: sim.url } : {}),
    maxRetries: 0,
    ...extra,
    background: { cancelGraceMs: 200, closeTimeoutMs: 5_000, ...background },
  });
}

/** The Piscina executor running the fault fixture (which delegates normal jobs to the real entry). */
export function fixtureExecutor(config: ForkpoolConfig, cleanups: Cleanups): Executor {
  const executor = createExecutor(config, undefined, 'piscina', FAULTY_WORKER);
  cleanups.add(() => executor.close());
  return executor;
}

export function makeManager(config: ForkpoolConfig, cleanups: Cleanups, executor?: Executor): BackgroundManager {
  const manager = new BackgroundManager({ config, closeExecutor: true, ...(executor ? { executor } : {}) });
  cleanups.add(() => manager.close({ timeoutMs: 2_000 }));
  return manager;
}

/** Resolves with the first emitted value that `accept` takes. */
export function waitFor<E extends Record<string, unknown[]>, K extends keyof E & string>(
  emitter: TypedEmitter<E>,
  event: K,
  accept: (...args: E[K]) => boolean = () => true,
): Promise<E[K]> {
  return new Promise((resolve) => {
    const off = emitter.on(event, (...args) => {
      if (!accept(...args)) return;
      off();
      resolve(args);
    });
  });
}

/** Resolves with the record once job `id` has ended (at once if it already has). */
export async function ended(manager: BackgroundManager, id: string): Promise<JobRecord> {
  const now = manager.get(id);
  if (now?.state === 'ended') return now;
  const [record] = await waitFor<ManagerEvents, 'done'>(manager, 'done', (r) => r.id === id);
  return record;
}

/** Resolves once job `id` has started (at once if it is already running or beyond). */
export async function startedJob(manager: BackgroundManager, id: string): Promise<JobRecord> {
  const now = manager.get(id);
  if (now && now.state !== 'queued') return now;
  const [record] = await waitFor<ManagerEvents, 'started'>(manager, 'started', (r) => r.id === id);
  return record;
}

/** Records every manager event in order, for invariant checks after the fact. */
export function recordEvents(manager: BackgroundManager): Array<{ type: keyof ManagerEvents; id?: string }> {
  const log: Array<{ type: keyof ManagerEvents; id?: string }> = [];
  for (const type of ['spawned', 'started', 'done', 'requeued'] as const) {
    manager.on(type, (record: JobRecord) => log.push({ type, id: record.id }));
  }
  manager.on('wave-done', () => log.push({ type: 'wave-done' }));
  manager.on('idle', () => log.push({ type: 'idle' }));
  return log;
}
