/**
 * Speculative jobs through the real pool on the sim: a guess the parent's turn did not refer to
 * is cancelled at the turn's end and never delivered; a guess it referred to (in its text, or a
 * job tool's arguments) is kept and delivered exactly once; a real job waiting for a slot, or
 * for the session budget, preempts a running guess; real jobs launch before queued guesses.
 */
import { describe, expect, it } from 'vitest';
import { AgentSession } from '../../../src/main/session/agent-session.js';
import { createModelClient } from '../../../src/shared/model-call.js';
import { BACKGROUND_RESULTS_OPEN } from '../../../src/shared/prompts.js';
import { listLines } from '../../../src/tui/jobs-view.js';
import { inspectTools } from '../../../src/main/session/inspect-tools.js';
import type { JobRecord } from '../../../src/main/ledger/ledger.js';
import {
  useCleanup,
  ended,
  makeConfig,
  makeManager,
  makeWorkspace,
  messagesOf,
  recordEvents,
  startSim,
  startedJob,
  toolMessagesOf,
} from '../../helpers/index.js';

const cleanups = useCleanup();
/** Jobs make sequential model calls in worker threads: a loaded machine needs more than the default. */
const POOL_TEST_TIMEOUT_MS = 150_000;
/** On the endless sim a job without a turn budget runs until it is stopped; with `maxTurns: 2` it ends (partial) after two model calls. */
const ENDS = { maxTurns: 2 };

