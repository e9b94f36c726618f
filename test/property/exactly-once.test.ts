import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BackgroundManager, type CloseReport } from '../../src/main/jobs/manager.js';
import type { JobRecord } from '../../src/main/ledger/ledger.js';
import { parseConfig } from '../../src/shared/config.js';
import { FakeExecutor, ManualScheduler, type EndingScript, type EndingStep } from '../helpers/index.js';
import { assertProperty, propertyRuns } from '../helpers/property.js';

/**
 * Random schedules against the real manager and ledger, with a fake executor that speaks the
 * real port protocol. The schedule draws everything the manager must cope with: spawns, cancels,
 * starts, how each task ends (the order of its `done`, its port closing, its run settling and
 * its thread dying, with or without a macrotask between them), timers fired by hand (timeouts,
 * cancel grace, the port-close fallback), turn boundaries (drains) and a close at any point.
 *
 * Every invariant is computed from observations the manager does not produce itself: the
 * fake's own log of what it was asked to run and what it posted, the event stream as recorded
 * by listeners (which only record), and the drain outputs accumulated over the whole run.
 */
type Action =
  | { kind: 'spawn'; user: boolean }
  | { kind: 'start' | 'cancel' | 'timer'; pick: number }
  | { kind: 'end'; pick: number; script: EndingScript }
  | { kind: 'cancel-unknown' }
  | { kind: 'turn' }
  | { kind: 'close'; drain: boolean; timeoutMs: number };

const PERMUTATIONS: ReadonlyArray<readonly EndingStep[]> = [
  ['post-done', 'close-port', 'settle-run'],
  ['post-done', 'settle-run', 'close-port'],
  ['close-port', 'post-done', 'settle-run'],
  ['close-port', 'settle-run', 'post-done'],
  ['settle-run', 'post-done', 'close-port'],
  ['settle-run', 'close-port', 'post-done'],
];

const endingScriptWith = (firesFallback: fc.Arbitrary<boolean>): fc.Arbitrary<EndingScript> => fc.record({
  postsDone: fc.boolean(),
  outcome: fc.constantFrom('final' as const, 'error' as const, 'aborted' as const),
  run: fc.constantFrom('resolve' as const, 'reject' as const),
  closesPort: fc.boolean(),
  order: fc.constantFrom(...PERMUTATIONS),
  gaps: fc.tuple(fc.boolean(), fc.boolean(), fc.boolean()),
  firesFallback,
});

const endingScript = endingScriptWith(fc.constant(false));

const actionWith = (endingScript: fc.Arbitrary<EndingScript>): fc.Arbitrary<Action> => fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('spawn' as const), user: fc.boolean() }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constantFrom('start' as const, 'cancel' as const, 'timer' as const), pick: fc.nat(50) }) },
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('end' as const), pick: fc.nat(50), script: endingScript }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'cancel-unknown' as const }) },
  { weight: 2, arbitrary: fc.constant({ kind: 'turn' as const }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('close' as const), drain: fc.boolean(), timeoutMs: fc.constantFrom(0, 1, 5) }) },
);

interface Scenario {
  isolation: 'thread' | 'shared';
  cap: number;
  actions: Action[];
  /** How tasks die when the manager hard-stops them, used in turn. */
  hardStops: EndingScript[];
}

const scenarioWith = (endingScript: fc.Arbitrary<EndingScript>): fc.Arbitrary<Scenario> =>
  fc.record({
    isolation: fc.constantFrom('thread' as const, 'shared' as const),
    cap: fc.integer({ min: 1, max: 4 }),
    actions: fc.array(actionWith(endingScript), { minLength: 1, maxLength: 40 }),
    hardStops: fc.array(endingScript, { minLength: 1, maxLength: 4 }),
  });

const scenario = scenarioWith(endingScript);

const MAX_REQUEUES = 1;

/** Lets port messages, port closes and promise callbacks run (event-loop turns, not time). */
async function flush(executor: FakeExecutor): Promise<void> {
  await executor.settled();
  for (let i = 0; i < 4; i++) await new Promise<void>((resolve) => setImmediate(resolve));
  await executor.settled();
}

