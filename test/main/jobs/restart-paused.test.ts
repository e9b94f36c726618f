/**
 * A restart of a job whose run is over but which has not ended (asleep until its scheduled turn,
 * paused for approvals, waiting for its children), through the real pool and worker threads on
 * the sim (docs/agents.md, restart_background_agent): what it waited on is dropped once (its
 * wake timer; its pending calls, answered as void, never to run; its children wait, while the
 * children go on), and it runs again from its task under the same id, ending and delivered once.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { BackgroundManager, type ManagerEvents } from '../../../src/main/jobs/manager.js';
import { Deliveries } from '../../../src/main/delivery/deliveries.js';
import type { JobRecord } from '../../../src/main/ledger/ledger.js';
import type { ApprovalRecord } from '../../../src/shared/approvals.js';
import type { ForkpoolConfigInput } from '../../../src/shared/config.js';
import { tool, type ToolDefinition } from '../../../src/shared/tool-contract.js';
import type { ScriptStep } from '../../../src/sim/types.js';
import { ended, makeConfig, makeWorkspace, messagesOf, nextEvent, startSim, useCleanup, waitFor, watchManager } from '../../helpers/index.js';
import { ManualScheduler } from '../../helpers/fake-executor.js';

const cleanups = useCleanup();
const ANSWER = 'The retry backoff is in src/net/retry.ts (answer 4242).';

/** Sleeps and approval timers are the test's; the rest run for real. */
const manualWaits = () => new ManualScheduler(['timeout', 'cancel-grace', 'port-close', 'budget', 'wave-deadline']);

async function setUp(script: ScriptStep[], extra: Partial<ForkpoolConfigInput> = {}, tools: ToolDefinition[] = []) {
  const root = await makeWorkspace(cleanups);
  const sim = await startSim(cleanups, { script, recordBodies: true });
  const scheduler = manualWaits();
  const config = makeConfig(sim, root, { maxConcurrent: 1, maxDepth: 2, maxAlertsPerJob: 0 }, extra);
  const manager = watchManager(new BackgroundManager({ config, scheduler, tools }));
  cleanups.add(() => manager.close({ timeoutMs: 2_000 }));
  return { root, sim, scheduler, manager };
}

/** Request `n` (0-based): its user messages and how many tool messages it carries (a run from its task has none). */
function turn(sim: { requests: unknown[] }, n: number): { users: string[]; tools: number } {
  const messages = messagesOf(sim.requests[n] as Parameters<typeof messagesOf>[0]);
  return { users: messages.filter((m) => m.role === 'user').map((m) => String(m.content)), tools: messages.filter((m) => m.role === 'tool').length };
}

/** Delivered to the session once, and nothing else. */
function expectDeliveredOnce(manager: BackgroundManager, id: string): void {
  const deliveries = new Deliveries(manager);
  expect(deliveries.drain(1).map((r) => r.id)).toEqual([id]);
  expect(deliveries.drain(2)).toEqual([]);
}

/** A host tool that answers once the test opens it: a child waits in it, still running. */
function gateTool(): { gate: ToolDefinition; open: () => void; called: Promise<void> } {
  let open!: () => void;
  let called!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  const calledPromise = new Promise<void>((resolve) => (called = resolve));
  const gate = tool({
    name: 'hold_here',
    description: 'Waits until the test says so.',
    parameters: z.object({}),
    timeoutMs: 300_000,
    run: async (_args, ctx) => {
      called();
      await new Promise<void>((resolve) => {
        void opened.then(resolve);
        ctx.signal.addEventListener('abort', () => resolve(), { once: true });
      });
      return 'the gate is open';
    },
  });
  return { gate, open, called: calledPromise };
}