describe('speculative jobs at the end of the turn', { timeout: POOL_TEST_TIMEOUT_MS }, () => {
  it('an unreferred guess is cancelled when the turn ends and never delivered; guesses referred to in text or a job tool are kept and delivered once', async () => {
    const root = await makeWorkspace(cleanups);
    // Every job's model answers with another tool call: a job stops only at its turn budget, or when cancelled.
    const jobsSim = await startSim(cleanups, { endlessToolCalls: true, latencyMs: 5 });
    const parentSim = await startSim(cleanups, {
      script: [
        {
          toolCalls: [
            { name: 'spawn_background_agent', arguments: { task: 'survey the cache code', label: 'guess a', name: 'guess-a', speculative: true } },
            {
              name: 'spawn_background_agent',
              arguments: { task: 'survey the retry code', label: 'guess b', name: 'guess-b', speculative: true, budget: ENDS },
            },
            {
              name: 'spawn_background_agent',
              arguments: { task: 'survey the queue code', label: 'guess d', name: 'guess-d', speculative: true, budget: ENDS },
            },
            { name: 'spawn_background_agent', arguments: { task: 'survey the docs', label: 'real r', budget: ENDS } },
          ],
        },
        // A job tool names guess-d: kept at once, before its result is asked for.
        { toolCalls: [{ name: 'check_background_agent', arguments: { job_id: 'guess-d' } }] },
        // The final text names guess-b; guess-a is never named.
        { content: 'I will use what guess-b finds, with the real survey.' },
        // The follow-up turn, once the wave has ended.
        { content: 'Done.' },
      ],
    });
    const config = makeConfig(jobsSim, root, { maxConcurrent: 4 });
    const session = new AgentSession({
      config,
      closeExecutor: true,
      client: createModelClient({ baseUrl: parentSim.url, apiKey: 'k', requestTimeoutMs: 10_000 }),
    });
    cleanups.add(() => session.close({ timeoutMs: 2_000 }));
    const delivered: string[] = [];
    session.on('delivered', ({ jobs }) => delivered.push(...jobs.map((job) => job.id)));

    await session.submit('Survey the code.');
    // The spawn tells the model the rule; a guess's spawn with a bad flag is a tool error.
    expect(toolMessagesOf(parentSim.requests[1]!.body)[0]).toMatch(
      /^Started speculative background agent (bg-\d+) \(name "guess-a"\).* It is cancelled, unreported, when this turn ends unless you refer to \1 or "guess-a" before then\./,
    );
    const byName = (name: string) => session.manager.find(name) as JobRecord;
    // Decided as the turn ended: nothing waits for the guess's thread to stop.
    expect(byName('guess-a').speculative).toBe('dropped');
    expect(byName('guess-b').speculative).toBe('kept');
    expect(byName('guess-d').speculative).toBe('kept');
    const real = session.manager.jobs().find((job) => job.label === 'real r') as JobRecord;
    expect(real.speculative).toBeUndefined();

    await session.onIdle();
    const a = byName('guess-a');
    expect(a).toMatchObject({ state: 'ended', status: 'cancelled', speculative: 'dropped', deliveredInTurn: 0 });
    expect(a.error?.message).toMatch(/^cancelled \(speculative, not referred to by the end of turn 1\)/);
    // Delivered exactly once each (the check or the follow-up), the dropped guess never.
    const kept = [byName('guess-b'), byName('guess-d'), session.manager.get(real.id) as JobRecord];
    for (const job of kept) {
      expect(job.state).toBe('ended');
      expect(job.deliveredInTurn).toBeGreaterThanOrEqual(1);
      // guess-d may have ended before its check, which then delivered it (in turn 1, no drain); else the follow-up (turn 2) did.
      const byCheck = job.deliveredInTurn === 1 ? 1 : 0;
      expect(delivered.filter((id) => id === job.id).length + byCheck, job.label).toBe(1);
    }
    expect(delivered).not.toContain(a.id);
    // The follow-up's results block has the kept ones and not the guess.
    const followUpInput = String(messagesOf(parentSim.requests[3]!).at(-1)?.content);
    expect(followUpInput).toContain(BACKGROUND_RESULTS_OPEN);
    expect(followUpInput).toContain('"guess b"');
    expect(followUpInput).toContain('"real r"');
    expect(followUpInput).not.toContain('"guess a"');
    expect(followUpInput).not.toMatch(new RegExp(`\\b${a.id}\\b`));
    parentSim.assertScriptDone();
    // /bg list shows the guess, as cancelled (speculative).
    expect(listLines(session.manager.jobs(), Date.now()).find((line) => line.startsWith(a.id))).toMatch(/cancelled \(speculative\)/);
    // ... and the parent's list and check say it was dropped, not delivered.
    const tools = inspectTools({
      manager: session.manager,
      deliveries: session.deliveries,
      activity: session.activity,
      currentTurn: () => 3,
      cooldownMs: 0,
      resultMaxChars: 2_000,
    });
    const run = (name: string, args: Record<string, unknown>) => tools.find((t) => t.name === name)!.run(args, {} as never);
    expect(await run('list_background_agents', {})).toContain(`- ${a.id} (name "guess-a", fork): ended cancelled (speculative: not needed, never delivered)`);
    expect(await run('check_background_agent', { job_id: 'guess-a' })).toMatch(/Result \(a speculative job dropped as not needed; it is never injected\)/);
    expect(session.manager.get(a.id)?.deliveredInTurn).toBe(0);
    // No follow-up was owed for the guess: the session is idle with nothing undelivered.
    expect(session.deliveries.undeliveredCount).toBe(0);
  });
});

describe('the speculative argument', { timeout: POOL_TEST_TIMEOUT_MS }, () => {
  it('a non-boolean is a tool error the model reads, and nothing starts', async () => {
    const root = await makeWorkspace(cleanups);
    const parentSim = await startSim(cleanups, {
      script: [
        { toolCalls: [{ name: 'spawn_background_agent', arguments: { task: 'survey the cache code', label: 'guess', speculative: 'yes' } }] },
        { content: 'It was refused.' },
      ],
    });
    const session = new AgentSession({
      config: makeConfig(parentSim, root),
      closeExecutor: true,
      client: createModelClient({ baseUrl: parentSim.url, apiKey: 'k', requestTimeoutMs: 10_000 }),
    });
    cleanups.add(() => session.close({ timeoutMs: 2_000 }));
    await session.submit('Survey the code.');
    expect(toolMessagesOf(parentSim.requests[1]!.body)[0]).toMatch(/^Error: invalid arguments for spawn_background_agent: .*speculative/s);
    expect(session.manager.jobs()).toHaveLength(0);
    parentSim.assertScriptDone();
  });
});

