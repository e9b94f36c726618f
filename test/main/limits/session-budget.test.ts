/**
 * The session-pooled budget with admission (issue 10 §2), through the real pool: each spawn
 * leases its budget from `sessionBudget`; one the pool cannot cover is refused with a reason
 * the model reads, or queued until leases return; unspent leases return when jobs end; and a
 * fan-out that would overspend stops at the pool with every refused task reported.
 */
import path from 'node:path';
import { writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { AgentSession } from '../../../src/main/session/agent-session.js';
import type { ScriptStep } from '../../../src/sim/index.js';
import {
  toolMessagesOf,
  describeResult,
  parseJsonLines,
  runCli,
  useCleanup,
  ended,
  makeConfig,
  makeManager,
  makeWorkspace,
  recordEvents,
  startSim,
  configError,
  tempWorkspace,
  requireBuiltCli,
} from '../../helpers/index.js';
import { parseConfig } from '../../../src/shared/config.js';
import { statusText } from '../../../src/cli/progress.js';
import { describePool } from '../../../src/main/limits/budget-pool.js';

const cleanups = useCleanup();
/** Jobs here make up to a dozen sequential model calls in worker threads: a loaded machine needs more than the default minute. */
const POOL_TEST_TIMEOUT_MS = 150_000;

requireBuiltCli();

/** $1,000 per million tokens each way: a 200-token answer costs $0.20. */
const PRICED = { models: { 'forkpool-sim': { inputUsdPerMTok: 1_000, outputUsdPerMTok: 1_000 } } };
const cheapAnswers = (n: number): ScriptStep[] =>
  Array.from({ length: n }, () => ({ content: 'answer', usage: { prompt_tokens: 150, completion_tokens: 50 } }));

describe('sessionBudget: refuse', { timeout: POOL_TEST_TIMEOUT_MS }, () => {
  it('refuses a spawn the pool cannot cover, with the reason; unspent leases return when jobs end (actual spend charged)', async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups, { script: cheapAnswers(3), latencyMs: 50 });
    const config = makeConfig(sim, root, {}, { ...PRICED, sessionBudget: { maxCostUsd: 2.5, onExhausted: 'refuse' } });
    const manager = makeManager(config, cleanups);
    const a = manager.spawn({ task: 'a', label: 'a' });
    const b = manager.spawn({ task: 'b', label: 'b' });
    // Two $1.00 leases out of $2.50: $0.50 left for a job that may spend $1.00.
    expect(() => manager.spawn({ task: 'c', label: 'c' })).toThrow(
      expect.objectContaining({
        code: 'SESSION_BUDGET_EXHAUSTED',
        message: expect.stringContaining(
          "$0.50 free in this session's background budget ($2.50 unspent, $2.00 of it held by running jobs); this job may spend up to $1.00",
        ),
      }),
    );
    expect(manager.budgetPool()).toMatchObject({ remainingUsd: 0.5, leasedUsd: 2, leases: 2 });
    // A tighter budget fits what is left.
    const small = manager.spawn({ task: 'small', label: 'small', budget: { maxCostUsd: 0.4 } });
    await Promise.all([a, b, small].map((job) => ended(manager, job.id)));
    // Each spent $0.20; the rest of each lease came back: 2.50 − 0.60 = 1.90.
    expect(manager.budgetPool()).toMatchObject({ leases: 0, spentUsd: 0.6, remainingUsd: 1.9 });
    sim.setOptions({ script: cheapAnswers(1) });
    const c = manager.spawn({ task: 'c', label: 'c' });
    expect((await ended(manager, c.id)).status).toBe('ok');
  });

  it('the spawn tool hands the refusal to the model as a tool error, and list_background_agents shows the pool', async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups, {
      latencyMs: 300,
      script: [
        {
          toolCalls: [
            { name: 'spawn_background_agent', arguments: { task: 'one', label: 'one' } },
            { name: 'spawn_background_agent', arguments: { task: 'two', label: 'two' } },
            { name: 'list_background_agents', arguments: {} },
          ],
        },
        { content: 'One started, one refused.' },
        ...cheapAnswers(1),
        { content: 'Done.' },
      ],
    });
    const config = makeConfig(sim, root, {}, { ...PRICED, sessionBudget: { maxCostUsd: 1.5 } });
    const session = new AgentSession({ config, closeExecutor: true });
    cleanups.add(() => session.close({ timeoutMs: 2_000 }));
    await session.submit('Start two jobs.');
    const [spawned, refused, listed] = toolMessagesOf(sim.requests[1]!.body);
    expect(spawned).toMatch(/^Started background agent bg-1/);
    expect(refused).toMatch(
      /^Error: .*\$0\.50 free in this session's background budget \(\$1\.50 unspent, \$1\.00 of it held by running jobs\); this job may spend up to \$1\.00/,
    );
    expect(listed).toMatch(/^Session budget: \$0\.50 of \$1\.50 left \(1 job\(s\) hold leases\)\./);
    expect(listed).toMatch(/bg-1 .*budget: turns \d+\/50, tokens \d+, cost \$\d\.\d\d\/\$1\.00, wall [\d.]+\/10 min/);
    await session.onIdle();
    expect(session.manager.jobs()).toHaveLength(1);
  });
});

