/**
 * The chat's rules without a screen: raw keys to chat keys, and quitting (the manager closes
 * within its bound, no follow-up turn starts while it does). The session is real: the parent on
 * this thread, jobs in the Piscina pool, the sim behind a holding proxy.
 */
import { describe, expect, it } from 'vitest';
import { AgentSession } from '../../src/main/session/agent-session.js';
import { BACKGROUND_PROMPT_MARKER } from '../../src/shared/prompts.js';
import { ChatController } from '../../src/tui/controller.js';
import { createModelClient } from '../../src/shared/model-call.js';
import { parseKeys } from '../../src/tui/keys.js';
import type { ManagerEvents } from '../../src/main/jobs/manager.js';
import type { ScriptStep } from '../../src/sim/index.js';
import {
  agentConfig,
  useCleanup,
  makeConfig,
  makeWorkspace,
  nextEvent,
  RESEARCH_TASK,
  startHoldingProxy,
  startSim,
  waitFor,
  watchManager,
} from '../helpers/index.js';

const cleanups = useCleanup();

describe('chat keys', () => {
  it('reads Enter, Ctrl+Enter in its three shapes, F3 and text, also when typed ahead in one chunk', () => {
    expect(parseKeys('\r')).toEqual([{ type: 'enter' }]);
    for (const ctrlEnter of ['\n', '\x1b[13;5u', '\x1b[27;5;13~']) expect(parseKeys(ctrlEnter)).toEqual([{ type: 'ctrl-enter' }]);
    for (const f3 of ['\x1bOR', '\x1b[13~']) expect(parseKeys(f3)).toEqual([{ type: 'f3' }]);
    expect(parseKeys('\x1b')).toEqual([{ type: 'escape' }]);
    expect(parseKeys('\x03')).toEqual([{ type: 'ctrl-c' }]);
    expect(parseKeys('hello\r')).toEqual([{ type: 'text', text: 'hello' }, { type: 'enter' }]);
    expect(parseKeys('task\n')).toEqual([{ type: 'text', text: 'task' }, { type: 'ctrl-enter' }]);
    // Other escape sequences and control characters never become text.
    expect(parseKeys('\x1b[1;2P')).toEqual([{ type: 'ignored' }]);
    expect(parseKeys('a\x07b')).toEqual([{ type: 'text', text: 'ab' }]);
  });
});

describe('chat quit', () => {
  it('closes the manager with jobs running and queued, starts no follow-up turn meanwhile, and says what it cancelled', async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups);
    // Jobs' model calls are held: they stay running (or queued behind them) until quit.
    const proxy = await startHoldingProxy(cleanups, sim.url, (body) => body.includes(BACKGROUND_PROMPT_MARKER));
    const session = new AgentSession({ config: makeConfig(undefined, root, { maxConcurrent: 1 }, { baseUrl: proxy.url }), closeExecutor: true });
    watchManager(session.manager);
    cleanups.add(() => session.close({ timeoutMs: 2_000 }));
    const chat = new ChatController({ session, closeTimeoutMs: 2_000 });
    const turnsStarted: number[] = [];
    session.on('parent', (e) => {
      if (e.type === 'turn_start') turnsStarted.push(e.turn);
    });

    chat.submitLine('/bg start where is the retry backoff?');
    chat.submitLine('/bg start where is the cache?');
    await waitFor(() => session.manager.count('running') === 1 && proxy.held() === 1, 'one job running (its model call held), one queued', {
      timeoutMs: 90_000,
    });
    const report = await chat.quit();

    expect(report.cancelled.sort()).toEqual(['bg-1', 'bg-2']);
    expect(report.stragglers).toEqual([]);
    expect(session.manager.jobs().map((j) => j.status)).toEqual(['cancelled', 'cancelled']);
    expect(chat.entries.at(-1)?.text).toBe('closed: 2 jobs cancelled');
    // The user jobs ended (by the close) with results undelivered: no turn may start for them.
    await session.onIdle();
    expect(turnsStarted).toEqual([]);
    // A second quit shares the first close.
    expect(await chat.quit()).toBe(report);
  }, 150_000);
});

