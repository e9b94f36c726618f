/**
 * A child's result handed to a parent job whose run then ends without reading it, through the
 * real pool and worker threads on the sim (docs/delivery.md "A child's result while its parent
 * has no run"). The window: the parent's run is in its last batch of calls (held there by a host
 * tool the test opens), its child ends and the main thread posts the result to the parent's
 * attempt; the batch then ends asleep (`schedule_next_turn`), paused for an approval, or the
 * parent is restarted. The worker buffered the result but made no model call after it: the
 * main thread must hold it for the next run (on the wait record), which reads it exactly once.
 * The order is fixed by the gate, not raced: the gate opens only once the child has ended.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { BackgroundManager, type ManagerEvents } from '../../../src/main/jobs/manager.js';
import { Deliveries } from '../../../src/main/delivery/deliveries.js';
import type { JobRecord } from '../../../src/main/ledger/ledger.js';
import { tool, type ToolDefinition } from '../../../src/shared/tool-contract.js';
import type { ScriptStep } from '../../../src/sim/types.js';
import type { ForkpoolConfigInput } from '../../../src/shared/config.js';
import { ended, makeConfig, makeWorkspace, messagesOf, nextEvent, startSim, useCleanup, watchManager } from '../../helpers/index.js';
import { ManualScheduler } from '../../helpers/fake-executor.js';

const cleanups = useCleanup();
const ANSWER = 'The retry backoff is in src/net/retry.ts (answer 4242).';
const spawnCall = { name: 'spawn_background_agent', arguments: { task: 'Find where the retry backoff is.', label: 'finder' } };
const gateCall = { name: 'hold_here', arguments: {} };

/** A host tool that answers only once the test opens it (or its call is aborted): the parent's batch waits in it. */
function gateTool(): { gate: ToolDefinition; open: () => void; called: Promise<void> } {
  let open!: () => void;
  let called!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  const calledPromise = new Promise<void>((resolve) => (called = resolve));
  const gate = tool({
    name: 'hold_here',
    description: 'Waits until the test says so.',
    parameters: z.object({}),
    // Longer than any child takes on a busy machine: the test opens it, or the job's stop aborts it.
    timeoutMs: 300_000,
    run: async (_args, ctx) => {
      called();
      // An aborted call's answer is the stop's, whatever this returns.
      await new Promise<void>((resolve) => {
        void opened.then(resolve);
        ctx.signal.addEventListener('abort', () => resolve(), { once: true });
      });
      return 'the gate is open';
    },
  });
  return { gate, open, called: calledPromise };
}

async function setUp(script: ScriptStep[], gate: ToolDefinition, tools: string[], extra: Partial<ForkpoolConfigInput> = {}, maxConcurrent = 2) {
  const root = await makeWorkspace(cleanups);
  const sim = await startSim(cleanups, { script, recordBodies: true });
  // Only the sleep's wake is in the test's hand.
  const scheduler = new ManualScheduler(['timeout', 'cancel-grace', 'port-close', 'budget', 'wave-deadline', 'approval']);
  const config = makeConfig(sim, root, { maxConcurrent, maxDepth: 2, maxAlertsPerJob: 0 }, { tools: ['read_file', 'hold_here', ...tools], ...extra });
  const manager = watchManager(new BackgroundManager({ config, tools: [gate], scheduler }));
  cleanups.add(() => manager.close({ timeoutMs: 2_000 }));
  return { sim, manager, scheduler };
}

/** How many user messages of request `n` (0-based) carry the child's answer. */
function answerCount(sim: { requests: unknown[] }, n: number): number {
  const request = sim.requests[n] as Parameters<typeof messagesOf>[0];
  return messagesOf(request).filter((m) => m.role === 'user' && String(m.content).includes('answer 4242')).length;
}

