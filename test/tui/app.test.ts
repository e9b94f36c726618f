/**
 * The chat's ink app with ink-testing-library, over a real AgentSession: the parent on this
 * thread, background jobs in the real Piscina pool, the sim as the model behind a holding proxy,
 * so "the model is busy" and "the jobs are running" last exactly as long as the test says (by
 * events, never by latency). Keys are written as the raw bytes a terminal sends.
 */
import { createElement } from 'react';
import { render } from 'ink-testing-library';
import { describe, expect, it } from 'vitest';
import { AgentSession } from '../../src/main/session/agent-session.js';
import type { ForkpoolConfigInput } from '../../src/shared/config.js';
import { BACKGROUND_PROMPT_MARKER, PRIMARY_PROMPT_MARKER } from '../../src/shared/prompts.js';
import type { SimServerOptions } from '../../src/sim/index.js';
import { ChatApp } from '../../src/tui/app.js';
import { ChatController } from '../../src/tui/controller.js';
import { useCleanup, makeConfig, makeWorkspace, startHoldingProxy, startSim, waitFor, watchManager, type HoldingProxy } from '../helpers/index.js';

const cleanups = useCleanup();

/** waitFor's bound: a safety net against a hang, generous because a loaded machine starts threads slowly. */
const SAFETY_NET = { timeoutMs: 90_000 };

const KEY = {
  enter: '\r',
  ctrlJ: '\n',
  kittyCtrlEnter: '\x1b[13;5u',
  escape: '\x1b',
  up: '\x1b[A',
  down: '\x1b[B',
  f3: '\x1bOR',
} as const;

interface Rig {
  chat: ChatController;
  session: AgentSession;
  proxy: HoldingProxy;
  frame: () => string;
  type: (text: string) => void;
  screen: (text: string | RegExp, what?: string) => Promise<string>;
}

/**
 * A chat whose model answers pass through a proxy that holds the chosen requests (`hold`) until
 * `proxy.release()`. Parent requests carry the primary prompt, jobs the background one.
 */
async function startChat(
  hold: (body: string) => boolean,
  options: { sim?: SimServerOptions; background?: ForkpoolConfigInput['background']; extra?: Partial<ForkpoolConfigInput>; ask?: boolean } = {},
): Promise<Rig> {
  const root = await makeWorkspace(cleanups);
  const sim = await startSim(cleanups, options.sim);
  const proxy = await startHoldingProxy(cleanups, sim.url, hold);
  const config = makeConfig(undefined, root, options.background ?? {}, {
    baseUrl: proxy.url,
    ...(options.ask ? { permissionMode: 'ask' } : {}),
    ...options.extra,
  });
  let chat: ChatController | undefined;
  const session = new AgentSession({
    config,
    closeExecutor: true,
    ...(options.ask ? { asker: (request) => (chat as ChatController).askPermission(request) } : {}),
  });
  watchManager(session.manager);
  chat = new ChatController({ session, closeTimeoutMs: 2_000 });
  const app = render(createElement(ChatApp, { chat }));
  cleanups.add(async () => {
    proxy.release();
    app.unmount();
    await session.close({ timeoutMs: 2_000 });
  });
  const frame = () => app.lastFrame() ?? '';
  // A whole frame, or the transcript (Static) written earlier: both count as "on screen".
  const everything = () => `${app.frames.join('\n')}`;
  return {
    chat,
    session,
    proxy,
    frame,
    type: (text) => app.stdin.write(text),
    screen: (text, what) =>
      waitFor(
        () => (typeof text === 'string' ? everything().includes(text) : text.test(everything())) && everything(),
        what ?? `the screen to show ${String(text)}\n--- last frame ---\n${frame()}`,
        SAFETY_NET,
      ),
  };
}

const isParent = (body: string) => body.includes(PRIMARY_PROMPT_MARKER);
const isJob = (body: string) => body.includes(BACKGROUND_PROMPT_MARKER);

describe('chat app: keys while the model is busy', { timeout: 240_000 }, () => {
  it('Enter while busy shows the hint and spawns nothing; Ctrl+J and Ctrl+Enter (kitty) spawn user jobs, not wave-gated', async () => {
    const t = await startChat(isParent);
    t.type('Where is the retry backoff implemented?');
    await t.screen('Where is the retry backoff implemented?');
    t.type(KEY.enter);
    await waitFor(() => t.proxy.held() === 1, 'the parent request held', SAFETY_NET);
    await t.screen('◐ turn 1');

    t.type('a side question');
    await t.screen('a side question');
    t.type(KEY.enter);
    await t.screen('the model is busy');
    expect(t.session.manager.jobs()).toEqual([]);
    // The text stays in the input for Ctrl+Enter or a later Enter.
    expect(t.frame()).toContain('› a side question');

    t.type(KEY.ctrlJ);
    await waitFor(() => t.session.manager.jobs().length === 1, 'the Ctrl+J job', SAFETY_NET);
    t.type('where is the LRU cache?');
    await t.screen('where is the LRU cache?');
    t.type(KEY.kittyCtrlEnter);
    await waitFor(() => t.session.manager.jobs().length === 2, 'the Ctrl+Enter job', SAFETY_NET);
    await t.screen('started by you');
    for (const job of t.session.manager.jobs()) {
      expect(job.role).toBe('user');
      expect(job.wave).toBeNull();
    }
    expect(t.session.manager.jobs().map((j) => j.task)).toEqual(['a side question', 'where is the LRU cache?']);
    expect(t.chat.busy).toBe(true);
  });

  it('Esc cancels the turn and the background jobs keep running to their own end', async () => {
    const t = await startChat((body) => isParent(body) || isJob(body));
    t.type('Where is the retry backoff implemented?');
    t.type(KEY.enter);
    await t.screen('◐ turn 1');
    t.type('/bg start where is the cache?');
    t.type(KEY.enter);
    t.type('/bg start what does the README say?');
    t.type(KEY.enter);
    await waitFor(() => t.session.manager.count('running') === 2, 'two running jobs', SAFETY_NET);
    await t.screen('⚙ 2 background agents running');

    t.type(KEY.escape);
    await t.screen('turn 1 cancelled; 2 background jobs keep running');
    expect(t.chat.busy).toBe(false);
    expect(t.session.manager.jobs().map((j) => j.state)).toEqual(['running', 'running']);
    await t.screen('⚙ 2 background agents running');

    t.proxy.release();
    await waitFor(() => t.session.manager.count('ended') === 2, 'both jobs ended', SAFETY_NET);
    // Each job ended by its own answer (ok or partial is the job's say), never by a cancel.
    expect(t.session.manager.jobs().map((j) => j.endedBy)).toEqual(['completed', 'completed']);
    await t.screen('⚙ no background agents running');
  });
});

