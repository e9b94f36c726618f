/**
 * Per-job budgets through the real pool (issue 10 §1): turns, tokens, dollars and wall clock.
 * A job told once at 90% to wrap up, stopped at 100% as `partial` with what it had, its record
 * naming the budget and carrying spent/remaining; a spawn may only tighten its agent's limits.
 */
import { describe, expect, it } from 'vitest';
import { AgentSession } from '../../../src/main/session/agent-session.js';
import { WRAP_UP_MARKER, BudgetMeter } from '../../../src/shared/budget.js';
import { parseConfig } from '../../../src/shared/config.js';
import type { ScriptStep } from '../../../src/sim/index.js';
import {
  toolMessagesOf,
  useCleanup,
  ended,
  fixtureExecutor,
  makeConfig,
  makeManager,
  makeWorkspace,
  nextEvent,
  startSim,
  ManualScheduler,
} from '../../helpers/index.js';
import type { ManagerEvents } from '../../../src/main/jobs/manager.js';

const cleanups = useCleanup();
/** Jobs here make up to a dozen sequential model calls in worker threads: a loaded machine needs more than the default minute. */
const POOL_TEST_TIMEOUT_MS = 150_000;

/** A model that keeps calling tools (a different directory each time, so no loop is detected), saying what it found. */
function busySteps(count: number, usage?: { prompt_tokens: number; completion_tokens: number }): ScriptStep[] {
  return Array.from({ length: count }, (_, i) => ({
    content: `finding ${i + 1}: looked at d${i + 1}`,
    toolCalls: [{ name: 'list_dir', arguments: { path: `d${i + 1}` } }],
    ...(usage ? { usage } : {}),
  }));
}

/** How many wrap-up messages a request's history holds. */
function wrapUps(body: { messages: Array<{ role: string; content: unknown }> }): number {
  return body.messages.filter((m) => m.role === 'user' && typeof m.content === 'string' && m.content.startsWith(WRAP_UP_MARKER)).length;
}

