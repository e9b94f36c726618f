import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BackgroundManager, type ManagerEvents } from '../../src/main/manager.js';
import { parseConfig } from '../../src/shared/config.js';
import { FakeExecutor, ManualScheduler } from '../helpers/fake-executor.js';

/**
 * Random schedules of spawn, cancel, job start/success/failure, worker crash, timers
 * (timeouts and cancel grace), turn boundaries and close, against the real manager and
 * ledger with a fake executor that speaks the real port protocol.
 */
type Action =
  | { kind: 'spawn'; user: boolean }
  | { kind: 'cancel' | 'start' | 'succeed' | 'fail' | 'crash' | 'honour' | 'timer'; pick: number }
  | { kind: 'cancel-unknown' }
  | { kind: 'turn' };

const action: fc.Arbitrary<Action> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('spawn' as const), user: fc.boolean() }) },
  {
    weight: 10,
    arbitrary: fc.record({
      kind: fc.constantFrom('cancel' as const, 'start' as const, 'succeed' as const, 'fail' as const, 'crash' as const, 'honour' as const, 'timer' as const),
      pick: fc.nat(50),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'cancel-unknown' as const }) },
  { weight: 2, arbitrary: fc.constant({ kind: 'turn' as const }) },
);

const scenario = fc.record({
  isolation: fc.constantFrom('thread' as const, 'shared' as const),
  cap: fc.integer({ min: 1, max: 4 }),
  actions: fc.array(action, { minLength: 1, maxLength: 40 }),
});

/** Resolves when `event` fires for `jobId`; registered before the action that causes it. */
function nextEvent(manager: BackgroundManager, kinds: Array<'started' | 'done' | 'requeued'>, jobId: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const offs: Array<() => void> = [];
    const timer = setTimeout(() => {
      offs.forEach((off) => off());
      reject(new Error(`no ${kinds.join('/')} event for ${jobId}`));
    }, 2_000);
    for (const kind of kinds) {
      offs.push(
        manager.on(kind, ((record: { id: string }) => {
          if (record.id !== jobId) return;
          clearTimeout(timer);
          offs.forEach((off) => off());
          resolve();
        }) as (...args: ManagerEvents[typeof kind]) => void),
      );
    }
  });
}

async function runScenario({ isolation, cap, actions }: { isolation: 'thread' | 'shared'; cap: number; actions: Action[] }): Promise<void> {
  const config = parseConfig({ workspaceRoot: process.cwd(), background: { maxConcurrent: cap, maxRequeues: 1, closeTimeoutMs: 500 } });
  const executor = new FakeExecutor(isolation);
  const scheduler = new ManualScheduler();
  const manager = new BackgroundManager({ config, executor, scheduler });
  const doneCount = new Map<string, number>();
  const delivered = new Set<string>();
  const spawned: string[] = [];
  let turn = 0;

  scheduler.onSet = (tag) => {
    // No timeout counts queue time: a job's clock is only set once it has started.
    if (tag.kind === 'timeout') expect(manager.get(tag.jobId)?.state).toBe('running');
  };
  manager.on('done', (job) => doneCount.set(job.id, (doneCount.get(job.id) ?? 0) + 1));

  const checkCap = () => {
    expect(executor.inFlight).toBeLessThanOrEqual(cap);
    expect(manager.count('running')).toBeLessThanOrEqual(cap);
  };

  for (const step of actions) {
    const active = executor.active();
    const pickTask = (pick: number) => active[pick % Math.max(1, active.length)];
    switch (step.kind) {
      case 'spawn': {
        const handle = manager.spawn({ task: `task ${spawned.length}`, label: `job ${spawned.length}`, role: step.user ? 'user' : 'primary', wave: step.user ? null : turn + 1 });
        spawned.push(handle.id);
        break;
      }
      case 'cancel': {
        if (spawned.length === 0) break;
        const id = spawned[step.pick % spawned.length] as string;
        const before = manager.get(id)?.state;
        const handle = manager.cancel(id);
        if (before === 'ended') expect(handle.state).toBe('ended');
        break;
      }
      case 'cancel-unknown':
        expect(() => manager.cancel('bg-does-not-exist')).toThrow(expect.objectContaining({ code: 'JOB_UNKNOWN' }));
        break;
      case 'start': {
        const t = pickTask(step.pick);
        if (!t || t.started) break;
        const seen = nextEvent(manager, ['started'], t.task.spec.id);
        executor.start(t.task.spec.id);
        await seen;
        break;
      }
      case 'succeed':
      case 'fail':
      case 'honour': {
        const t = pickTask(step.pick);
        if (!t) break;
        const id = t.task.spec.id;
        const seen = nextEvent(manager, ['done'], id);
        if (step.kind === 'succeed') executor.succeed(id);
        else if (step.kind === 'fail') executor.fail(id);
        else executor.honourCancel(id);
        await seen;
        break;
      }
      case 'crash': {
        const t = pickTask(step.pick);
        if (!t) break;
        const seen = nextEvent(manager, ['done', 'requeued'], t.task.spec.id);
        executor.crash(t.task.spec.id);
        await seen;
        break;
      }
      case 'timer': {
        const ids = [...scheduler.pending.keys()];
        if (ids.length === 0) break;
        const timerId = ids[step.pick % ids.length] as number;
        const tag = scheduler.pending.get(timerId)?.tag;
        const live = tag ? executor.tasks.get(tag.jobId) : undefined;
        const hard = tag?.kind === 'cancel-grace' && live && !live.settled;
        const seen = hard && tag ? nextEvent(manager, ['done', 'requeued'], tag.jobId) : undefined;
        scheduler.fire(timerId);
        await seen;
        break;
      }
      case 'turn': {
        turn++;
        const batch = manager.drain(turn);
        for (const job of batch) {
          expect(delivered.has(job.id)).toBe(false);
          expect(job.deliveredInTurn).toBe(turn);
          delivered.add(job.id);
        }
        // Every job that had ended by this turn boundary is now delivered.
        expect(manager.undelivered()).toHaveLength(0);
        break;
      }
    }
    checkCap();
    for (const count of doneCount.values()) expect(count).toBe(1);
  }

  // Close: cancels remain cooperative where the fake honours them; the rest are hard-stopped.
  executor.autoHonourCancel = true;
  for (const t of executor.active()) if (t.cancelRequested) executor.honourCancel(t.task.spec.id);
  await manager.close({ timeoutMs: 200 });
  expect(() => manager.spawn({ task: 'late', label: 'late' })).toThrow(expect.objectContaining({ code: 'MANAGER_CLOSED' }));
  for (const job of manager.drain(turn + 1)) {
    expect(delivered.has(job.id)).toBe(false);
    delivered.add(job.id);
  }
  // Every job ended in exactly one state, and each was delivered exactly once.
  for (const id of spawned) {
    expect(doneCount.get(id)).toBe(1);
    expect(manager.get(id)?.state).toBe('ended');
    expect(delivered.has(id)).toBe(true);
  }
  expect(delivered.size).toBe(spawned.length);
  expect(executor.peakInFlight).toBeLessThanOrEqual(cap);
}

describe('exactly-once delivery under random schedules', () => {
  it('holds for 1,000 schedules against the real manager and ledger', async () => {
    await fc.assert(fc.asyncProperty(scenario, runScenario), { numRuns: 1_000 });
  }, 300_000);
});
