import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BackgroundManager } from '../../src/main/manager.js';
import { createExecutor } from '../../src/main/executor-factory.js';
import { parseConfig } from '../../src/shared/config.js';
import { startSimServer, type SimServer } from '../../src/sim/index.js';

/**
 * The smaller run of the exactly-once property through the real Piscina pool, real worker
 * threads and the simulated model: random spawns, cancels, waits and turn boundaries.
 */
type Step = { kind: 'spawn' } | { kind: 'cancel'; pick: number } | { kind: 'wait'; ms: number } | { kind: 'turn' };

const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 4, arbitrary: fc.constant({ kind: 'spawn' as const }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('cancel' as const), pick: fc.nat(20) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('wait' as const), ms: fc.integer({ min: 0, max: 60 }) }) },
  { weight: 2, arbitrary: fc.constant({ kind: 'turn' as const }) },
);

let sim: SimServer;
beforeAll(async () => {
  sim = await startSimServer({ latencyMs: 15, jitterMs: 15, recordBodies: false });
});
afterAll(async () => {
  await sim.close();
});

describe('exactly-once delivery through the real pool', () => {
  it('holds for random schedules with real worker threads', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({ isolation: fc.constantFrom('thread' as const, 'shared' as const), steps: fc.array(step, { minLength: 1, maxLength: 15 }) }),
        async ({ isolation, steps }) => {
          const config = parseConfig({
            baseUrl: sim.url,
            workspaceRoot: process.cwd(),
            background: { maxConcurrent: 2, isolation, tasksPerThread: 4, cancelGraceMs: 200, closeTimeoutMs: 2_000 },
          });
          const executor = createExecutor(config);
          const manager = new BackgroundManager({ config, executor });
          const spawned: string[] = [];
          const done = new Map<string, number>();
          const delivered = new Set<string>();
          let running = 0;
          let turn = 0;
          manager.on('started', () => {
            running++;
            expect(running).toBeLessThanOrEqual(2);
          });
          manager.on('done', (job) => {
            if (job.startedAt !== undefined) running--;
            done.set(job.id, (done.get(job.id) ?? 0) + 1);
          });
          manager.on('requeued', () => running--);
          try {
            for (const s of steps) {
              if (s.kind === 'spawn') spawned.push(manager.spawn({ task: 'Where is the tool loop implemented?', label: 'loop' }).id);
              else if (s.kind === 'cancel' && spawned.length) manager.cancel(spawned[s.pick % spawned.length] as string);
              else if (s.kind === 'wait') await new Promise((r) => setTimeout(r, s.ms));
              else if (s.kind === 'turn') {
                turn++;
                for (const job of manager.drain(turn)) {
                  expect(delivered.has(job.id)).toBe(false);
                  delivered.add(job.id);
                }
              }
            }
            await manager.onIdle();
          } finally {
            await manager.close();
            // The manager closes only an executor it created; this one is the test's.
            await executor.close();
          }
          for (const job of manager.drain(turn + 1)) {
            expect(delivered.has(job.id)).toBe(false);
            delivered.add(job.id);
          }
          expect(manager.executor.threadCount()).toBe(0);
          for (const id of spawned) {
            expect(done.get(id)).toBe(1);
            expect(delivered.has(id)).toBe(true);
          }
        },
      ),
      { numRuns: 12 },
    );
  }, 240_000);
});