/** The observations of one run; the invariants are checked from these alone. */
interface Observed {
  spawned: string[];
  events: Array<{ type: 'spawned' | 'started' | 'done' | 'requeued'; record: JobRecord }>;
  deliveries: Array<{ turn: number; id: string }>;
  timeoutsArmed: Array<{ jobId: string; startedPosted: boolean }>;
  listenerErrors: number;
}

async function runScenario({ isolation, cap, actions, hardStops }: Scenario): Promise<void> {
  const config = parseConfig({ workspaceRoot: process.cwd(), background: { maxConcurrent: cap, maxRequeues: MAX_REQUEUES, closeTimeoutMs: 500 } });
  const executor = new FakeExecutor(isolation);
  const scheduler = new ManualScheduler();
  const manager = new BackgroundManager({ config, executor, scheduler });
  const seen: Observed = { spawned: [], events: [], deliveries: [], timeoutsArmed: [], listenerErrors: 0 };
  let hardStopDraw = 0;
  executor.hardStopEnding = () => ({ ...(hardStops[hardStopDraw++ % hardStops.length] as EndingScript), run: 'reject' });
  // The fake's view at the moment a timeout is armed: had this job's current run posted `started`?
  scheduler.onSet = (tag) => {
    if (tag.kind === 'timeout') seen.timeoutsArmed.push({ jobId: tag.jobId, startedPosted: executor.tasks.get(tag.jobId)?.started === true });
  };
  executor.onFallback = (jobId) => {
    for (const id of scheduler.find('port-close', jobId)) scheduler.fire(id);
  };
  for (const type of ['spawned', 'started', 'done', 'requeued'] as const) manager.on(type, (record: JobRecord) => seen.events.push({ type, record }));

  let turn = 0;
  let closing: Promise<CloseReport> | undefined;
  const drainInto = () => {
    turn++;
    for (const job of manager.drain(turn)) seen.deliveries.push({ turn, id: job.id });
  };
  const close = (options: { drain?: boolean; timeoutMs?: number }) => {
    executor.closeRequested = true;
    closing = manager.close(options);
  };

  for (const step of actions) {
    const active = executor.active();
    const pickTask = (pick: number) => active[pick % Math.max(1, active.length)];
    switch (step.kind) {
      case 'spawn':
        if (closing) {
          expect(() => manager.spawn({ task: 'late', label: 'late' })).toThrow(expect.objectContaining({ code: 'MANAGER_CLOSED' }));
          break;
        }
        seen.spawned.push(manager.spawn({ task: `task ${seen.spawned.length}`, label: `job ${seen.spawned.length}`, role: step.user ? 'user' : 'primary', wave: step.user ? null : turn + 1 }).id);
        break;
      case 'cancel':
        if (seen.spawned.length > 0) manager.cancel(seen.spawned[step.pick % seen.spawned.length] as string);
        break;
      case 'cancel-unknown':
        expect(() => manager.cancel('bg-does-not-exist')).toThrow(expect.objectContaining({ code: 'JOB_UNKNOWN' }));
        break;
      case 'start': {
        const t = pickTask(step.pick);
        if (t) executor.start(t.task.spec.id);
        break;
      }
      case 'end': {
        const t = pickTask(step.pick);
        if (t) await executor.end(t.task.spec.id, step.script);
        break;
      }
      case 'timer': {
        const ids = [...scheduler.pending.keys()];
        if (ids.length > 0) scheduler.fire(ids[step.pick % ids.length] as number);
        break;
      }
      case 'turn':
        drainInto();
        break;
      case 'close':
        if (!closing) close({ drain: step.drain, timeoutMs: step.timeoutMs });
        break;
    }
    await flush(executor);
  }

  // The end of the schedule: close (if the schedule did not), honour cancels, let it all settle.
  executor.autoHonourCancel = true;
  for (const t of executor.active()) if (t.cancelRequested) void executor.honourCancel(t.task.spec.id);
  if (!closing) close({ timeoutMs: 5 });
  // Timers still pending stand for time passing: fire them until none is left (bounded).
  for (let round = 0; round < 20 && scheduler.pending.size > 0; round++) {
    for (const id of [...scheduler.pending.keys()]) scheduler.fire(id);
    await flush(executor);
  }
  await closing;
  await flush(executor);
  drainInto();
  seen.listenerErrors = manager.listenerErrorCount;

  checkInvariants(seen, executor, cap);
}