describe('speculative jobs give way to real ones', { timeout: POOL_TEST_TIMEOUT_MS }, () => {
  it('a real job waiting for the only slot preempts the running guess; a queued guess launches after the real job', async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups, { endlessToolCalls: true, latencyMs: 5 });
    const manager = makeManager(makeConfig(sim, root, { maxConcurrent: 1 }), cleanups);
    const log = recordEvents(manager);
    const guess = manager.spawn({ task: 'survey everything', label: 'guess', speculative: true });
    await startedJob(manager, guess.id);
    // Queued first, but a guess: the real job spawned after it still goes first.
    const queuedGuess = manager.spawn({ task: 'survey more', label: 'queued guess', speculative: true });
    const real = manager.spawn({ task: 'survey the docs', label: 'real', budget: ENDS });
    const preempted = await ended(manager, guess.id);
    expect(preempted).toMatchObject({ status: 'cancelled', speculative: 'dropped', deliveredInTurn: 0 });
    expect(preempted.error?.message).toMatch(new RegExp(`^cancelled \\(speculative, preempted: ${real.id} needed a slot\\)`));
    expect((await ended(manager, real.id)).status).toBe('partial');
    await startedJob(manager, queuedGuess.id);
    const at = (type: string, id: string) => log.findIndex((e) => e.type === type && e.id === id);
    // One slot: the guess's end came before the real job's start, and the real job started before the queued guess.
    expect(at('done', guess.id)).toBeLessThan(at('started', real.id));
    expect(at('started', real.id)).toBeLessThan(at('started', queuedGuess.id));
    // The real job's result waits for delivery; the dropped guess does not.
    expect(
      manager
        .jobs()
        .filter((job) => job.state === 'ended' && job.deliveredInTurn === undefined)
        .map((job) => job.id),
    ).toEqual([real.id]);
    expect(manager.parentControls.dropSpeculative(queuedGuess.id, 'speculative, not needed')).toBe(true);
    expect((await ended(manager, queuedGuess.id)).error?.message).toMatch(/^cancelled \(speculative, not needed\)/);
  });

  it('the session budget spends on real jobs first: a real job waiting for a lease preempts the guess holding one', async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups, { endlessToolCalls: true, latencyMs: 5 });
    // Each job leases its own $1.00; the pool of $1.50 holds one lease at a time. Cheap tokens: spend stays far below.
    const priced = { models: { 'forkpool-sim': { inputUsdPerMTok: 1, outputUsdPerMTok: 1 } } };
    const config = makeConfig(
      sim,
      root,
      { maxConcurrent: 4, budget: { maxCostUsd: 1 } },
      { ...priced, sessionBudget: { maxCostUsd: 1.5, onExhausted: 'queue' } },
    );
    const manager = makeManager(config, cleanups);
    const guess = manager.spawn({ task: 'survey everything', label: 'guess', speculative: true });
    await startedJob(manager, guess.id);
    const real = manager.spawn({ task: 'survey the docs', label: 'real', budget: ENDS });
    const preempted = await ended(manager, guess.id);
    expect(preempted.error?.message).toMatch(new RegExp(`^cancelled \\(speculative, preempted: ${real.id} needed the session budget\\)`));
    expect((await ended(manager, real.id)).status).toBe('partial');
  });

  it('a kept guess is an ordinary job: a real job waits for its slot instead of preempting it', async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups, { endlessToolCalls: true, latencyMs: 5 });
    const manager = makeManager(makeConfig(sim, root, { maxConcurrent: 1 }), cleanups);
    const guess = manager.spawn({ task: 'survey everything', label: 'guess', speculative: true, budget: ENDS });
    expect(manager.parentControls.keepSpeculative(guess.id)).toBe(true);
    expect(manager.parentControls.keepSpeculative(guess.id)).toBe(false);
    const real = manager.spawn({ task: 'survey the docs', label: 'real', budget: ENDS });
    const first = await ended(manager, guess.id);
    expect(first).toMatchObject({ status: 'partial', speculative: 'kept' });
    expect(first.deliveredInTurn).toBeUndefined();
    expect((await ended(manager, real.id)).status).toBe('partial');
    expect(() => manager.parentControls.keepSpeculative('bg-99')).toThrow(/no background job with id "bg-99"/);
  });
});