describe('per-job budgets through the real pool', { timeout: POOL_TEST_TIMEOUT_MS }, () => {
  it('maxTurns: stopped after exactly 10 model calls, partial with its text so far, told to wrap up exactly once (at the 9th call)', async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups, { script: busySteps(30) });
    const config = makeConfig(sim, root, { budget: { maxTurns: 10 } }, { maxIterations: 100 });
    const manager = makeManager(config, cleanups);
    const job = manager.spawn({ task: 'survey every directory', label: 'turns' });
    const record = await ended(manager, job.id);
    expect(record.status).toBe('partial');
    expect(record.budgetExceeded).toBe('maxTurns');
    expect(record.error?.code).toBe('BUDGET_EXCEEDED');
    expect(record.error?.message).toMatch(/maxTurns/);
    expect(record.iterations).toBe(10);
    expect(sim.requests).toHaveLength(10);
    // The text it had: its last finding before the stop.
    expect(record.resultText).toContain('finding 10');
    const counts = sim.requests.map((r) => wrapUps(r.body));
    expect(counts.slice(0, 8)).toEqual(Array(8).fill(0));
    expect(counts.slice(8)).toEqual([1, 1]);
    expect(record.budgetReport).toMatchObject({ limits: { maxTurns: 10 }, spent: { turns: 10 }, remaining: { maxTurns: 0 }, exceeded: 'maxTurns' });
  });

  it('maxTokens: stopped once input + output tokens reach the limit; the record has spent and remaining', async () => {
    const root = await makeWorkspace(cleanups);
    // 200 tokens a call: 1,000 after 5 calls (91% of 1,100: the wrap-up), 1,200 after 6 (over).
    const sim = await startSim(cleanups, { script: busySteps(30, { prompt_tokens: 150, completion_tokens: 50 }) });
    const config = makeConfig(sim, root, { budget: { maxTokens: 1_100 } });
    const manager = makeManager(config, cleanups);
    const record = await ended(manager, manager.spawn({ task: 'survey', label: 'tokens' }).id);
    expect(record.status).toBe('partial');
    expect(record.budgetExceeded).toBe('maxTokens');
    expect(sim.requests).toHaveLength(6);
    expect(sim.requests.map((r) => wrapUps(r.body))).toEqual([0, 0, 0, 0, 0, 1]);
    expect(record.budgetReport?.spent.tokens).toBe(1_200);
    expect(record.budgetReport?.remaining.maxTokens).toBe(0);
    expect(record.budgetReport?.limits).toEqual({ maxTurns: 50, maxTokens: 1_100, maxCostUsd: 1, maxWallclockMinutes: 10 });
  });

  it('maxCostUsd with a priced model: stopped at the dollar limit; an unpriced model counts tokens only and says so', async () => {
    const root = await makeWorkspace(cleanups);
    // $1,000 per million tokens each way: 200 tokens = $0.20 a call; $1.00 after 5 calls.
    const sim = await startSim(cleanups, { script: busySteps(30, { prompt_tokens: 150, completion_tokens: 50 }) });
    const priced = makeConfig(sim, root, { budget: { maxCostUsd: 1.1 } }, { models: { 'forkpool-sim': { inputUsdPerMTok: 1_000, outputUsdPerMTok: 1_000 } } });
    const manager = makeManager(priced, cleanups);
    const record = await ended(manager, manager.spawn({ task: 'survey', label: 'dollars' }).id);
    expect(record.status).toBe('partial');
    expect(record.budgetExceeded).toBe('maxCostUsd');
    expect(sim.requests).toHaveLength(6);
    expect(sim.requests.map((r) => wrapUps(r.body))).toEqual([0, 0, 0, 0, 0, 1]);
    expect(record.budgetReport?.spent.costUsd).toBeCloseTo(1.2, 6);
    expect(record.budgetReport?.costUnpriced).toBeUndefined();

    // The same job with no price for its model: the dollar budget cannot be metered, turns stop it.
    sim.setOptions({ script: busySteps(30, { prompt_tokens: 150, completion_tokens: 50 }) });
    const unpriced = makeManager(makeConfig(sim, root, { budget: { maxCostUsd: 0.01, maxTurns: 3 } }), cleanups);
    const tokensOnly = await ended(unpriced, unpriced.spawn({ task: 'survey', label: 'unpriced' }).id);
    expect(tokensOnly.budgetExceeded).toBe('maxTurns');
    expect(tokensOnly.budgetReport).toMatchObject({ costUnpriced: true, spent: { costUsd: 0, tokens: 600, unpricedModels: ['forkpool-sim'] } });
  });

  it('maxWallclockMinutes from the main thread: a job stuck in a tool ends partial with what it had said (cooperative stop)', async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups, {
      script: [{ content: 'checked the build first', toolCalls: [{ name: 'bash', arguments: { command: 'sleep 60' } }] }, { content: 'never reached' }],
    });
    const config = makeConfig(sim, root, {}, { grantedTools: ['bash'] });
    // The wall-clock timer is fired by hand once the job is inside its tool, and the hard stop
    // never comes (cancel-grace is manual too): the cooperative path alone, no timing window.
    const scheduler = new ManualScheduler(['timeout', 'port-close']);
    const manager = makeManager(config, cleanups, undefined, scheduler);
    const inTool = nextEvent<ManagerEvents, 'progress'>(manager, 'progress', ({ event }) => event.type === 'tool_call' && event.name === 'bash');
    const job = manager.spawn({ task: 'run the build', label: 'stuck' });
    await inTool;
    const [timer] = scheduler.find('budget', job.id);
    expect(scheduler.fire(timer as number)).toMatchObject({ kind: 'budget' });
    const record = await ended(manager, job.id);
    expect(record.status).toBe('partial');
    expect(record.endedBy).toBe('cooperative');
    expect(record.budgetExceeded).toBe('maxWallclockMinutes');
    expect(record.error?.code).toBe('BUDGET_EXCEEDED');
    expect(record.resultText).toContain('checked the build first');
    expect(sim.requests).toHaveLength(1);
  });

  it('maxWallclockMinutes: a job that ignores the cooperative stop is hard-stopped and still ends partial, naming the budget', async () => {
    const root = await makeWorkspace(cleanups);
    const config = makeConfig(undefined, root, { budget: { maxWallclockMinutes: 0.005 }, cancelGraceMs: 100 });
    const manager = makeManager(config, cleanups, fixtureExecutor(config, cleanups));
    const record = await ended(manager, manager.spawn({ task: 'FAULT:loop', label: 'spinning' }).id);
    expect(record.status).toBe('partial');
    expect(record.endedBy).toBe('hard');
    expect(record.budgetExceeded).toBe('maxWallclockMinutes');
    expect(record.error?.code).toBe('BUDGET_EXCEEDED');
  });
});