describe('restart of a job that waits', () => {
  it('asleep (its second sleep): its wake is dropped and it runs again from its task, not from a woken conversation, once; its record says what was dropped', async () => {
    const task = 'Scan the queue.';
    const sleep = { toolCalls: [{ name: 'schedule_next_turn', arguments: { after: '1h', reason: 'scan again' } }] };
    const { sim, scheduler, manager } = await setUp([sleep, sleep, { content: 'Scanned from the start.' }]);
    const { id } = manager.spawn({ task, label: 'scanner', scheduler: 'sleep' });
    await nextEvent<ManagerEvents, 'sleeping'>(manager, 'sleeping', (r) => r.id === id);
    // Woken once and asleep again: its next run would go on from the woken conversation.
    const again = nextEvent<ManagerEvents, 'sleeping'>(manager, 'sleeping', (r) => r.id === id);
    scheduler.fire(scheduler.find('sleep', id)[0] as number);
    await again;
    expect(scheduler.find('sleep', id)).toHaveLength(1);

    expect(manager.restart(id)).toMatchObject({ id, state: 'queued' });
    const reopened = manager.get(id) as JobRecord;
    expect(reopened.state).toBe('queued');
    expect(reopened.sleepWait).toBeUndefined();
    expect(reopened.notes.at(-1)).toMatch(/^restarted on request while asleep until \S+ \(scan again\): its wake was dropped$/);
    // Its wake timer is gone: nothing can wake the old run's conversation later.
    expect(scheduler.find('sleep', id)).toEqual([]);

    expect(await ended(manager, id)).toMatchObject({ status: 'ok', resultText: 'Scanned from the start.' });
    expect(sim.requests).toHaveLength(3);
    // From its task: the task alone, none of the slept runs' conversation.
    expect(turn(sim, 2)).toEqual({ users: [expect.stringContaining(task)], tools: 0 });
    expectDeliveredOnce(manager, id);
    sim.assertScriptDone();
  });

  it('paused for approvals: its call is answered as void (never run, approve refused), and it runs again from its task, once', async () => {
    const task = 'Append a line.';
    const { root, sim, scheduler, manager } = await setUp(
      [{ toolCalls: [{ id: 'call-1', name: 'bash', arguments: { command: 'echo one >> ran.txt' } }] }, { content: 'Done from the start.' }],
      { approvals: 'ask', sandbox: 'none' },
    );
    const asked = nextEvent<ManagerEvents, 'approval-requested'>(manager, 'approval-requested');
    const { id } = manager.spawn({ task, label: 'appender' });
    await asked;
    expect(scheduler.find('approval', id)).toHaveLength(1);
    const resolved: ApprovalRecord[] = [];
    manager.on('approval-resolved', (answered) => resolved.push(answered));

    expect(manager.restart(id)).toMatchObject({ id, state: 'queued' });
    const void1 = { jobId: id, callId: 'call-1', tool: 'bash', decision: 'deny', by: 'restart' };
    expect(resolved).toEqual([expect.objectContaining(void1)]);
    expect(manager.approvals()).toEqual([]);
    expect(scheduler.find('approval', id)).toEqual([]);
    const reopened = manager.get(id) as JobRecord;
    expect(reopened).toMatchObject({ state: 'queued', approvals: [void1] });
    expect(reopened.awaitingApproval).toBeUndefined();
    expect(reopened.approvalWait).toBeUndefined();
    expect(reopened.notes.at(-1)).toBe('restarted on request while paused for approvals: bash (call call-1) answered as void, never to run');
    // A person who answers now approves nothing: the call will never run.
    expect(() => manager.approve(id, 'call-1', { decision: 'allow' })).toThrow(expect.objectContaining({ code: 'APPROVAL_UNKNOWN' }));

    expect(await ended(manager, id)).toMatchObject({ status: 'ok', resultText: 'Done from the start.' });
    expect(existsSync(path.join(root, 'ran.txt'))).toBe(false);
    expect(turn(sim, 1)).toEqual({ users: [expect.stringContaining(task)], tools: 0 });
    expectDeliveredOnce(manager, id);
    sim.assertScriptDone();
  });

  it('waiting for its children: they go on, and the new run from its task reads the result it had not read and the one that came after, once each', async () => {
    const { gate, open, called } = gateTool();
    const task = 'Delegate two searches, then answer.';
    const final = 'Restarted: the finder says src/net/retry.ts, the holder says 777.';
    const { sim, manager } = await setUp(
      [
        {
          toolCalls: [
            { name: 'spawn_background_agent', arguments: { task: 'Find where the retry backoff is.', label: 'finder' } },
            { name: 'spawn_background_agent', arguments: { task: 'Hold until told.', label: 'holder' } },
          ],
        },
        { content: 'Waiting for my two helpers.' },
        { content: ANSWER },
        { toolCalls: [{ name: 'hold_here', arguments: {} }] },
        { content: 'Held, then done (answer 777).' },
        { content: final },
      ],
      { tools: ['read_file', 'hold_here'] },
      [gate],
    );
    const { id } = manager.spawn({ task, label: 'parent' });
    // One slot: the parent waits (slot given back), the finder ends, the holder runs into the gate.
    await called;
    const [finder, holder] = manager.jobs().filter((r) => r.parentJobId === id) as [JobRecord, JobRecord];
    expect((await ended(manager, finder.id)).status).toBe('ok');
    expect(manager.get(id)).toMatchObject({ state: 'queued', waitingForChildren: true });

    expect(manager.restart(id)).toMatchObject({ id, state: 'queued' });
    const reopened = manager.get(id) as JobRecord;
    expect(reopened.waitingForChildren).toBeUndefined();
    expect(reopened.notes.at(-1)).toBe(
      'restarted on request while waiting for its children: 1 still running go on, and their results and the 1 it had not read go to its new run',
    );
    // The finder's unread result is handed to the new run on its record (durable: recovery.ts reads it there).
    expect(reopened.handedResults).toEqual([expect.stringContaining('answer 4242')]);
    expect(manager.get(holder.id)?.state).toBe('running');

    open();
    expect(await ended(manager, holder.id)).toMatchObject({ status: 'ok' });
    expect(await ended(manager, id)).toMatchObject({ status: 'ok', resultText: final, children: [finder.id, holder.id] });
    expect(sim.requests).toHaveLength(6);
    const first = turn(sim, 5);
    expect(first.tools).toBe(0);
    expect(first.users[0]).toContain(task);
    const all = first.users.join('\n');
    expect(all.split('answer 4242').length - 1).toBe(1);
    expect(all.split('answer 777').length - 1).toBe(1);
    // The children were their parent's: the session gets the parent only, once.
    expect(manager.get(finder.id)?.deliveredInTurn).toBeDefined();
    expect(manager.get(holder.id)?.deliveredInTurn).toBeDefined();
    expectDeliveredOnce(manager, id);
    sim.assertScriptDone();
  });

  it('ended after it slept and woke: a restart runs it from its task, not from the woken conversation', async () => {
    const task = 'Scan the queue.';
    const { sim, scheduler, manager } = await setUp([
      { toolCalls: [{ name: 'schedule_next_turn', arguments: { after: '1h', reason: 'scan again' } }] },
      { content: 'Scanned after the wake.' },
      { content: 'Scanned from the start.' },
    ]);
    const { id } = manager.spawn({ task, label: 'scanner', scheduler: 'sleep' });
    await nextEvent<ManagerEvents, 'sleeping'>(manager, 'sleeping', (r) => r.id === id);
    scheduler.fire(scheduler.find('sleep', id)[0] as number);
    expect(await ended(manager, id)).toMatchObject({ status: 'ok', resultText: 'Scanned after the wake.' });

    manager.restart(id);
    expect(await ended(manager, id)).toMatchObject({ status: 'ok', resultText: 'Scanned from the start.' });
    expect(turn(sim, 2)).toEqual({ users: [expect.stringContaining(task)], tools: 0 });
    sim.assertScriptDone();
  });

  it('running after a wake: a restart runs it from its task, not from the woken conversation', async () => {
    const task = 'Scan the queue.';
    const { sim, scheduler, manager } = await setUp([
      { toolCalls: [{ name: 'schedule_next_turn', arguments: { after: '1h', reason: 'scan again' } }] },
      // The woken run's model call hangs until the restart stops it.
      { fault: { kind: 'hang_before_headers' } },
      { content: 'Scanned from the start.' },
    ]);
    const { id } = manager.spawn({ task, label: 'scanner', scheduler: 'sleep' });
    await nextEvent<ManagerEvents, 'sleeping'>(manager, 'sleeping', (r) => r.id === id);
    scheduler.fire(scheduler.find('sleep', id)[0] as number);
    await waitFor(() => sim.requests.length === 2, 'the woken run asks the model');

    expect(manager.restart(id)).toMatchObject({ id, state: 'running' });
    expect(await ended(manager, id)).toMatchObject({ status: 'ok', resultText: 'Scanned from the start.' });
    expect(turn(sim, 2)).toEqual({ users: [expect.stringContaining(task)], tools: 0 });
    sim.assertScriptDone();
  });

  it("running after a wake that handed it a child's result: the restart's run from its task reads that result once", async () => {
    const task = 'Supervise: delegate the search, then sleep.';
    const final = 'Restarted: the finder says src/net/retry.ts.';
    const { sim, scheduler, manager } = await setUp([
      {
        toolCalls: [
          { name: 'spawn_background_agent', arguments: { task: 'Find where the retry backoff is.', label: 'finder' } },
          { name: 'schedule_next_turn', arguments: { after: '1h', reason: 'read the finder result' } },
        ],
      },
      { content: ANSWER },
      // The woken run (handed the finder's result with its wake message) hangs until the restart stops it.
      { fault: { kind: 'hang_before_headers' } },
      { content: final },
    ]);
    const { id } = manager.spawn({ task, label: 'supervisor', scheduler: 'sleep' });
    await nextEvent<ManagerEvents, 'sleeping'>(manager, 'sleeping', (r) => r.id === id);
    const finder = manager.jobs().find((r) => r.parentJobId === id) as JobRecord;
    expect((await ended(manager, finder.id)).status).toBe('ok');
    scheduler.fire(scheduler.find('sleep', id)[0] as number);
    await waitFor(() => sim.requests.length === 3, 'the woken run asks the model');

    manager.restart(id);
    expect(await ended(manager, id)).toMatchObject({ status: 'ok', resultText: final });
    const first = turn(sim, 3);
    expect(first.tools).toBe(0);
    expect(first.users[0]).toContain(task);
    expect(first.users.join('\n').split('answer 4242').length - 1).toBe(1);
    expectDeliveredOnce(manager, id);
    sim.assertScriptDone();
  });
});