function checkInvariants(seen: Observed, executor: FakeExecutor, cap: number): void {
  const count = <T>(items: T[], key: (t: T) => string) => items.reduce((m, t) => m.set(key(t), (m.get(key(t)) ?? 0) + 1), new Map<string, number>());
  const doneEvents = seen.events.filter((e) => e.type === 'done');
  const doneCount = count(doneEvents, (e) => e.record.id);
  const deliveredCount = count(seen.deliveries, (d) => d.id);
  const lastDone = new Map(doneEvents.map((e) => [e.record.id, e.record]));

  // Every spawned job ends exactly once (one `done` event) and is delivered exactly once.
  for (const id of seen.spawned) {
    expect(doneCount.get(id), `${id}: done events`).toBe(1);
    expect(deliveredCount.get(id), `${id}: deliveries`).toBe(1);
  }
  expect(doneEvents).toHaveLength(seen.spawned.length);
  expect(seen.deliveries).toHaveLength(seen.spawned.length);

  // The cap, from the fake's own view at each run call and each settle.
  expect(executor.peakOccupied, `slots occupied (samples ${executor.occupancy.join(',')})`).toBeLessThanOrEqual(cap);

  // Nothing runs after close; a job is tried at most 1 + maxRequeues times, a retry on a thread of its own.
  expect(executor.runs.filter((r) => r.afterClose)).toEqual([]);
  for (const [id, runs] of count(executor.runs, (r) => r.id)) expect(runs, `${id}: runs`).toBeLessThanOrEqual(1 + MAX_REQUEUES);
  for (const r of executor.runs) if (r.attempt > 1) expect(r.exclusive, `${r.id} attempt ${r.attempt} exclusive`).toBe(true);

  // A job's timeout is armed only once its worker has said `started`.
  for (const armed of seen.timeoutsArmed) expect(armed.startedPosted, `${armed.jobId}: timeout armed before started`).toBe(true);

  // A result the worker posted is never lost: the job's ending is that result's, and the job
  // is not run again after its result was posted.
  for (const id of seen.spawned) {
    const task = executor.tasks.get(id);
    const record = lastDone.get(id);
    if (task?.donePosted === undefined) continue;
    expect(record?.stopReason, `${id}: posted ${task.donePosted}, ended ${record?.status}/${record?.endedBy} ${record?.error?.code ?? ''}`).toBe(task.donePosted);
  }
  const requeued = new Set(seen.events.filter((e) => e.type === 'requeued').map((e) => e.record.id));
  for (const r of executor.runs) if (r.attempt > 1) expect(requeued.has(r.id), `${r.id} ran again without a requeued event`).toBe(true);

  // Every `started` of a job precedes its `done`; nothing follows its `done`.
  for (const id of seen.spawned) {
    const mine = seen.events.filter((e) => e.record.id === id).map((e) => e.type);
    expect(mine[0]).toBe('spawned');
    expect(mine.at(-1)).toBe('done');
  }
  expect(seen.listenerErrors).toBe(0);
}

/**
 * Schedules per property, split over pinned seeds and one fresh seed (helpers/property.ts: the
 * same schedules in every CI run, plus new ones; a failure prints its seed and how to replay
 * it); FORKPOOL_PROPERTY_RUNS=1000 for a deep look.
 */
const RUNS = Number(process.env.FORKPOOL_PROPERTY_RUNS ?? 300);

describe('exactly-once delivery under random schedules', () => {
  it.each(propertyRuns(RUNS))('holds for $numRuns schedules against the real manager and ledger ($label)', async (run) => {
    await assertProperty(fc.asyncProperty(scenario, runScenario), run);
  }, 300_000);

  // Issue 8 §3: a `done` can still sit in the port when the 2 s port-close fallback fires (a
  // busy main thread); the manager must read the port (receiveMessageOnPort) before deciding the
  // job "ended without a result" (without it the job ends failed, or in shared isolation runs
  // twice: planted, this test fails).
  it.each(propertyRuns(Math.ceil(RUNS / 2)))('holds when the port-close fallback fires while a done is still unread in the port ($label)', async (run) => {
    await assertProperty(fc.asyncProperty(scenarioWith(endingScriptWith(fc.boolean())), runScenario), run);
  }, 300_000);
});
