/**
 * A job's one limit on model calls (its budget's maxTurns, not the parent's maxIterations) and
 * the per-turn timeout (`turnTimeoutMs`: a model call plus the tools it calls), through the
 * real pool on the sim. States and codes are asserted, never durations.
 */
import { describe, expect, it } from 'vitest';
import { AgentSession } from '../../../src/main/session/agent-session.js';
import { WRAP_UP_MARKER } from '../../../src/shared/budget.js';
import { parseConfig } from '../../../src/shared/config.js';
import type { LoopEvent } from '../../../src/shared/loop-events.js';
import type { ScriptStep } from '../../../src/sim/index.js';
import { ended, makeConfig, makeManager, makeWorkspace, startSim, cleanupOf, watchManager } from '../../helpers/index.js';

/** Forty sequential model calls in a worker thread: a loaded machine needs more than the default minute. */
const POOL_TEST_TIMEOUT_MS = 150_000;

/** A model that keeps calling tools (a different directory each time, so no loop is detected), saying what it found. */
function busySteps(count: number): ScriptStep[] {
  return Array.from({ length: count }, (_, i) => ({
    content: `finding ${i + 1}: looked at d${i + 1}`,
    toolCalls: [{ name: 'list_dir', arguments: { path: `d${i + 1}` } }],
  }));
}

function hasWrapUp(body: { messages: Array<{ role: string; content: unknown }> }): boolean {
  return body.messages.some((m) => m.role === 'user' && typeof m.content === 'string' && m.content.startsWith(WRAP_UP_MARKER));
}

// Each test has its own sim, pool and cleanup list (cleanupOf): they run side by side (the
// maxTurns one waits on forty model calls).
describe.concurrent('one turn limit: a job runs to its budget maxTurns', { timeout: POOL_TEST_TIMEOUT_MS }, () => {
  it('a spawn asking maxTurns 40 makes 40 model calls (past maxIterations 20), is told to wrap up before the last, and ends budget_exceeded with its findings', async (context) => {
    const cleanups = cleanupOf(context);
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups, { script: busySteps(40) });
    // maxIterations stays at its default (20): it is the parent's limit, not the job's.
    const manager = makeManager(makeConfig(sim, root), cleanups);
    const { id } = manager.spawn({ task: 'survey every directory', label: 'forty', budget: { maxTurns: 40 } });
    const record = await ended(manager, id);

    expect(sim.requests).toHaveLength(40);
    expect(record.iterations).toBe(40);
    expect(record).toMatchObject({ status: 'partial', stopReason: 'budget_exceeded', budgetExceeded: 'maxTurns', endedBy: 'completed' });
    expect(record.error?.code).toBe('BUDGET_EXCEEDED');
    // Its findings: the last thing it said and the tool calls it made.
    expect(record.resultText).toContain('finding 40');
    expect(record.resultText).toContain('Tool calls made before stopping (40)');
    // Told once, at 90% (the 36th call), and the message stays in its history to the end.
    const told = sim.requests.map((r) => hasWrapUp(r.body));
    expect(told.indexOf(true)).toBe(35);
    expect(told.slice(35)).toEqual(Array(5).fill(true));
    expect(record.budgetReport).toMatchObject({ limits: { maxTurns: 40 }, spent: { turns: 40 }, exceeded: 'maxTurns' });
    sim.assertScriptDone();
  });

  it('a spawn asking more turns than its agent allows is refused at spawn (BUDGET_OVER_LIMIT), nothing runs', async (context) => {
    const cleanups = cleanupOf(context);
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups, { script: [] });
    const manager = makeManager(makeConfig(sim, root), cleanups);
    // background.budget.maxTurns is 50 by default.
    expect(() => manager.spawn({ task: 'survey', label: 'greedy', budget: { maxTurns: 51 } })).toThrow(expect.objectContaining({ code: 'BUDGET_OVER_LIMIT' }));
    expect(manager.jobs()).toHaveLength(0);
    expect(sim.requests).toHaveLength(0);
  });

  it("an agent's deprecated maxIterations becomes its budget.maxTurns, with a warning: a spawn above it is refused, one at it is capped there", async (context) => {
    const cleanups = cleanupOf(context);
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups, { script: busySteps(3) });
    const warnings: string[] = [];
    const config = parseConfig(
      { workspaceRoot: root, baseUrl: sim.url, apiKey: 'test-key', maxRetries: 0, agents: { scout: { description: 'Finds things', maxIterations: 3 } } },
      {},
      { onWarning: (message) => warnings.push(message) },
    );
    expect(warnings).toEqual([expect.stringContaining('"agents.scout.maxIterations" is deprecated')]);
    expect(config.agents.scout).toMatchObject({ budget: { maxTurns: 3 } });
    expect(config.agents.scout?.maxIterations).toBeUndefined();
    const manager = makeManager(config, cleanups);
    expect(() => manager.spawn({ task: 'find', label: 'greedy', agent: 'scout', budget: { maxTurns: 4 } })).toThrow(
      expect.objectContaining({ code: 'BUDGET_OVER_LIMIT' }),
    );
    const record = await ended(manager, manager.spawn({ task: 'find', label: 'scout', agent: 'scout' }).id);
    expect(record).toMatchObject({ status: 'partial', budgetExceeded: 'maxTurns', iterations: 3 });
    expect(sim.requests).toHaveLength(3);
  });

  it("an agent's maxIterations and budget.maxTurns set to different values is a config error naming the field", async (context) => {
    const cleanups = cleanupOf(context);
    const root = await makeWorkspace(cleanups);
    expect(() =>
      parseConfig({
        workspaceRoot: root,
        baseUrl: 'http://127.0.0.1:1/v1',
        agents: { scout: { description: 'Finds things', maxIterations: 3, budget: { maxTurns: 5 } } },
      }),
    ).toThrow(expect.objectContaining({ code: 'CONFIG_INVALID', issues: [expect.objectContaining({ field: 'agents.scout.maxIterations', received: '3' })] }));
  });
});