describe('Esc during an agent_<name> call', () => {
  /**
   * A chat whose parent is scripted and whose scout jobs go through a holding proxy: `hold`
   * picks the job requests kept in flight, so a job is running exactly when the test presses Esc.
   */
  async function agentChat(script: ScriptStep[], hold: (body: string) => boolean) {
    const root = await makeWorkspace(cleanups);
    const jobsSim = await startSim(cleanups);
    const proxy = await startHoldingProxy(cleanups, jobsSim.url, hold);
    cleanups.add(() => proxy.release());
    const parentSim = await startSim(cleanups, { script });
    const config = agentConfig(jobsSim, root, { agentTools: ['scout'], grantedTools: ['bash'], baseUrl: proxy.url });
    const session = new AgentSession({
      config,
      closeExecutor: true,
      client: createModelClient({ baseUrl: parentSim.url, apiKey: 'k', requestTimeoutMs: 10_000 }),
    });
    watchManager(session.manager);
    cleanups.add(() => session.close({ timeoutMs: 2_000 }));
    return { session, proxy, parentSim, chat: new ChatController({ session, closeTimeoutMs: 2_000 }) };
  }

  it('a call still waiting for its job: the notice says that job is cancelled, by id, the job ends cancelled, and no model turn is spent on it', async () => {
    const { session, proxy, parentSim, chat } = await agentChat(
      [{ toolCalls: [{ id: 'call-1', name: 'agent_scout', arguments: { task: RESEARCH_TASK } }] }],
      () => true,
    );
    const followUps: string[] = [];
    session.on('follow-up', (e) => followUps.push(e.reason));
    const turn = chat.submitLine('Ask the scout.').turn;
    await waitFor(() => proxy.held() === 1, "the scout job's model call is in flight", { timeoutMs: 90_000 });
    const [job] = session.manager.jobs();
    const done = nextEvent<ManagerEvents, 'done'>(session.manager, 'done');
    expect(chat.cancelTurn()).toBe(true);
    await turn;
    const notice = chat.entries.filter((e) => e.kind === 'notice').at(-1)?.text;
    expect(notice).toBe(`⊘ turn 1 cancelled; its agent call's job ${job?.id} [scout] is cancelled with it`);
    expect(notice).not.toContain('running');
    const [record] = await done;
    expect(record).toMatchObject({ id: job?.id, status: 'cancelled' });
    // Issue 38: the call's tool error told the model and the notice told the person; its wave's end
    // starts no follow-up just to report the cancellation: the parent's model was called once.
    await session.onIdle();
    expect(followUps).toEqual([]);
    expect(parentSim.requests).toHaveLength(1);
    // What told the model: the stopped call is answered (with an error) in the kept conversation.
    expect(session.agent.session.messages.some((m) => m.role === 'tool' && m.tool_call_id === 'call-1')).toBe(true);
    expect(session.manager.get(job?.id as string)?.deliveredInTurn).toBe(1);
    expect(chat.entries.filter((e) => e.kind === 'notice' && e.text.includes('follow-up'))).toEqual([]);
  }, 150_000);

  it('a call that already returned early (backgrounded): the notice says its job keeps running', async () => {
    const flag = 'never-written';
    const { session, proxy, chat } = await agentChat(
      [
        { toolCalls: [{ id: 'call-bg', name: 'agent_scout', arguments: { task: RESEARCH_TASK, background: true } }] },
        // The turn goes on after the early return: it waits in bash until Esc.
        { toolCalls: [{ name: 'bash', arguments: { command: `while [ ! -f '${flag}' ]; do sleep 0.05; done` } }] },
      ],
      // The job's first call answers (its first text: the early return); the next is held, so it keeps running.
      (body) => body.includes('"role":"assistant"'),
    );
    const inBash = new Promise<void>((resolve) =>
      session.on('parent', (e) => (e.type === 'loop' && e.event.type === 'tool_call' && e.event.name === 'bash' ? resolve() : undefined)),
    );
    const turn = chat.submitLine('Ask the scout in the background.').turn;
    await inBash;
    const [job] = session.manager.jobs();
    expect(job).toMatchObject({ backgrounded: true });
    expect(job?.state).not.toBe('ended');
    expect(chat.cancelTurn()).toBe(true);
    await turn;
    expect(chat.entries.filter((e) => e.kind === 'notice').at(-1)?.text).toBe(`⊘ turn 1 cancelled; 1 background job keeps running (${job?.id}, backgrounded)`);
    // It was not cancelled: it still runs, its call held.
    await waitFor(() => proxy.held() === 1, 'its next model call is in flight', { timeoutMs: 90_000 });
    expect(session.manager.get(job?.id as string)?.state).toBe('running');
  }, 150_000);
});

describe('chat transcript of tool calls', () => {
  it("marks the parent's spawn calls (their events say background) and no other call", async () => {
    const root = await makeWorkspace(cleanups);
    const jobsSim = await startSim(cleanups);
    const parentSim = await startSim(cleanups, {
      script: [
        {
          toolCalls: [
            { id: 'spawn-1', name: 'spawn_background_agent', arguments: { task: 'Where is the retry backoff implemented?', label: 'retry' } },
            { id: 'list-1', name: 'list_dir', arguments: { path: '.' } },
          ],
        },
        { content: 'Started one job.' },
        { content: 'It answered.' },
      ],
    });
    const session = new AgentSession({
      config: makeConfig(jobsSim, root),
      closeExecutor: true,
      client: createModelClient({ baseUrl: parentSim.url, apiKey: 'k', requestTimeoutMs: 10_000 }),
    });
    cleanups.add(() => session.close({ timeoutMs: 2_000 }));
    const chat = new ChatController({ session, closeTimeoutMs: 2_000 });
    chat.submitLine('Look for the retry backoff.');
    await waitFor(() => parentSim.requests.length >= 3, 'the follow-up turn asked the model', { timeoutMs: 60_000 });
    await session.onIdle();
    const tools = chat.entries.filter((e) => e.kind === 'tool').map((e) => e.text);
    expect(tools).toHaveLength(2);
    expect(tools.find((t) => t.includes('spawn_background_agent'))).toMatch(/⇢ background$/);
    expect(tools.find((t) => t.includes('list_dir'))).not.toMatch(/background/);
    await chat.quit();
  });
});

describe('chat: a retry is a line in the transcript', () => {
  it('a rate-limited parent call shows who limited it, the wait and which try, then the answer', async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups, { script: [{ content: 'answered after the wait' }], faults: { 1: { kind: '429', retryAfterSeconds: 0.2 } } });
    const session = new AgentSession({ config: makeConfig(sim, root, {}, { maxRetries: 2 }), closeExecutor: true });
    watchManager(session.manager);
    cleanups.add(() => session.close({ timeoutMs: 2_000 }));
    const chat = new ChatController({ session, closeTimeoutMs: 2_000 });
    await chat.submitLine('hello').turn;
    const notices = chat.entries.filter((e) => e.kind === 'notice').map((e) => e.text);
    expect(notices).toContainEqual(expect.stringMatching(/^↻ rate limited by 127\.0\.0\.1:\d+, retrying in \d\.\d s \(1\/2\)$/));
    expect(chat.entries.filter((e) => e.kind === 'answer').map((e) => e.text)).toEqual(['answered after the wait']);
  }, 60_000);
});
