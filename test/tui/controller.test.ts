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
import { useCleanup, makeConfig, makeWorkspace, startHoldingProxy, startSim, waitFor, watchManager } from '../helpers/index.js';

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