describe('sessionBudget: queue', { timeout: POOL_TEST_TIMEOUT_MS }, () => {
  it('queues a spawn until leases return, then runs it; a budget the pool can never cover is refused at once', async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups, { script: cheapAnswers(3), latencyMs: 50 });
    const config = makeConfig(sim, root, { maxConcurrent: 10 }, { ...PRICED, sessionBudget: { maxCostUsd: 2.5, onExhausted: 'queue' } });
    const manager = makeManager(config, cleanups);
    const log = recordEvents(manager);
    const jobs = ['a', 'b', 'c'].map((task) => manager.spawn({ task, label: task }));
    expect(manager.get(jobs[2]!.id)?.state).toBe('queued');
    const records = await Promise.all(jobs.map((job) => ended(manager, job.id)));
    for (const record of records) expect(record.status).toBe('ok');
    // c started only after a lease came back: after a job's end.
    const cStarted = log.findIndex((e) => e.type === 'started' && e.id === jobs[2]!.id);
    const firstDone = log.findIndex((e) => e.type === 'done');
    expect(cStarted).toBeGreaterThan(firstDone);
    // A pool of $0.50 can never cover a $1.00 job: refused now, not queued forever.
    const tiny = makeManager(makeConfig(sim, root, {}, { ...PRICED, sessionBudget: { maxCostUsd: 0.5, onExhausted: 'queue' } }), cleanups);
    expect(() => tiny.spawn({ task: 'x', label: 'x' })).toThrow(expect.objectContaining({ code: 'SESSION_BUDGET_EXHAUSTED' }));
  });
});

describe('sessionBudget through forkpool fanout', { timeout: POOL_TEST_TIMEOUT_MS }, () => {
  it('a fan-out that would overspend stops at the pool: every task is either run or reported refused, nothing lost', async () => {
    const root = await makeWorkspace(cleanups);
    // A model that never stops: each job runs until its own $1.00 is spent (partial).
    const sim = await startSim(cleanups, { endlessToolCalls: true });
    writeFileSync(
      path.join(root, 'forkpool.config.json'),
      JSON.stringify({ baseUrl: sim.url, ...PRICED, background: { maxConcurrent: 4 }, sessionBudget: { maxCostUsd: 2.5, onExhausted: 'refuse' } }),
    );
    const lines = Array.from({ length: 8 }, (_, i) => JSON.stringify({ task: `survey part ${i + 1}` })).join('\n') + '\n';
    const r = await runCli(['fanout', '--no-progress', '-'], { cwd: root, input: lines, cleanup: cleanups, timeoutMs: 120_000 });
    expect(r.timedOut, describeResult(r)).toBe(false);
    const records = parseJsonLines(r.stdout);
    expect(records.map((x) => x.line).sort((x, y) => Number(x) - Number(y))).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    const ran = records.filter((x) => x.status !== 'refused');
    const refused = records.filter((x) => x.status === 'refused');
    // Two $1.00 leases fit in $2.50; each job spends at least $1.00, so no third ever fits.
    expect(ran).toHaveLength(2);
    for (const job of ran) expect(job).toMatchObject({ status: 'partial', budgetExceeded: 'maxCostUsd' });
    expect(refused).toHaveLength(6);
    for (const job of refused)
      expect(job).toMatchObject({
        error: {
          code: 'SESSION_BUDGET_EXHAUSTED',
          message: expect.stringMatching(/free in this session's background budget.*; this job may spend up to \$1\.00/),
        },
      });
    expect(r.stderr).toMatch(/fanout: 0 ok, 2 partial, .* 6 refused/);
    expect(r.stderr).toMatch(/session budget: \$0\.\d\d of \$2\.50 left; spent \$2\.\d\d/);
    expect(r.code).toBe(1);
  });
});

describe('sessionBudget through forkpool fanout, onExhausted not set', { timeout: POOL_TEST_TIMEOUT_MS }, () => {
  it('waits for budget that running tasks hold instead of refusing: 16 tasks on a pool of two leases all run', async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups, { script: cheapAnswers(16), latencyMs: 20 });
    writeFileSync(
      path.join(root, 'forkpool.config.json'),
      // $100 per million tokens: each answer costs $0.02, 16 of them $0.32, well inside the pool.
      JSON.stringify({
        baseUrl: sim.url,
        models: { 'forkpool-sim': { inputUsdPerMTok: 100, outputUsdPerMTok: 100 } },
        background: { maxConcurrent: 4 },
        sessionBudget: { maxCostUsd: 2.5 },
      }),
    );
    const lines = Array.from({ length: 16 }, (_, i) => JSON.stringify({ task: `survey part ${i + 1}` })).join('\n') + '\n';
    const r = await runCli(['fanout', '--no-progress', '-'], { cwd: root, input: lines, cleanup: cleanups, timeoutMs: 120_000 });
    expect(r.code, describeResult(r)).toBe(0);
    const records = parseJsonLines(r.stdout);
    expect(records.filter((x) => x.status === 'ok')).toHaveLength(16);
    // Never more than two $1.00 leases out of $2.50 at once: the rest waited, none was refused.
    expect(r.stderr).toMatch(/fanout: 16 ok, .* 0 refused/);
    expect(r.stderr).toMatch(/session budget: \$\d\.\d\d of \$2\.50 left; spent \$\d\.\d\d/);
  });

  it("a refusal says what is free apart from what running jobs hold (not '$0.00 left' beside '$2.50 of $2.50 left')", async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups, { script: cheapAnswers(2), latencyMs: 50 });
    const manager = makeManager(makeConfig(sim, root, {}, { ...PRICED, sessionBudget: { maxCostUsd: 2.5, onExhausted: 'refuse' } }), cleanups);
    const jobs = ['a', 'b'].map((task) => manager.spawn({ task, label: task }));
    expect(() => manager.spawn({ task: 'c', label: 'c' })).toThrow(
      expect.objectContaining({
        message: expect.stringContaining("$0.50 free in this session's background budget ($2.50 unspent, $2.00 of it held by running jobs)"),
      }),
    );
    await Promise.all(jobs.map((job) => ended(manager, job.id)));
  });
});

