/**
 * AgentSession end to end: the parent on this thread, its background jobs in the real Piscina
 * pool, the sim on loopback as the model. Follow-ups are counted from events; sequencing uses
 * events and an explicit file signal, never sleeps.
 */
import { getEventListeners } from 'node:events';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AgentSession, type SessionEvents } from '../../../src/main/session/agent-session.js';
import type { Executor } from '../../../src/main/executors/executor.js';
import type { ForkpoolConfig } from '../../../src/shared/config.js';
import { BACKGROUND_FOLLOWUP_PROMPT, BACKGROUND_RESULTS_OPEN, FOLLOW_UP_PROMPTS } from '../../../src/shared/prompts.js';
import { totalUsage } from '../../../src/shared/usage.js';
import type { RecordedRequest, SimServer } from '../../../src/sim/index.js';
import { useCleanup, RESEARCH_TASK, fixtureExecutor, makeConfig, makeWorkspace, nextEvent, startSim, startedJob, watchManager } from '../../helpers/index.js';

const cleanups = useCleanup();

function makeSession(config: ForkpoolConfig, executor?: Executor): AgentSession {
  const session = new AgentSession({ config, closeExecutor: true, ...(executor ? { executor } : {}) });
  watchManager(session.manager);
  cleanups.add(() => session.close({ timeoutMs: 2_000 }));
  return session;
}

type TurnEvent = SessionEvents['turn-result'][0];
function turnLog(session: AgentSession): TurnEvent[] {
  const turns: TurnEvent[] = [];
  session.on('turn-result', (t) => turns.push(t));
  return turns;
}

/** Text of the last message of a recorded request, when it is a user message. */
function lastUserText(request: RecordedRequest): string | undefined {
  const last = (request.body.messages as Array<{ role: string; content: unknown }>).at(-1);
  return last?.role === 'user' && typeof last.content === 'string' ? last.content : undefined;
}

function requestsWithResults(sim: SimServer): RecordedRequest[] {
  return sim.requests.filter((r) => lastUserText(r)?.includes(BACKGROUND_RESULTS_OPEN));
}

const THREE_QUESTIONS = [
  'Please research these for me:',
  '1. Where is the retry backoff implemented?',
  '2. Where is the LruCache class defined?',
  '3. What does the README say about the demo workspace?',
].join('\n');