describe('budgets per agent, overridden per spawn only within the agent', { timeout: POOL_TEST_TIMEOUT_MS }, () => {
  const base = (root: string, url: string) =>
    parseConfig({
      workspaceRoot: root,
      baseUrl: url,
      apiKey: 'k',
      maxRetries: 0,
      agents: { scout: { description: 'finds files', budget: { maxTurns: 4, maxCostUsd: 0.5 } } },
    });

  it('an agent inherits background.budget for what it does not set; a spawn may tighten, never raise (BUDGET_OVER_LIMIT names the field)', async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups, { script: busySteps(10) });
    const manager = makeManager(base(root, sim.url), cleanups);
    expect(() => manager.spawn({ task: 't', label: 'x', agent: 'scout', budget: { maxCostUsd: 5 } })).toThrow(
      /budget\.maxCostUsd: agent "scout" may use at most \$0\.50 per job; the spawn asked for \$5\.00/,
    );
    expect(() => manager.spawn({ task: 't', label: 'x', budget: { maxTurns: 51 } })).toThrow(expect.objectContaining({ code: 'BUDGET_OVER_LIMIT' }));
    expect(manager.jobs()).toHaveLength(0);
    const tight = manager.spawn({ task: 'survey', label: 'tight', agent: 'scout', budget: { maxTurns: 2, maxTokens: 10_000 } });
    const record = await ended(manager, tight.id);
    expect(record.budget).toEqual({ maxTurns: 2, maxTokens: 10_000, maxCostUsd: 0.5, maxWallclockMinutes: 10 });
    expect(record.budgetExceeded).toBe('maxTurns');
    expect(sim.requests).toHaveLength(2);
  });

  it("the spawn tool refuses an override above the agent's limit with a tool error the model reads; nothing starts", async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups, {
      script: [
        { toolCalls: [{ name: 'spawn_background_agent', arguments: { task: 'survey', label: 'greedy', agent: 'scout', budget: { maxTurns: 40 } } }] },
        { content: 'It was refused.' },
      ],
    });
    // The spawn tool offers only the caller's agentTools.
    const session = new AgentSession({ config: { ...base(root, sim.url), agentTools: ['scout'] }, closeExecutor: true });
    cleanups.add(() => session.close({ timeoutMs: 2_000 }));
    const turn = await session.submit('Spawn a scout with 40 turns.');
    expect(turn.answer).toBe('It was refused.');
    expect(session.manager.jobs()).toHaveLength(0);
    expect(toolMessagesOf(sim.requests[1]!.body)[0]).toMatch(
      /^Error: .*budget\.maxTurns: agent "scout" may use at most 4 model calls per job; the spawn asked for 40/,
    );
    sim.assertScriptDone();
  });
});

describe('BudgetMeter (the worker side, by itself)', () => {
  it('sends the wrap-up once however long the job goes on past 90%', () => {
    let now = 0;
    const meter = new BudgetMeter({ maxTokens: 100 }, { models: {} }, {}, () => now);
    const usage = { promptTokens: 45, completionTokens: 0, totalTokens: 45, requests: 1 };
    meter.record('m', usage);
    expect(meter.wrapUp()).toBeUndefined();
    meter.record('m', usage);
    expect(meter.wrapUp()).toMatch(/maxTokens budget of 100 tokens/);
    expect(meter.wrapUp()).toBeUndefined();
    now += 1;
    expect(meter.exhausted()).toBeUndefined();
    meter.record('m', usage);
    expect(meter.exhausted()).toBe('maxTokens');
    expect(meter.wrapUp()).toBeUndefined();
  });
});
