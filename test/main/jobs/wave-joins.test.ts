/**
 * Wave joins (docs/delivery.md "Wave joins"): a wave's follow-up by quorum (config) or at a deadline (the
 * spawn tool's `join`, timer driven by hand), through the real pool and session. Every job must
 * reach the parent exactly once: the early follow-up carries what has ended and lists what is
 * still running; the rest come once, in a later follow-up.
 */
import { describe, expect, it } from 'vitest';
import { AgentSession, type SessionEvents } from '../../../src/main/session/agent-session.js';
import type { JobScheduler } from '../../../src/main/jobs/manager.js';
import type { ForkpoolConfig } from '../../../src/shared/config.js';
import type { RecordedRequest, ScriptStep } from '../../../src/sim/index.js';
import { FOLLOW_UP_PROMPTS } from '../../../src/shared/prompts.js';
import { ChatController } from '../../../src/tui/controller.js';
import { useCleanup, ManualScheduler, ended, fixtureExecutor, makeConfig, makeWorkspace, nextEvent, startSim, watchManager } from '../../helpers/index.js';

const cleanups = useCleanup();

function makeSession(config: ForkpoolConfig, scheduler?: JobScheduler): AgentSession {
  const session = new AgentSession({ config, closeExecutor: true, executor: fixtureExecutor(config, cleanups), ...(scheduler ? { scheduler } : {}) });
  watchManager(session.manager);
  cleanups.add(() => session.close({ timeoutMs: 2_000 }));
  return session;
}

/** The parent's script: one turn spawning `jobs`, then a short answer per later turn. */
function parentScript(jobs: Array<{ task: string; label: string; join?: object }>, laterTurns: number): ScriptStep[] {
  return [
    { toolCalls: jobs.map((j) => ({ name: 'spawn_background_agent', arguments: { task: j.task, label: j.label, ...(j.join ? { join: j.join } : {}) } })) },
    { content: 'Spawned.' },
    ...Array.from({ length: laterTurns }, (_, i) => ({ content: `Follow-up ${i + 1} read.` })),
  ];
}

/** The last user message of a request: the turn's input with its delivered blocks. */
function lastUserText(request: RecordedRequest | undefined): string {
  const last = (request?.body.messages as Array<{ role: string; content: unknown }> | undefined)?.at(-1);
  return last?.role === 'user' && typeof last.content === 'string' ? last.content : '';
}

/** The chat's one-line notices of follow-up turns (what `forkpool run` prints too: followUpNotice). */
function followUpNotices(session: AgentSession): () => string[] {
  const chat = new ChatController({ session, closeTimeoutMs: 2_000 });
  return () => chat.entries.filter((e) => e.kind === 'notice' && e.text.includes('follow-up turn')).map((e) => e.text);
}

/** Which jobs each turn delivered, and every delivery in order. */
function deliveries(session: AgentSession): Array<{ turn: number; labels: string[] }> {
  const log: Array<{ turn: number; labels: string[] }> = [];
  session.on('delivered', ({ turn, jobs }) => log.push({ turn, labels: jobs.map((j) => j.label).sort() }));
  return log;
}

/**
 * Each job delivered once: in the session's `delivered` events, and in what the model was shown
 * (its result header across the turns' inputs, the first request of each turn).
 */
