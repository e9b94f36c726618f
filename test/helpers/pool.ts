/**
 * Helpers for the tests that run jobs through the real Piscina pool: configs, the fault fixture
 * executor, managers and event-based waiting (never sleeps). The workspace and the simulated
 * model are config.ts's makeWorkspace and sim.ts's startSim.
 */
import { afterAll, afterEach, expect } from 'vitest';
import { createExecutor } from '../../src/main/jobs/executor-factory.js';
import type { Executor } from '../../src/main/executors/executor.js';
import type { JobRecord } from '../../src/main/ledger/ledger.js';
import { Deliveries } from '../../src/main/delivery/deliveries.js';
import { BackgroundManager, type JobScheduler, type ManagerEvents } from '../../src/main/jobs/manager.js';
import type { TypedEmitter } from '../../src/shared/typed-emitter.js';
import { parseConfig, type ForkpoolConfig, type ForkpoolConfigInput } from '../../src/shared/config.js';
import type { SimServer } from '../../src/sim/index.js';
import type { Cleanup } from './cleanup.js';

export const FAULTY_WORKER = new URL('../fixtures/faulty-worker.mjs', import.meta.url).href;

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
export function fixtureExecutor(config: ForkpoolConfig, cleanups: Cleanup): Executor {
  const executor = createExecutor(config, undefined, 'piscina', FAULTY_WORKER);
  cleanups.add(() => executor.close());
  return executor;
}

/** Managers of the running test, checked for listener errors after it. */
const watched = new Set<BackgroundManager>();
/**
 * Every manager of this file, checked once more after its last test: in a concurrent group a
 * neighbour's check takes a test's managers before that test has ended.
 */
const watchedInFile = new Set<BackgroundManager>();

function expectNoListenerError(manager: BackgroundManager): void {
  const failures = manager.listenerFailures.map((f) => `${f.event}: ${f.error instanceof Error ? f.error.message : String(f.error)}`);
  expect(manager.listenerErrorCount, `a manager listener threw:\n${failures.join('\n')}`).toBe(0);
}

/**
 * Registers a manager for the shared check after each test: no listener threw. A listener that
 * throws is caught and counted by the manager (`listenerErrorCount`), so an `expect` inside a
 * listener would otherwise pass silently. Tests only record in listeners and assert in the body.
 */
export function watchManager<M extends BackgroundManager>(manager: M): M {
  watched.add(manager);
  watchedInFile.add(manager);
  return manager;
}

// Registered once per test file (vitest re-evaluates this module for each file).
afterEach(() => {
  const managers = [...watched];
  watched.clear();
  for (const manager of managers) expectNoListenerError(manager);
});
afterAll(() => {
  const managers = [...watchedInFile];
  watchedInFile.clear();
  for (const manager of managers) expectNoListenerError(manager);
});

export function makeManager(config: ForkpoolConfig, cleanups: Cleanup, executor?: Executor, scheduler?: JobScheduler): BackgroundManager {
  const manager = watchManager(new BackgroundManager({ config, closeExecutor: true, ...(executor ? { executor } : {}), ...(scheduler ? { scheduler } : {}) }));
  cleanups.add(() => manager.close({ timeoutMs: 2_000 }));
  return manager;
}

/**
 * Resolves with the first emitted value that `accept` takes. Subscribe before the action that
 * causes the event (or use {@link ended} / {@link startedJob}, which check the state first).
 */
export function nextEvent<E extends Record<string, unknown[]>, K extends keyof E & string>(
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
/** The ids a drain of `turn` delivers, sorted: what a turn received, in an order tests can compare. */
export function drainedIds(manager: BackgroundManager, turn: number): string[] {
  return new Deliveries(manager)
    .drain(turn)
    .map((r) => r.id)
    .sort();
}

export async function ended(manager: BackgroundManager, id: string): Promise<JobRecord> {
  const now = manager.get(id);
  if (now?.state === 'ended') return now;
  const [record] = await nextEvent<ManagerEvents, 'done'>(manager, 'done', (r) => r.id === id);
  return record;
}

/** Resolves once job `id` has started (at once if it is already running or beyond). */
export async function startedJob(manager: BackgroundManager, id: string): Promise<JobRecord> {
  const now = manager.get(id);
  if (now && now.state !== 'queued') return now;
  const [record] = await nextEvent<ManagerEvents, 'started'>(manager, 'started', (r) => r.id === id);
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