/** The parent's child (spawned in its first batch), once it has ended ok: its result was posted to the parent's run. */
async function childEnded(manager: BackgroundManager, parentId: string, gateCalled: Promise<void>): Promise<JobRecord> {
  await gateCalled;
  const child = manager.jobs().find((r) => r.parentJobId === parentId) as JobRecord;
  expect(child).toBeDefined();
  const record = await ended(manager, child.id);
  expect(record.status).toBe('ok');
  return record;
}

/** Handed to its parent, not to the session: the session gets the parent only, once. */
function expectOnlyParentDelivered(manager: BackgroundManager, parentId: string, childId: string): void {
  expect(manager.get(childId)?.deliveredInTurn).toBeDefined();
  const deliveries = new Deliveries(manager);
  expect(deliveries.drain(1).map((r) => r.id)).toEqual([parentId]);
  expect(deliveries.drain(2)).toEqual([]);
}

describe("a child's result handed to a run that ends without reading it", () => {
  it('the run ends asleep after its batch: the result is held on its sleepWait, and the woken run reads it once', async () => {
    const { gate, open, called } = gateTool();
    const script: ScriptStep[] = [
      { toolCalls: [spawnCall, gateCall, { name: 'schedule_next_turn', arguments: { after: '1h', reason: 'read the finder result' } }] },
      { content: ANSWER },
      { content: 'Supervisor: the finder says src/net/retry.ts.' },
    ];
    const { sim, manager, scheduler } = await setUp(script, gate, []);
    const { id } = manager.spawn({ task: 'Supervise: delegate the search, then sleep.', label: 'supervisor', scheduler: 'sleep' });
    const child = await childEnded(manager, id, called);
    // Posted to the parent's run, which has not read it (its batch is still in the gate).
    const asleep = nextEvent<ManagerEvents, 'sleeping'>(manager, 'sleeping', (r) => r.id === id);
    open();
    await asleep;

    expect(manager.get(id)).toMatchObject({ state: 'running', sleepWait: { childResults: [expect.stringContaining('answer 4242')] } });
    expect(sim.requests).toHaveLength(2);
    scheduler.fire(scheduler.find('sleep', id)[0] as number);
    const record = await ended(manager, id);
    expect(record).toMatchObject({ status: 'ok', children: [child.id] });
    expect(answerCount(sim, 2)).toBe(1);
    // After the wake message, as a result that came while it slept.
    const last = messagesOf(sim.requests[2] as Parameters<typeof messagesOf>[0]).at(-1);
    expect(String(last?.content)).toMatch(/the turn you scheduled has come[\s\S]*answer 4242/);
    expectOnlyParentDelivered(manager, id, child.id);
    sim.assertScriptDone();
  });

  it('the run ends paused for an approval after its batch: the result is held on its approvalWait, and the next model call reads it once', async () => {
    const { gate, open, called } = gateTool();
    const script: ScriptStep[] = [
      { toolCalls: [spawnCall, gateCall, { id: 'gated', name: 'bash', arguments: { command: 'echo approved-ran' } }] },
      { content: ANSWER },
      { content: 'Done: the finder says src/net/retry.ts.' },
    ];
    const { sim, manager } = await setUp(script, gate, ['bash'], { approvals: 'ask', sandbox: 'none' });
    const asked = nextEvent<ManagerEvents, 'approval-requested'>(manager, 'approval-requested');
    const { id } = manager.spawn({ task: 'Delegate the search and run the check.', label: 'parent' });
    const child = await childEnded(manager, id, called);
    open();
    await asked;
    expect(manager.get(id)).toMatchObject({ state: 'running', approvalWait: { childResults: [expect.stringContaining('answer 4242')] } });

    manager.approve(id, 'gated', { decision: 'allow' });
    const record = await ended(manager, id);
    expect(record).toMatchObject({ status: 'ok', children: [child.id] });
    const messages = messagesOf(sim.requests[2] as Parameters<typeof messagesOf>[0]);
    expect(messages.some((m) => m.role === 'tool' && String(m.content).includes('approved-ran'))).toBe(true);
    expect(answerCount(sim, 2)).toBe(1);
    expectOnlyParentDelivered(manager, id, child.id);
    sim.assertScriptDone();
  });

  it('held on an approval wait whose batch also scheduled a sleep: the approved call runs, the run sleeps with no model call, and the woken run reads the result once', async () => {
    const { gate } = gateTool();
    const script: ScriptStep[] = [
      {
        toolCalls: [
          spawnCall,
          { id: 'gated', name: 'bash', arguments: { command: 'echo approved-ran' } },
          { name: 'schedule_next_turn', arguments: { after: '1h', reason: 'read the finder result' } },
        ],
      },
      { content: ANSWER },
      { content: 'Supervisor: the finder says src/net/retry.ts.' },
    ];
    // One slot: the child runs once the parent has paused, so its result is held on the approval wait.
    const { sim, manager, scheduler } = await setUp(script, gate, ['bash'], { approvals: 'ask', sandbox: 'none' }, 1);
    const asked = nextEvent<ManagerEvents, 'approval-requested'>(manager, 'approval-requested');
    const { id } = manager.spawn({ task: 'Supervise: delegate the search, run the check, then sleep.', label: 'supervisor', scheduler: 'sleep' });
    await asked;
    const child = manager.jobs().find((r) => r.parentJobId === id) as JobRecord;
    expect((await ended(manager, child.id)).status).toBe('ok');
    expect(manager.get(id)).toMatchObject({ approvalWait: { childResults: [expect.stringContaining('answer 4242')] } });

    const asleep = nextEvent<ManagerEvents, 'sleeping'>(manager, 'sleeping', (r) => r.id === id);
    manager.approve(id, 'gated', { decision: 'allow' });
    await asleep;
    // The approved call ran and the run slept before any model call: the result is held again.
    expect(sim.requests).toHaveLength(2);
    expect(manager.get(id)).toMatchObject({ sleepWait: { childResults: [expect.stringContaining('answer 4242')] } });
    scheduler.fire(scheduler.find('sleep', id)[0] as number);
    expect(await ended(manager, id)).toMatchObject({ status: 'ok', children: [child.id] });
    const messages = messagesOf(sim.requests[2] as Parameters<typeof messagesOf>[0]);
    expect(messages.some((m) => m.role === 'tool' && String(m.content).includes('approved-ran'))).toBe(true);
    expect(answerCount(sim, 2)).toBe(1);
    expectOnlyParentDelivered(manager, id, child.id);
    sim.assertScriptDone();
  });

  it("a running parent restarted (manager.restart) after its child's result was posted to it: the new run, from its task, reads it once in its first turn", async () => {
    const { gate, called } = gateTool();
    const script: ScriptStep[] = [{ toolCalls: [spawnCall, gateCall] }, { content: ANSWER }, { content: 'Restarted: the finder says src/net/retry.ts.' }];
    const { sim, manager } = await setUp(script, gate, []);
    const task = 'Delegate the search, then answer.';
    const { id } = manager.spawn({ task, label: 'parent' });
    const child = await childEnded(manager, id, called);
    // The stop aborts the gate's call: the run ends without another model call, then runs again from its task.
    expect(manager.restart(id)).toMatchObject({ id, state: 'running' });
    const record = await ended(manager, id);

    expect(record).toMatchObject({ status: 'ok', resultText: expect.stringContaining('Restarted') });
    expect(sim.requests).toHaveLength(3);
    const first = messagesOf(sim.requests[2] as Parameters<typeof messagesOf>[0]);
    // A run from its task: the task, then what its earlier run's child gave, once.
    expect(first.filter((m) => m.role === 'user').map((m) => String(m.content).includes(task))).toEqual([true, false]);
    expect(answerCount(sim, 2)).toBe(1);
    expect(String(first.at(-1)?.content)).toContain('an earlier run of this task started');
    expectOnlyParentDelivered(manager, id, child.id);
    sim.assertScriptDone();
  });
});
