import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BackgroundManager } from '../../src/main/jobs/manager.js';
import { parseConfig } from '../../src/shared/config.js';
import { startSimServer, type SimServer } from '../../src/sim/index.js';
import { assertProperty, propertyRuns } from '../helpers/property.js';
import { Deliveries } from '../../src/main/delivery/deliveries.js';

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
  it.each(propertyRuns(12))(
    'holds for random schedules with real worker threads ($label)',
    async (run) => {
      await assertProperty(
        fc.asyncProperty(
          fc.record({ isolation: fc.constantFrom('thread' as const, 'shared' as const), steps: fc.array(step, { minLength: 1, maxLength: 15 }) }),
          async ({ isolation, steps }) => {
            const config = parseConfig({
              baseUrl: sim.url,
              workspaceRoot: process.cwd(),
              background: { maxConcurrent: 2, isolation, tasksPerThread: 4, cancelGraceMs: 200, closeTimeoutMs: 2_000 },
            });
            // The manager creates (and so owns and closes) its executor.
            const manager = new BackgroundManager({ config });
            const spawned: string[] = [];
            // Listeners only record; every check is made in the test body from these records.
            const events: Array<{ type: 'started' | 'done' | 'requeued'; id: string; startedAt: number | undefined }> = [];
            for (const type of ['started', 'done', 'requeued'] as const) manager.on(type, (job) => events.push({ type, id: job.id, startedAt: job.startedAt }));
            const deliveries: string[] = [];
            let turn = 0;
            try {
              for (const s of steps) {
                if (s.kind === 'spawn') spawned.push(manager.spawn({ task: 'Where is the tool loop implemented?', label: 'loop' }).id);
                else if (s.kind === 'cancel' && spawned.length) manager.cancel(spawned[s.pick % spawned.length] as string);
                // Not a synchronisation: a pause of random length varies where the next step lands.
                else if (s.kind === 'wait') await new Promise((r) => setTimeout(r, s.ms));
                else if (s.kind === 'turn') deliveries.push(...new Deliveries(manager).drain(++turn).map((job) => job.id));
              }
              await manager.onIdle();
            } finally {
              await manager.close();
            }
            deliveries.push(...new Deliveries(manager).drain(turn + 1).map((job) => job.id));

            // Concurrency from the event stream: a job holds a slot from its `started` to its `done` or `requeued`.
            const running = new Set<string>();
            let peak = 0;
            for (const e of events) {
              if (e.type === 'started') running.add(e.id);
              else running.delete(e.id);
              peak = Math.max(peak, running.size);
            }
            expect(peak, `running jobs by the event stream: ${JSON.stringify(events)}`).toBeLessThanOrEqual(2);
            expect(manager.executor.threadCount()).toBe(0);
            // Each job: one `done`, one delivery over all drains.
            for (const id of spawned) {
              expect(
                events.filter((e) => e.type === 'done' && e.id === id),
                `${id}: done events`,
              ).toHaveLength(1);
              expect(
                deliveries.filter((d) => d === id),
                `${id}: deliveries`,
              ).toHaveLength(1);
            }
            expect(deliveries).toHaveLength(spawned.length);
            expect(manager.listenerErrorCount).toBe(0);
          },
        ),
        run,
      );
    },
    240_000,
  );
});