describe('AgentSession', () => {
  it('fans out one wave, then runs exactly one follow-up that names every job', async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups);
    const session = makeSession(makeConfig(sim, root));
    const turns = turnLog(session);
    const followUps: Array<SessionEvents['follow-up'][0]> = [];
    session.on('follow-up', (f) => followUps.push(f));

    const first = await session.submit(THREE_QUESTIONS);
    expect(first.turn).toBe(1);
    expect(first.answer).toMatch(/I started 3 background agents/);
    const jobs = session.manager.jobs();
    expect(jobs).toHaveLength(3);
    expect(jobs.every((j) => j.wave === 1 && j.role === 'primary')).toBe(true);

    await session.onIdle();
    expect(turns.filter((t) => t.followUp)).toHaveLength(1);
    expect(followUps).toEqual([{ reason: 'wave', queued: expect.any(Boolean) }]);
    const followUp = turns.find((t) => t.followUp);
    expect(followUp?.turn).toBe(2);

    const ended = session.manager.jobs();
    expect(ended.every((j) => j.state === 'ended' && j.status === 'ok' && j.deliveredInTurn === 2)).toBe(true);
    // The follow-up's user message carries the block (and the fixed prompt), once.
    const withResults = requestsWithResults(sim);
    expect(withResults).toHaveLength(1);
    const block = lastUserText(withResults[0] as RecordedRequest) as string;
    expect(block).toContain(BACKGROUND_FOLLOWUP_PROMPT);
    for (const job of ended) {
      expect(block).toContain(`[Background agent "${job.label}" completed`);
      expect(followUp?.answer).toContain(job.label);
    }
    expect(followUp?.answer).toMatch(/^Here is what the 3 background agents found:/);

    // Job usage is booked under primary:subagent, and is the sum of the jobs' usage.
    const booked = totalUsage(session.agent.session.usage()['primary:subagent'] ?? {});
    expect(booked.totalTokens).toBeGreaterThan(0);
    expect(booked.totalTokens).toBe(ended.reduce((sum, j) => sum + totalUsage(j.usage).totalTokens, 0));
    expect(totalUsage(session.agent.session.usage()['primary'] ?? {}).totalTokens).toBeGreaterThan(0);

    await session.close();
    expect(session.manager.executor.threadCount()).toBe(0);
    expect(session.busy).toBe(false);
  });

  it("delivers a user's job in its own follow-up while an agent wave is still running", async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups);
    const config = makeConfig(sim, root, { maxConcurrent: 3, cancelGraceMs: 100 });
    const session = makeSession(config, fixtureExecutor(config, cleanups));
    const turns = turnLog(session);
    const followUps: Array<SessionEvents['follow-up'][0]> = [];
    session.on('follow-up', (f) => followUps.push(f));

    // The plausible agent spawns one job per line; the fixture keeps them running until stopped.
    await session.submit('1. FAULT:ignore_cancel alpha\n2. FAULT:ignore_cancel beta');
    const wave = session.manager.jobs();
    expect(wave).toHaveLength(2);
    await Promise.all(wave.map((j) => startedJob(session.manager, j.id)));

    let waveStatesAtFollowUp: string[] = [];
    const followUpDone = nextEvent<SessionEvents, 'turn-result'>(session, 'turn-result', (t) => {
      if (!t.followUp) return false;
      waveStatesAtFollowUp = wave.map((j) => session.manager.get(j.id)?.state ?? 'missing');
      return true;
    });
    const delivered = nextEvent<SessionEvents, 'delivered'>(session, 'delivered');
    const user = session.startUserJob(RESEARCH_TASK, 'user research');
    const [[turn], [delivery]] = await Promise.all([followUpDone, delivered]);

    expect(waveStatesAtFollowUp).toEqual(['running', 'running']);
    expect(delivery.jobs.map((j) => j.id)).toEqual([user.id]);
    expect(delivery.turn).toBe(turn.turn);
    expect(turn.answer).toContain('user research');
    expect(followUps).toEqual([{ reason: 'user-job', queued: false }]);
    expect(turns.filter((t) => t.followUp)).toHaveLength(1);
    // The person started it: the prompt does not say the parent's agents have finished.
    const input = lastUserText(requestsWithResults(sim).at(-1) as RecordedRequest) as string;
    expect(input).toContain(FOLLOW_UP_PROMPTS.user);
    expect(input).not.toContain('agents you started');
    expect(totalUsage(session.agent.session.usage()['user:subagent'] ?? {}).totalTokens).toBeGreaterThan(0);

    const report = await session.close({ timeoutMs: 5_000 });
    expect(report.cancelled.sort()).toEqual(wave.map((j) => j.id).sort());
    expect(
      session.manager
        .jobs()
        .filter((j) => j.role === 'primary')
        .every((j) => j.status === 'cancelled'),
    ).toBe(true);
    expect(session.manager.executor.threadCount()).toBe(0);
  });

  it('runs one follow-up for a wave whose jobs all ended during the spawning turn', async () => {
    const root = await makeWorkspace(cleanups);
    const flag = join(root, 'release-the-turn');
    // Scripted parent: spawn two quick fixture jobs, then block in bash until the test says so.
    const sim = await startSim(cleanups, {
      script: [
        {
          toolCalls: [
            { name: 'spawn_background_agent', arguments: { task: 'FAULT:slow:10 one', label: 'one' } },
            { name: 'spawn_background_agent', arguments: { task: 'FAULT:slow:10 two', label: 'two' } },
          ],
        },
        { toolCalls: [{ name: 'bash', arguments: { command: `while [ ! -f '${flag}' ]; do sleep 0.02; done; echo released` } }] },
        { content: 'Turn one is over.' },
        { content: 'Both background agents reported.' },
      ],
    });
    const config = makeConfig(sim, root, {}, { grantedTools: ['bash'] });
    const session = makeSession(config, fixtureExecutor(config, cleanups));
    const order: string[] = [];
    const turns = turnLog(session);
    session.on('turn-result', (t) => order.push(`turn ${t.turn}`));
    let doneCount = 0;
    session.manager.on('done', (job) => {
      order.push(`done ${job.label}`);
      // Both jobs ended while turn 1 is still running: now let the turn finish.
      if (++doneCount === 2) void writeFile(flag, 'go');
    });

    const first = await session.submit('Research two things in the background.');
    expect(first.answer).toBe('Turn one is over.');
    await session.onIdle();

    expect(order.slice(0, 3).sort()).toEqual(['done one', 'done two', 'turn 1']);
    expect(order.indexOf('turn 1')).toBe(2);
    expect(turns.filter((t) => t.followUp)).toHaveLength(1);
    expect(turns.map((t) => t.turn)).toEqual([1, 2]);
    // Turn 1's requests carried no results (the jobs ended after its start); the follow-up's did.
    const withResults = requestsWithResults(sim);
    expect(withResults.map((r) => r.n)).toEqual([4]);
    const block = lastUserText(withResults[0] as RecordedRequest) as string;
    expect(block).toContain('[Background agent "one" completed');
    expect(block).toContain('[Background agent "two" completed');
    expect(session.manager.jobs().map((j) => j.deliveredInTurn)).toEqual([2, 2]);
    sim.assertScriptDone();
  });

  it('submits queue behind a running turn and each resolves with its own result', async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups, { script: [{ content: 'first answer' }, { content: 'second answer' }] });
    const session = makeSession(makeConfig(sim, root));
    const [a, b] = await Promise.all([session.submit('one'), session.submit('two')]);
    expect([a.turn, a.answer]).toEqual([1, 'first answer']);
    expect([b.turn, b.answer]).toEqual([2, 'second answer']);
    await session.onIdle();
    sim.assertScriptDone();
  });
  it("leaves no abort listener on the caller's signal once a turn settles, however many turns share it", async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups, { script: [{ content: 'a' }, { content: 'b' }, { content: 'c' }, { content: 'd' }] });
    const session = makeSession(makeConfig(sim, root));
    const chat = new AbortController();
    for (const input of ['one', 'two', 'three']) {
      await session.submit(input, { signal: chat.signal });
      expect(getEventListeners(chat.signal, 'abort')).toHaveLength(0);
    }
    // A turn taken off the queue by its signal settles too (rejected): no listener stays behind.
    const turn = new AbortController();
    const first = session.submit('four', { signal: chat.signal });
    const queued = session.submit('five', { signal: turn.signal });
    turn.abort('changed my mind');
    await expect(queued).rejects.toMatchObject({ code: 'ABORTED' });
    await first;
    expect(getEventListeners(chat.signal, 'abort')).toHaveLength(0);
    expect(getEventListeners(turn.signal, 'abort')).toHaveLength(0);
    await session.onIdle();
    sim.assertScriptDone();
  });
});