function expectEachOnce(log: Array<{ labels: string[] }>, requests: readonly RecordedRequest[], labels: string[]): void {
  const all = log.flatMap((d) => d.labels).sort();
  expect(all).toEqual([...labels].sort());
  const shown = requests.flatMap((r) => [...lastUserText(r).matchAll(/\[Background agent "([^"]+)"/g)].map((m) => m[1])).sort();
  expect(shown).toEqual([...labels].sort());
}

describe('wave joins', () => {
  it('quorum (config): a follow-up once k of n ended, listing the rest; the rest come later, once', async () => {
    const root = await makeWorkspace(cleanups);
    const jobs = [
      { task: 'FAULT:slow:10 first', label: 'first' },
      { task: 'FAULT:slow:10 second', label: 'second' },
      { task: 'FAULT:ignore_cancel third', label: 'third' },
    ];
    const sim = await startSim(cleanups, { script: parentScript(jobs, 2) });
    const config = makeConfig(sim, root, { join: { quorum: 2 } });
    const session = makeSession(config);
    const notices = followUpNotices(session);
    const delivered = deliveries(session);
    const turns: Array<SessionEvents['turn-result'][0]> = [];
    session.on('turn-result', (t) => turns.push(t));
    const joined: string[][] = [];
    session.manager.on('wave-joined', (e) => joined.push(e.pending.map((j) => j.label)));

    const earlyFollowUp = nextEvent<SessionEvents, 'turn-result'>(session, 'turn-result', (t) => t.followUp);
    await session.submit('Research three things in the background.');
    await earlyFollowUp;
    expect(joined).toEqual([['third']]);
    expect(delivered).toEqual([{ turn: 2, labels: ['first', 'second'] }]);
    // The early follow-up's input: the two results, and the third listed as still running.
    const early = lastUserText(sim.requests[2]);
    expect(early).toContain('[Background agent "first" completed');
    expect(early).toContain('[Background agent "second" completed');
    expect(early).not.toContain('[Background agent "third"');
    expect(early).toMatch(/Still running from turn 1's wave[^\n]*\n- job bg-\d+ "third"/);
    // A part of the wave: the prompt and the notice say so, not that the agents have finished.
    expect(early).toContain(FOLLOW_UP_PROMPTS.partial);
    expect(early).not.toContain(FOLLOW_UP_PROMPTS.agents);
    expect(notices()).toEqual(["… quorum reached in turn 1's wave (2 of 3 ended): follow-up turn 2"]);

    const third = session.manager.jobs().find((j) => j.label === 'third');
    session.cancel(third?.id as string);
    await ended(session.manager, third?.id as string);
    await session.onIdle();
    expect(turns.map((t) => [t.turn, t.followUp])).toEqual([
      [1, false],
      [2, true],
      [3, true],
    ]);
    expect(delivered).toEqual([
      { turn: 2, labels: ['first', 'second'] },
      { turn: 3, labels: ['third'] },
    ]);
    expectEachOnce(delivered, sim.requests, ['first', 'second', 'third']);
    // Listed once: the later follow-up does not list it again.
    expect(lastUserText(sim.requests[3])).not.toContain('Still running');
    // The wave's end: now its agents have all finished.
    expect(lastUserText(sim.requests[3])).toContain(FOLLOW_UP_PROMPTS.agents);
    expect(notices()[1]).toBe("… turn 1's wave finished: follow-up turn 3");
    sim.assertScriptDone();
  });

  it("deadline (the spawn tool's join): nothing early before it, then what has ended; the rest later, once", async () => {
    const root = await makeWorkspace(cleanups);
    const join = { deadlineSeconds: 120 };
    const jobs = [
      { task: 'FAULT:slow:10 quick', label: 'quick', join },
      { task: 'FAULT:ignore_cancel slow-a', label: 'slow-a' },
      { task: 'FAULT:ignore_cancel slow-b', label: 'slow-b' },
    ];
    const sim = await startSim(cleanups, { script: parentScript(jobs, 2) });
    // Only the wave deadline is in the test's hand; job timers run for real.
    const scheduler = new ManualScheduler(['timeout', 'cancel-grace', 'port-close']);
    const session = makeSession(makeConfig(sim, root), scheduler);
    const notices = followUpNotices(session);
    const delivered = deliveries(session);
    const turns: Array<SessionEvents['turn-result'][0]> = [];
    session.on('turn-result', (t) => turns.push(t));

    await session.submit('Research three things in the background.');
    const quick = session.manager.jobs().find((j) => j.label === 'quick');
    await ended(session.manager, quick?.id as string);
    // One of three ended, no quorum, deadline not reached: no follow-up yet.
    const deadlines = scheduler.find('wave-deadline');
    expect(deadlines).toHaveLength(1);
    expect(turns).toHaveLength(1);
    expect(session.deliveries.undeliveredCount).toBe(1);

    const earlyFollowUp = nextEvent<SessionEvents, 'turn-result'>(session, 'turn-result', (t) => t.followUp);
    scheduler.fire(deadlines[0] as number);
    await earlyFollowUp;
    expect(delivered).toEqual([{ turn: 2, labels: ['quick'] }]);
    const early = lastUserText(sim.requests[2]);
    expect(early).toContain('[Background agent "quick" completed');
    expect(early).toMatch(/Still running from turn 1's wave[^\n]*\n- job bg-\d+ "slow-a"\n- job bg-\d+ "slow-b"/);
    expect(early).toContain(FOLLOW_UP_PROMPTS.partial);
    expect(notices()).toEqual(["… join deadline passed for turn 1's wave (1 of 3 ended): follow-up turn 2"]);

    for (const job of session.manager.jobs().filter((j) => j.label.startsWith('slow'))) session.cancel(job.id);
    await session.onIdle();
    expect(turns.map((t) => t.followUp)).toEqual([false, true, true]);
    expect(delivered).toEqual([
      { turn: 2, labels: ['quick'] },
      { turn: 3, labels: ['slow-a', 'slow-b'] },
    ]);
    expectEachOnce(delivered, sim.requests, ['quick', 'slow-a', 'slow-b']);
    expect(scheduler.find('wave-deadline')).toHaveLength(0);
    sim.assertScriptDone();
  });

  it('refuses a join that says nothing, as a tool error naming the field', async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups, {
      script: [{ toolCalls: [{ name: 'spawn_background_agent', arguments: { task: 'FAULT:slow:10 x', label: 'x', join: { quorum: 0 } } }] }, { content: 'ok' }],
    });
    const session = makeSession(makeConfig(sim, root));
    await session.submit('go');
    const toolMessage = (sim.requests[1]?.body.messages as Array<{ role: string; content: string }>).find((m) => m.role === 'tool');
    expect(toolMessage?.content).toMatch(/join/);
    expect(toolMessage?.content).toMatch(/quorum/);
    expect(session.manager.jobs()).toHaveLength(0);
  });
});