describe('sessionBudget in the config and the CLI', { timeout: POOL_TEST_TIMEOUT_MS }, () => {
  it('names the field: a pool with no limit, a token pool without a per-job token limit, a bad budget value', () => {
    const workspaceRoot = tempWorkspace(undefined, cleanups);
    const base = { workspaceRoot, baseUrl: 'http://127.0.0.1:9/v1' };
    expect(configError(() => parseConfig({ ...base, sessionBudget: { onExhausted: 'queue' } })).issues).toEqual([
      { field: 'sessionBudget', expected: 'maxTokens, maxCostUsd or both', received: 'neither' },
    ]);
    expect(configError(() => parseConfig({ ...base, sessionBudget: { maxTokens: 1000 } })).issues[0]?.field).toBe('background.budget.maxTokens');
    expect(configError(() => parseConfig({ ...base, background: { budget: { maxTurns: 0 } } })).issues[0]).toMatchObject({
      field: 'background.budget.maxTurns',
      received: '0',
    });
    expect(configError(() => parseConfig({ ...base, agents: { scout: { description: 'd', budget: { maxCostUsd: -1 } } } })).issues[0]?.field).toBe(
      'agents.scout.budget.maxCostUsd',
    );
    expect(configError(() => parseConfig({ ...base, sessionBudget: { maxCostUsd: 1, onExhausted: 'wait' } })).issues[0]?.field).toBe(
      'sessionBudget.onExhausted',
    );
    expect(parseConfig({ ...base, background: { budget: { maxTokens: 5000 } }, sessionBudget: { maxTokens: 20000 } }).background.budget).toEqual({
      maxTurns: 50,
      maxTokens: 5000,
      maxCostUsd: 1,
      maxWallclockMinutes: 10,
    });
  });

  it("fanout's status line shows what is left of the pool", () => {
    const pool = describePool({
      maxCostUsd: 2.5,
      remainingUsd: 0.4,
      spentTokens: 0,
      spentUsd: 0.1,
      leasedTokens: 0,
      leasedUsd: 2,
      leases: 2,
      onExhausted: 'refuse',
    });
    expect(statusText({ read: 3, ended: 1, failed: 0, running: 2, queued: 0, startedAt: 0, now: 1000, pool })).toMatch(
      /\| session budget: \$0\.40 of \$2\.50 left \(2 job\(s\) hold leases\)$/,
    );
  });

  it("run's totals say the cost, the unpriced models and what is left of the pool", async () => {
    const cwd = tempWorkspace({ 'src/retry.ts': 'export const retryBackoff = 1;\n' }, cleanups);
    writeFileSync(
      path.join(cwd, 'forkpool.config.json'),
      JSON.stringify({ ...PRICED, agents: { scout: { description: 'd', model: 'scout-model' } }, agentTools: ['scout'], sessionBudget: { maxCostUsd: 3 } }),
    );
    const r = await runCli(['run', '--sim-latency', '0', 'Answer these: 1. Where is the retry backoff? 2. Scout: where is retryBackoff?'], {
      cwd,
      cleanup: cleanups,
      timeoutMs: 120_000,
    });
    expect(r.code, describeResult(r)).toBe(0);
    // The parent's and the forks' model is priced; the scout's is not, and the line says so.
    expect(r.stderr).toMatch(/^cost: \$\d+\.\d\d; no price in "models" \(tokens only\): scout-model$/m);
    expect(r.stderr).toMatch(/^session budget: \$\d\.\d\d of \$3\.00 left; spent \$\d\.\d\d, \d+ tokens$/m);
  });
});
