/**
 * A child's result reaching a parent job that has no run at that moment, through the real pool
 * and worker threads on the sim (docs/delivery.md "A sleeping job"): the parent sleeps
 * (`scheduler: "sleep"`) or waits for an approval while its child ends. The result is held with
 * the parent (on its wait record, for a restart) and is read by the parent's next run, exactly
 * once; a sleeping parent is not woken early by it. One slot (maxConcurrent 1), so the child runs
 * only once the parent has given its slot back: the order is fixed, not raced.
 */
import { describe, expect, it } from 'vitest';
import type { ScriptStep } from '../../../src/sim/types.js';
import { Deliveries } from '../../../src/main/delivery/deliveries.js';
import type { JobRecord } from '../../../src/main/ledger/ledger.js';
import { ended, makeConfig, makeManager, makeWorkspace, messagesOf, nextEvent, startSim, useCleanup } from '../../helpers/index.js';
import { ManualScheduler } from '../../helpers/fake-executor.js';
import type { ManagerEvents } from '../../../src/main/jobs/manager.js';

const cleanups = useCleanup();
const ANSWER = 'The retry backoff is in src/net/retry.ts (answer 4242).';
const spawnCall: ScriptStep['toolCalls'] = [{ name: 'spawn_background_agent', arguments: { task: 'Find where the retry backoff is.', label: 'finder' } }];

/** How many user messages of the parent's request `n` (0-based) carry the child's answer. */
function answerCount(sim: { requests: unknown[] }, n: number): number {
  const request = sim.requests[n] as Parameters<typeof messagesOf>[0];
  return messagesOf(request).filter((m) => m.role === 'user' && String(m.content).includes('answer 4242')).length;
}

describe("a child's result while its parent has no run", () => {
  it("a parent asleep when its child ends: not woken early; its next run reads the child's result once, and the child is delivered to nobody else", async () => {
    const root = await makeWorkspace(cleanups);
    const script: ScriptStep[] = [
      { toolCalls: [...(spawnCall ?? []), { name: 'schedule_next_turn', arguments: { after: '1h', reason: 'read the finder result' } }] },
      { content: ANSWER },
      { content: 'Supervisor: the finder says src/net/retry.ts.' },
    ];
    const sim = await startSim(cleanups, { script, recordBodies: true });
    // Only the wake is in the test's hand: it fires once the child has ended.
    const scheduler = new ManualScheduler(['timeout', 'cancel-grace', 'port-close', 'budget', 'wave-deadline', 'approval']);
    const manager = makeManager(makeConfig(sim, root, { maxConcurrent: 1, maxDepth: 2, maxAlertsPerJob: 0 }), cleanups, undefined, scheduler);
    const { id } = manager.spawn({ task: 'Supervise: delegate the search, then sleep.', label: 'supervisor', scheduler: 'sleep' });
    await nextEvent<ManagerEvents, 'sleeping'>(manager, 'sleeping', (r) => r.id === id);
    const child = manager.jobs().find((r) => r.parentJobId === id) as JobRecord;
    expect((await ended(manager, child.id)).status).toBe('ok');

    // The child's end did not wake it: still asleep, its held result on its record (for a restart).
    expect(manager.get(id)).toMatchObject({ state: 'running', sleepWait: { childResults: [expect.stringContaining('answer 4242')] } });
    expect(sim.requests).toHaveLength(2);
    const [wake] = scheduler.find('sleep', id);
    scheduler.fire(wake as number);
    const record = await ended(manager, id);

    expect(record).toMatchObject({ status: 'ok', resultText: expect.stringContaining('src/net/retry.ts'), children: [child.id] });
    expect(answerCount(sim, 2)).toBe(1);
    // The wake message is there too, before the result.
    const last = messagesOf(sim.requests[2] as Parameters<typeof messagesOf>[0]).at(-1);
    expect(String(last?.content)).toMatch(/the turn you scheduled has come[\s\S]*answer 4242/);
    // Handed to its parent: the session gets the supervisor only, once.
    expect(manager.get(child.id)?.deliveredInTurn).toBeDefined();
    const deliveries = new Deliveries(manager);
    expect(deliveries.drain(1).map((r) => r.id)).toEqual([id]);
    expect(deliveries.drain(2)).toEqual([]);
    sim.assertScriptDone();
  });

  it("a parent paused for an approval when its child ends: after the approved call runs, its next model call reads the child's result once", async () => {
    const root = await makeWorkspace(cleanups);
    const script: ScriptStep[] = [
      { toolCalls: [...(spawnCall ?? []), { id: 'gated', name: 'bash', arguments: { command: 'echo approved-ran' } }] },
      { content: ANSWER },
      { content: 'Done: the finder says src/net/retry.ts.' },
    ];
    const sim = await startSim(cleanups, { script, recordBodies: true });
    const config = makeConfig(sim, root, { maxConcurrent: 1, maxDepth: 2, maxAlertsPerJob: 0 }, { approvals: 'ask', sandbox: 'none' });
    const manager = makeManager(config, cleanups);
    const asked = nextEvent<ManagerEvents, 'approval-requested'>(manager, 'approval-requested');
    const { id } = manager.spawn({ task: 'Delegate the search and run the check.', label: 'parent' });
    await asked;
    const child = manager.jobs().find((r) => r.parentJobId === id) as JobRecord;
    expect((await ended(manager, child.id)).status).toBe('ok');
    expect(manager.get(id)).toMatchObject({ state: 'running', approvalWait: { childResults: [expect.stringContaining('answer 4242')] } });

    manager.approve(id, 'gated', { decision: 'allow' });
    const record = await ended(manager, id);
    expect(record).toMatchObject({ status: 'ok', children: [child.id] });
    // The approved call ran (its result is there), and the child's result came after it, once.
    const messages = messagesOf(sim.requests[2] as Parameters<typeof messagesOf>[0]);
    expect(messages.some((m) => m.role === 'tool' && String(m.content).includes('approved-ran'))).toBe(true);
    expect(answerCount(sim, 2)).toBe(1);
    expect(messages.at(-1)).toMatchObject({ role: 'user', content: expect.stringContaining('answer 4242') });
    sim.assertScriptDone();
  });
});
