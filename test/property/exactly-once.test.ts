import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BackgroundManager, type CloseReport } from '../../src/main/jobs/manager.js';
import type { JobRecord } from '../../src/main/ledger/ledger.js';
import { parseConfig } from '../../src/shared/config.js';
import { FakeExecutor, ManualScheduler, type EndingScript, type EndingStep, type MidRunMessage } from '../helpers/index.js';
import { assertProperty, propertyRuns } from '../helpers/property.js';
import { Deliveries } from '../../src/main/delivery/deliveries.js';

/**
 * Random schedules against the real manager and ledger, with a fake executor that speaks the
 * real port protocol. The schedule draws everything the manager must cope with: spawns, cancels,
 * starts, what a running task says (progress events, alerts, spawn requests for child jobs one
 * level deeper, up to a drawn max depth), how each task ends (a `done` or, with children, a
 * `suspend`; the order of that message, its port closing, its run settling and its thread
 * dying, with or without a macrotask between them), timers fired by hand (timeouts, cancel
 * grace, the port-close fallback), turn boundaries (drains) and a close at any point.
 *
 * Every invariant is computed from observations the manager does not produce itself: the
 * fake's own log of what it was asked to run and what it posted, the event stream as recorded
 * by listeners (which only record), and the drain outputs accumulated over the whole run.
 */
type Action =
  | { kind: 'spawn'; user: boolean }
  | { kind: 'start' | 'cancel' | 'timer'; pick: number }
  | { kind: 'end'; pick: number; script: EndingScript }
  | { kind: 'say'; pick: number; message: MidRunMessage }
  /** A task ends by `suspend`: it answered with children still running (it spawns one first if it has none). */
  | { kind: 'suspend'; pick: number; script: EndingScript }
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

const endingScriptWith = (firesFallback: fc.Arbitrary<boolean>): fc.Arbitrary<EndingScript> =>
  fc.record({
    postsDone: fc.boolean(),
    outcome: fc.constantFrom('final' as const, 'error' as const, 'aborted' as const, 'suspend' as const),
    run: fc.constantFrom('resolve' as const, 'reject' as const),
    closesPort: fc.boolean(),
    order: fc.constantFrom(...PERMUTATIONS),
    gaps: fc.tuple(fc.boolean(), fc.boolean(), fc.boolean()),
    firesFallback,
  });

const endingScript = endingScriptWith(fc.constant(false));

// Spawns most: a child is more schedule (its own run, ending, results, its parent's suspend).
// One flat draw, not a nested fc.oneof (which, nested in the action's, leans to its first arm).
const midRunMessage: fc.Arbitrary<MidRunMessage> = fc.constantFrom<MidRunMessage>(
  { kind: 'spawn' },
  { kind: 'spawn' },
  { kind: 'spawn' },
  { kind: 'progress', event: 'model_response' },
  { kind: 'progress', event: 'assistant_text' },
  { kind: 'progress', event: 'tool_call' },
  { kind: 'alert', severity: 'info' },
  { kind: 'alert', severity: 'warning' },
  { kind: 'alert', severity: 'critical' },
);

const actionWith = (endingScript: fc.Arbitrary<EndingScript>): fc.Arbitrary<Action> =>
  fc.oneof(
    { weight: 4, arbitrary: fc.record({ kind: fc.constant('spawn' as const), user: fc.boolean() }) },
    { weight: 4, arbitrary: fc.record({ kind: fc.constantFrom('start' as const, 'cancel' as const, 'timer' as const), pick: fc.nat(50) }) },
    { weight: 5, arbitrary: fc.record({ kind: fc.constant('end' as const), pick: fc.nat(50), script: endingScript }) },
    { weight: 4, arbitrary: fc.record({ kind: fc.constant('say' as const), pick: fc.nat(50), message: midRunMessage }) },
    {
      weight: 2,
      arbitrary: fc.record({
        kind: fc.constant('suspend' as const),
        pick: fc.nat(50),
        script: endingScript.map((script) => ({ ...script, postsDone: true, outcome: 'suspend' as const })),
      }),
    },
    { weight: 1, arbitrary: fc.constant({ kind: 'cancel-unknown' as const }) },
    { weight: 2, arbitrary: fc.constant({ kind: 'turn' as const }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('close' as const), drain: fc.boolean(), timeoutMs: fc.constantFrom(0, 1, 5) }) },
  );