describe('chat app: panel, history, permissions', { timeout: 240_000 }, () => {
  it("F3 opens the panel; Enter shows a job's detail and full result; Esc and F3 close them", async () => {
    const t = await startChat(() => false);
    t.type('/bg start Where is the LruCache class defined?');
    t.type(KEY.enter);
    await waitFor(() => t.session.manager.count('ended') === 1, 'the job ended', SAFETY_NET);
    const job = t.session.manager.jobs()[0]!;
    t.type(KEY.f3);
    await t.screen('Background agents · 1 job');
    expect(t.frame()).toContain(`${job.id} "Where is the LruCache class defined?" [user]  ok`);
    t.type(KEY.enter);
    await t.screen(`Background agent ${job.id}`);
    expect(t.frame()).toContain('role user');
    expect(t.frame()).toContain('result:');
    // The full result, line by line (the frame truncates long lines at the panel's width).
    const firstLine = (job.resultText ?? '').split('\n')[0]!.slice(0, 40);
    expect(firstLine.length).toBeGreaterThan(0);
    expect(t.frame()).toContain(firstLine);
    t.type(KEY.escape);
    await waitFor(() => !t.frame().includes(`Background agent ${job.id}`) && t.frame().includes('Background agents · 1 job'), 'back to the list', SAFETY_NET);
    t.type(KEY.f3);
    await waitFor(() => !t.frame().includes('Background agents ·'), 'the panel closed', SAFETY_NET);
  });

  it('the status bar shows the session budget left, and it goes down as a job spends', async () => {
    const t = await startChat(() => false, { extra: { sessionBudget: { maxTokens: 200_000 } }, background: { budget: { maxTokens: 50_000 } } });
    await waitFor(() => t.frame().includes('budget left 200.0k/200.0k tokens'), 'the full pool in the status bar', SAFETY_NET);
    t.type('/bg start where is the cache defined?');
    t.type(KEY.enter);
    await t.screen('started by you');
    await t.screen(/bg-1 "where is the cache defined\?" (ok|partial)/);
    const spent = t.session.manager.budgetPool()!.spentTokens;
    expect(spent).toBeGreaterThan(0);
    // Shown in thousands: 655 tokens spent is 199.3k left.
    const left = `${((200_000 - spent) / 1000).toFixed(1)}k`;
    await waitFor(() => t.frame().includes(`budget left ${left}/200.0k tokens`), `the status bar to show ${left} left`, SAFETY_NET);
  });

  it('Up and Down recall earlier inputs', async () => {
    const t = await startChat(() => false);
    t.type('/bg list');
    t.type(KEY.enter);
    await t.screen('no background jobs yet');
    t.type('/agents');
    t.type(KEY.enter);
    await t.screen('a fork of the parent');
    t.type(KEY.up);
    await waitFor(() => t.frame().includes('› /agents'), 'the last input recalled', SAFETY_NET);
    t.type(KEY.up);
    await waitFor(() => t.frame().includes('› /bg list'), 'the one before', SAFETY_NET);
    t.type(KEY.down);
    await waitFor(() => t.frame().includes('› /agents'), 'forward again', SAFETY_NET);
    t.type(KEY.down);
    await waitFor(() => t.frame().includes('ask something'), 'past the newest: empty', SAFETY_NET);
  });

  it('a gated tool in the parent asks in the UI: always grants for the session, deny sends the model a tool error', async () => {
    const script = [
      { toolCalls: [{ name: 'bash', arguments: { command: 'echo first' } }] },
      { content: 'ran it' },
      { toolCalls: [{ name: 'write_file', arguments: { path: 'x.txt', content: 'x' } }] },
      { content: 'could not write' },
    ];
    const t = await startChat(() => false, { sim: { script }, ask: true });
    t.type('run it');
    t.type(KEY.enter);
    await t.screen('Allow bash: bash: echo first?');
    t.type('a');
    await t.screen('bash: allowed for this session');
    await t.screen('ran it');
    expect(t.session.permissions.isGranted('bash')).toBe(true);

    t.type('write it');
    t.type(KEY.enter);
    await t.screen('Allow write_file');
    t.type('n');
    await t.screen('write_file: denied');
    await t.screen('could not write');
    expect(t.session.permissions.isGranted('write_file')).toBe(false);
  });
});
