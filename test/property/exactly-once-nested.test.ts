import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BackgroundManager } from '../../src/main/jobs/manager.js';
import { createExecutor } from '../../src/main/jobs/executor-factory.js';
import { inspectTools } from '../../src/main/session/inspect-tools.js';
import { JobActivity } from '../../src/main/session/job-activity.js';
import { parseConfig } from '../../src/shared/config.js';
import type { ToolDefinition } from '../../src/shared/tools/types.js';
import { startSimServer, type SimServer } from '../../src/sim/index.js';
import { assertProperty, propertyRuns } from '../helpers/property.js';
import { Deliveries } from '../../src/main/delivery/deliveries.js';

/**
 * The exactly-once property with nested jobs and checks, through the real pool: random spawns
 * (some delegating two levels down), cancels, checks (a check's reading is a delivery), waits
 * and turn boundaries at cap 2 and depth 3. Every job ends once; every top-level job is
 * delivered once, by a drain or a check, never both; nested jobs never reach the top.
 */
type Step =
  { kind: 'spawn'; nested: boolean } | { kind: 'cancel'; pick: number } | { kind: 'check'; pick: number } | { kind: 'wait'; ms: number } | { kind: 'turn' };

const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('spawn' as const), nested: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('cancel' as const), pick: fc.nat(20) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('check' as const), pick: fc.nat(20) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('wait' as const), ms: fc.integer({ min: 0, max: 80 }) }) },
  { weight: 2, arbitrary: fc.constant({ kind: 'turn' as const }) },
);

const LEAF = 'Where is the tool loop implemented? Answer from the files in the workspace.';
const noContext = { workspaceRoot: '/', limits: {} as never, signal: new AbortController().signal, permissions: { check: async () => false }, env: {} };

let sim: SimServer;
beforeAll(async () => {
  sim = await startSimServer({ latencyMs: 10, jitterMs: 10, recordBodies: false });
});
afterAll(async () => {
  await sim.close();
});

describe('exactly-once delivery with nested jobs and checks', () => {
  it.each(propertyRuns(8))(
    'holds for random schedules at cap 2, depth 3 ($label)',
    async (run) => {
      await assertProperty(
        fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 12 }), async (steps) => {
          const config = parseConfig({
            baseUrl: sim.url,
            workspaceRoot: process.cwd(),
            background: { maxConcurrent: 2, maxDepth: 3, cancelGraceMs: 200, closeTimeoutMs: 3_000, checkCooldownMs: 0 },
          });
          const executor = createExecutor(config);
          const manager = new BackgroundManager({ config, executor });
          const activity = new JobActivity(manager);
          let turn = 0;
          const check = inspectTools({
            manager,
            deliveries: new Deliveries(manager),
            activity,
            currentTurn: () => turn,
            cooldownMs: 0,
            resultMaxChars: 500,
          }).find((t) => t.name === 'check_background_agent') as ToolDefinition;
          const tops: string[] = [];
          const done = new Map<string, number>();
          const deliveredBy = new Map<string, string>();
          let mostRunning = 0;
          manager.on('started', () => (mostRunning = Math.max(mostRunning, manager.count('running'))));
          manager.on('done', (job) => done.set(job.id, (done.get(job.id) ?? 0) + 1));
          const drainTurn = (n: number) => {
            for (const job of new Deliveries(manager).drain(n)) {
              expect(job.parentJobId).toBeUndefined();
              expect(deliveredBy.has(job.id)).toBe(false);
              deliveredBy.set(job.id, 'drain');
            }
          };
          try {
            for (const s of steps) {
              if (s.kind === 'spawn')
                tops.push(manager.spawn({ task: s.nested ? `Delegate: Delegate: ${LEAF}` : LEAF, label: s.nested ? 'nested' : 'flat' }).id);
              else if (s.kind === 'cancel' && tops.length) manager.cancel(tops[s.pick % tops.length] as string);
              else if (s.kind === 'check' && tops.length) {
                const id = tops[s.pick % tops.length] as string;
                const before = manager.get(id);
                await check.run({ job_id: id }, noContext);
                if (before?.state === 'ended' && before.deliveredInTurn === undefined) {
                  expect(deliveredBy.has(id)).toBe(false);
                  deliveredBy.set(id, 'check');
                }
              } else if (s.kind === 'wait') await new Promise((r) => setTimeout(r, s.ms));
              else if (s.kind === 'turn') drainTurn(++turn);
            }
            await manager.onIdle();
          } finally {
            await manager.close();
            await executor.close();
          }
          drainTurn(turn + 1);
          expect(manager.executor.threadCount()).toBe(0);
          expect(mostRunning).toBeLessThanOrEqual(2);
          for (const job of manager.jobs()) {
            expect(done.get(job.id)).toBe(1);
            expect(job.state).toBe('ended');
            expect(job.deliveredInTurn).toBeDefined();
            if (job.parentJobId === undefined) expect(deliveredBy.has(job.id)).toBe(true);
            else expect(deliveredBy.has(job.id)).toBe(false);
          }
          for (const id of tops) expect(manager.get(id)?.parentJobId).toBeUndefined();
        }),
        run,
      );
    },
    300_000,
  );
});