interface Scenario {
  isolation: 'thread' | 'shared';
  cap: number;
  /** background.maxDepth: 1, no task's spawn is accepted; deeper, children may spawn too. */
  maxDepth: number;
  actions: Action[];
  /** How tasks die when the manager hard-stops them, used in turn. */
  hardStops: EndingScript[];
  /** A task may `suspend` after it was asked to stop (its answer crossed the `cancel`). */
  suspendsAfterStop?: boolean;
}

const scenarioWith = (endingScript: fc.Arbitrary<EndingScript>): fc.Arbitrary<Scenario> =>
  fc.record({
    isolation: fc.constantFrom('thread' as const, 'shared' as const),
    cap: fc.integer({ min: 1, max: 4 }),
    maxDepth: fc.integer({ min: 1, max: 3 }),
    actions: fc.array(actionWith(endingScript), { minLength: 1, maxLength: 40 }),
    hardStops: fc.array(endingScript, { minLength: 1, maxLength: 4 }),
    suspendsAfterStop: fc.boolean(),
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
  /** Jobs the test spawned (top level). */
  spawned: string[];
  /** Every job, the test's and the ones tasks spawned, from the `spawned` events. */
  jobs: string[];
  /** Unhandled rejections and uncaught exceptions while it ran. */
  processErrors: unknown[];
  events: Array<{ type: 'spawned' | 'started' | 'done' | 'requeued'; record: JobRecord }>;
  deliveries: Array<{ turn: number; id: string }>;
  timeoutsArmed: Array<{ jobId: string; startedPosted: boolean }>;
  listenerErrors: number;
}

async function runScenario(scenario: Scenario): Promise<void> {
  const seen: Observed = { spawned: [], jobs: [], processErrors: [], events: [], deliveries: [], timeoutsArmed: [], listenerErrors: 0 };
  const onProcessError = (error: unknown) => seen.processErrors.push(error);
  process.on('unhandledRejection', onProcessError);
  process.on('uncaughtException', onProcessError);
  try {
    await runActions(seen, scenario);
  } finally {
    process.off('unhandledRejection', onProcessError);
    process.off('uncaughtException', onProcessError);
  }
}

async function runActions(seen: Observed, { isolation, cap, maxDepth, actions, hardStops, suspendsAfterStop }: Scenario): Promise<void> {
  const config = parseConfig({ workspaceRoot: process.cwd(), background: { maxConcurrent: cap, maxDepth, maxRequeues: MAX_REQUEUES, closeTimeoutMs: 500 } });
  const executor = new FakeExecutor(isolation);
  const scheduler = new ManualScheduler();
  const manager = new BackgroundManager({ config, executor, scheduler });
  executor.suspendsAfterStop = suspendsAfterStop === true;
  let hardStopDraw = 0;
  executor.hardStopEnding = () => ({ ...(hardStops[hardStopDraw++ % hardStops.length] as EndingScript), run: 'reject' });
  // The fake's view at the moment a timeout is armed: had this job's current run posted `started`?
  scheduler.onSet = (tag) => {
    // A run's one deadline: its timeout or, when earlier, its wall-clock budget (Attempt.armDeadline).
    if (tag.kind === 'timeout' || tag.kind === 'budget')
      seen.timeoutsArmed.push({ jobId: tag.jobId, startedPosted: executor.tasks.get(tag.jobId)?.started === true });
  };
  executor.onFallback = (jobId) => {
    for (const id of scheduler.find('port-close', jobId)) scheduler.fire(id);
  };
  for (const type of ['spawned', 'started', 'done', 'requeued'] as const) manager.on(type, (record: JobRecord) => seen.events.push({ type, record }));
  manager.on('spawned', (record) => seen.jobs.push(record.id));

  let turn = 0;
  let closing: Promise<CloseReport> | undefined;
  const drainInto = () => {
    turn++;
    for (const job of new Deliveries(manager).drain(turn)) seen.deliveries.push({ turn, id: job.id });
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
        seen.spawned.push(
          manager.spawn({
            task: `task ${seen.spawned.length}`,
            label: `job ${seen.spawned.length}`,
            role: step.user ? 'user' : 'primary',
            wave: step.user ? null : turn + 1,
          }).id,
        );
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
      case 'say': {
        const t = pickTask(step.pick);
        if (t) executor.say(t.task.spec.id, step.message);
        break;
      }
      case 'suspend': {
        const t = pickTask(step.pick);
        if (!t) break;
        if (t.children.length === 0) {
          // A child first, and its spawn-result back (refused at the depth limit: then it ends by `done`).
          executor.say(t.task.spec.id, { kind: 'spawn' });
          await flush(executor);
        }
        await executor.end(t.task.spec.id, step.script);
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

  // Every job (the test's and their children) ends exactly once (one `done` event); every job
  // the test spawned is delivered exactly once, over all turns; a child never reaches a turn.
  for (const id of seen.jobs) expect(doneCount.get(id), `${id}: done events`).toBe(1);
  for (const id of seen.spawned) expect(deliveredCount.get(id), `${id}: deliveries`).toBe(1);
  expect(doneEvents).toHaveLength(seen.jobs.length);
  expect(seen.deliveries).toHaveLength(seen.spawned.length);

  // A child's result goes to the job that spawned it, and only a child of that job: once to any
  // one run (a `child-results` message while it runs, or its resume's results after it waited),
  // and once over all the runs that answered (posted `done` or `suspend`). A run whose thread died
  // before it answered took what it saw with it: its retry, from the same point, is handed the
  // same results again, or they would be lost. (At most: a parent that ended first gets nothing.)
  const parentOf = new Map(seen.events.filter((e) => e.type === 'spawned').map((e) => [e.record.id, e.record.parentJobId]));
  const answered = new Map<string, string[]>();
  for (const t of executor.all) {
    const parent = t.task.spec.id;
    const inRun = [...t.childResults.flat(), ...(executor.runs[t.run]?.resumedWith ?? [])];
    for (const [child, times] of count(inRun, (c) => c)) {
      expect(parentOf.get(child), `${child} handed to ${parent}`).toBe(parent);
      expect(times, `${child}: results handed to run ${t.run} of its parent ${parent}`).toBe(1);
    }
    if (t.donePosted !== undefined || t.suspendPosted) answered.set(parent, [...(answered.get(parent) ?? []), ...inRun]);
  }
  for (const [parent, children] of answered) {
    for (const [child, times] of count(children, (c) => c)) expect(times, `${child}: results handed to its parent ${parent}'s answering runs`).toBe(1);
  }
  // What a resumed run that died was handed, its next run is handed again (if it runs again).
  for (const [i, r] of executor.runs.entries()) {
    const t = executor.all.find((x) => x.run === i);
    const next = executor.runs.slice(i + 1).find((x) => x.id === r.id);
    if (r.resumedWith && t && t.donePosted === undefined && !t.suspendPosted && next)
      expect(next.resumedWith, `${r.id}: run after a resumed run died`).toEqual(r.resumedWith);
  }
  expect(seen.processErrors, 'unhandled rejections or uncaught exceptions').toEqual([]);

  // The cap, from the fake's own view at each run call and each settle.
  expect(executor.peakOccupied, `slots occupied (samples ${executor.occupancy.join(',')})`).toBeLessThanOrEqual(cap);

  // Nothing runs after close; a job is tried at most 1 + maxRequeues times (each time it
  // resumes after waiting for its children counts afresh), a retry on a thread of its own.
  expect(executor.runs.filter((r) => r.afterClose)).toEqual([]);
  const resumed = new Set(executor.runs.filter((r) => r.resumedWith).map((r) => r.id));
  for (const [id, runs] of count(executor.runs, (r) => r.id)) if (!resumed.has(id)) expect(runs, `${id}: runs`).toBeLessThanOrEqual(1 + MAX_REQUEUES);
  for (const r of executor.runs) expect(r.attempt, `${r.id}: attempt`).toBeLessThanOrEqual(1 + MAX_REQUEUES);
  for (const r of executor.runs) if (r.attempt > 1) expect(r.exclusive, `${r.id} attempt ${r.attempt} exclusive`).toBe(true);

  // A job's timeout is armed only once its worker has said `started`.
  for (const armed of seen.timeoutsArmed) expect(armed.startedPosted, `${armed.jobId}: timeout armed before started`).toBe(true);

  // A result the worker posted is never lost: the job's ending is that result's, and the job
  // is not run again after its result was posted.
  for (const id of seen.jobs) {
    const task = executor.tasks.get(id);
    const record = lastDone.get(id);
    if (task?.donePosted === undefined) continue;
    expect(record?.stopReason, `${id}: posted ${task.donePosted}, ended ${record?.status}/${record?.endedBy} ${record?.error?.code ?? ''}`).toBe(
      task.donePosted,
    );
  }
  const requeued = new Set(seen.events.filter((e) => e.type === 'requeued').map((e) => e.record.id));
  for (const r of executor.runs) if (r.attempt > 1) expect(requeued.has(r.id), `${r.id} ran again without a requeued event`).toBe(true);

  // Every `started` of a job precedes its `done`; nothing follows its `done`.
  for (const id of seen.jobs) {
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
  it.each(propertyRuns(RUNS))(
    'holds for $numRuns schedules against the real manager and ledger ($label)',
    async (run) => {
      await assertProperty(fc.asyncProperty(scenario, runScenario), run);
    },
    300_000,
  );

  // Issue 8 §3: a `done` can still sit in the port when the 2 s port-close fallback fires (a
  // busy main thread); the manager must read the port (receiveMessageOnPort) before deciding the
  // job "ended without a result" (without it the job ends failed, or in shared isolation runs
  // twice: planted, this test fails).
  it.each(propertyRuns(Math.ceil(RUNS / 2)))(
    'holds when the port-close fallback fires while a done is still unread in the port ($label)',
    async (run) => {
      await assertProperty(fc.asyncProperty(scenarioWith(endingScriptWith(fc.boolean())), runScenario), run);
    },
    300_000,
  );
});

/**
 * Found by this property once the fake drew `suspend` (seed 1592590338, budget 100), shrunk to
 * the scenario below: close() stops a running job (its queued child is cancelled, a `cancel` is
 * posted) while the worker has already answered with that child running and posts `suspend`.
 * Before the fix the attempt ended `suspended`, the job was parked and never resumed (it was
 * stopping) nor ended: no `done`, never delivered. Now it ends as a job stopped while waiting.
 * The main property draws such suspends too (FakeExecutor.suspendsAfterStop, drawn).
 */
describe('a suspend that crosses a stop', () => {
  const suspendAtHardStop: EndingScript = {
    postsDone: true,
    outcome: 'suspend',
    run: 'resolve',
    closesPort: false,
    order: ['post-done', 'close-port', 'settle-run'],
    gaps: [false, false, false],
    firesFallback: false,
  };
  it('a job that suspends while close() stops it still ends once, delivered once', async () => {
    await runScenario({
      isolation: 'thread',
      cap: 1,
      maxDepth: 2,
      actions: [
        { kind: 'spawn', user: false },
        { kind: 'say', pick: 0, message: { kind: 'spawn' } },
      ],
      hardStops: [suspendAtHardStop],
      suspendsAfterStop: true,
    });
  });
});

/**
 * Two schedules the property draws seldom (a few suspends in hundreds of schedules), run every
 * time. The first was found by a fresh seed in CI (987222053, shrunk): a resumed run whose
 * thread dies is run again from the same point, so it must be handed its children's results
 * again; the invariant once counted that as a second delivery. Dropping them at the retry (the
 * results lost) fails it, as does handing a resumed run a result its first run already saw.
 */
describe('children results across a suspend', () => {
  const ends = (outcome: EndingScript['outcome'], run: EndingScript['run'] = 'resolve', postsDone = true): EndingScript => ({
    postsDone,
    outcome,
    run,
    closesPort: false,
    order: ['post-done', 'close-port', 'settle-run'],
    gaps: [false, false, false],
    firesFallback: false,
  });
  it('a resumed run whose thread dies is handed the same results on its retry, and ends once', async () => {
    await runScenario({
      isolation: 'shared',
      cap: 1,
      maxDepth: 2,
      actions: [
        { kind: 'spawn', user: false },
        { kind: 'suspend', pick: 0, script: ends('suspend') },
        { kind: 'end', pick: 0, script: ends('final') },
        { kind: 'end', pick: 0, script: ends('final', 'reject', false) },
        // The port-close fallback: the thread died without a word, so it runs again (requeued).
        { kind: 'timer', pick: 0 },
        { kind: 'end', pick: 0, script: ends('final') },
      ],
      hardStops: [ends('aborted')],
    });
  });
  it('a result a job saw while it ran is not handed to it again when it resumes', async () => {
    await runScenario({
      isolation: 'thread',
      cap: 2,
      maxDepth: 2,
      actions: [
        { kind: 'spawn', user: false },
        { kind: 'say', pick: 0, message: { kind: 'spawn' } },
        { kind: 'say', pick: 0, message: { kind: 'spawn' } },
        // bg-1 and bg-2 hold the two slots; bg-2 ends, its result is posted to the running bg-1.
        { kind: 'end', pick: 1, script: ends('final') },
        { kind: 'suspend', pick: 0, script: ends('suspend') },
        { kind: 'end', pick: 0, script: ends('final') },
        { kind: 'end', pick: 0, script: ends('final') },
      ],
      hardStops: [ends('aborted')],
    });
  });
});