// Alone, after the group above: an ordinary model call and tool start must fit in a 3 s turn.
describe('the per-turn timeout (turnTimeoutMs)', { timeout: POOL_TEST_TIMEOUT_MS }, () => {
  it('a model call that hangs is aborted at the turn deadline: the job ends failed with TURN_TIMEOUT, as a request timeout does', async (context) => {
    const cleanups = cleanupOf(context);
    const root = await makeWorkspace(cleanups);
    // The request and idle timeouts are far away: only the turn deadline can end this call.
    const sim = await startSim(cleanups, { script: [{ content: 'never sent' }], faults: { 1: { kind: 'hang_before_headers' } } });
    const config = makeConfig(sim, root, {}, { turnTimeoutMs: 1_000, requestTimeoutMs: 600_000, streamIdleTimeoutMs: 600_000 });
    const manager = makeManager(config, cleanups);
    const record = await ended(manager, manager.spawn({ task: 'survey', label: 'hung model' }).id);

    expect(record).toMatchObject({ status: 'failed', stopReason: 'error', endedBy: 'completed' });
    expect(record.error).toMatchObject({ code: 'TURN_TIMEOUT', timeoutMs: 1_000 });
    expect(sim.requests).toHaveLength(1);
  });

  it('a tool that hangs is aborted at the turn deadline with its model call: no further model call, the job ends failed with TURN_TIMEOUT', async (context) => {
    const cleanups = cleanupOf(context);
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups, {
      script: [{ content: 'Let me wait.', toolCalls: [{ name: 'bash', arguments: { command: 'sleep 600' } }] }, { content: 'never asked' }],
    });
    const config = makeConfig(
      sim,
      root,
      {},
      { turnTimeoutMs: 3_000, grantedTools: ['bash'], sandbox: 'none', toolLimits: { bashTimeoutMs: 600_000, toolTimeoutMs: 600_000 } },
    );
    const manager = makeManager(config, cleanups);
    const events: LoopEvent[] = [];
    manager.on('progress', ({ event }) => events.push(event));
    const record = await ended(manager, manager.spawn({ task: 'wait', label: 'hung tool' }).id);

    expect(record).toMatchObject({ status: 'failed', stopReason: 'error', endedBy: 'completed' });
    expect(record.error).toMatchObject({ code: 'TURN_TIMEOUT', timeoutMs: 3_000 });
    // The tool answered (with an error) and the model was not asked again.
    expect(events.filter((e) => e.type === 'tool_result')).toEqual([expect.objectContaining({ name: 'bash', ok: false })]);
    expect(sim.requests).toHaveLength(1);
    // What it had said before the turn ran out is kept.
    expect(record.resultText).toContain('Let me wait.');
  });

  it("the parent's turn that hangs reports TURN_TIMEOUT and the session goes on: the next turn is answered", async (context) => {
    const cleanups = cleanupOf(context);
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups, { script: [{ content: 'Second answer.' }], faults: { 1: { kind: 'hang_before_headers' } } });
    // Long enough that the second, ordinary turn never meets it even on a busy machine.
    const config = makeConfig(sim, root, {}, { turnTimeoutMs: 3_000, requestTimeoutMs: 600_000 });
    const session = new AgentSession({ config, closeExecutor: true });
    watchManager(session.manager);
    cleanups.add(() => session.close({ timeoutMs: 2_000 }));

    const first = await session.submit('First question.');
    expect(first.stopReason).toBe('error');
    expect(first.error).toMatchObject({ code: 'TURN_TIMEOUT', timeoutMs: 3_000 });
    const second = await session.submit('Second question.');
    expect(second).toMatchObject({ stopReason: 'final', answer: 'Second answer.' });
    expect(sim.requests).toHaveLength(2);
    sim.assertScriptDone();
  });
});
