/**
 * The chat and a job's state, over a real AgentSession (the parent on this thread, jobs in the
 * real Piscina pool, the sim behind a holding proxy): job lines coloured by state (the state
 * word always in the text), the busy hint gone once it is no longer true, and a user job the
 * person stopped spending no parent model turn of its own.
 */
import { createElement } from 'react';
import { describe, expect, it } from 'vitest';
import { AgentSession } from '../../src/main/session/agent-session.js';
import { BACKGROUND_PROMPT_MARKER, PRIMARY_PROMPT_MARKER } from '../../src/shared/prompts.js';
import { BUSY_HINT, ChatController } from '../../src/tui/controller.js';
import { STATE_COLOR, jobColorState } from '../../src/tui/state-colors.js';
import { useCleanup, makeConfig, makeWorkspace, startHoldingProxy, startSim, waitFor, watchManager } from '../helpers/index.js';

const cleanups = useCleanup();
const SAFETY_NET = { timeoutMs: 90_000 };

const isParent = (body: string) => body.includes(PRIMARY_PROMPT_MARKER);
const isJob = (body: string) => body.includes(BACKGROUND_PROMPT_MARKER);

/** A chat whose chosen model calls are held (`hold`) until `proxy.release()`; the parent's turns are counted. */
async function startChat(hold: (body: string) => boolean) {
  const root = await makeWorkspace(cleanups);
  const sim = await startSim(cleanups);
  const proxy = await startHoldingProxy(cleanups, sim.url, hold);
  const session = new AgentSession({ config: makeConfig(undefined, root, { cancelGraceMs: 200 }, { baseUrl: proxy.url }), closeExecutor: true });
  watchManager(session.manager);
  const chat = new ChatController({ session, closeTimeoutMs: 2_000 });
  const turns: Array<{ turn: number; followUp: boolean }> = [];
  session.on('parent', (e) => {
    if (e.type === 'turn_start') turns.push({ turn: e.turn, followUp: e.followUp === true });
  });
  cleanups.add(async () => {
    proxy.release();
    await session.close({ timeoutMs: 2_000 });
  });
  return { sim, proxy, session, chat, turns };
}

describe('job colours', () => {
  it('one palette: every state its own colour, each distinct from the others but for failed and error', () => {
    expect(jobColorState({ state: 'queued' })).toBe('queued');
    expect(jobColorState({ state: 'running' })).toBe('running');
    // Waiting for its children (its record is queued again): it has not ended, it counts as running.
    expect(jobColorState({ state: 'queued', waitingForChildren: true })).toBe('running');
    for (const status of ['ok', 'partial', 'failed', 'cancelled', 'timed_out'] as const) expect(jobColorState({ state: 'ended', status })).toBe(status);
    const shown = ['queued', 'running', 'ok', 'partial', 'failed', 'cancelled', 'timed_out'] as const;
    expect(new Set(shown.map((s) => STATE_COLOR[s])).size).toBe(shown.length);
  });

  it('the transcript and the panel colour a job by its state, and the line still says the state in words', async () => {
    const { session, chat } = await startChat(() => false);
    chat.submitLine('/bg start where is the retry backoff?');
    const job = await waitFor(() => session.manager.jobs().find((j) => j.state === 'ended'), 'the job to end', SAFETY_NET);
    expect(job.status).toBe('ok');
    const spawned = chat.entries.find((e) => e.kind === 'job' && e.text.includes('started by you'));
    const ended = chat.entries.find((e) => e.kind === 'job' && e.text.includes(job.id) && e.text.includes(' ok '));
    expect(spawned?.jobState).toBe('queued');
    expect(ended?.jobState).toBe('ok');

    // Rendered with colour forced on (read when chalk loads, with ink: so ink is loaded here, not
    // at the top): the panel's row carries green, and the state word stays in it.
    const forced = process.env.FORCE_COLOR;
    process.env.FORCE_COLOR = '1';
    cleanups.add(() => {
      if (forced === undefined) delete process.env.FORCE_COLOR;
      else process.env.FORCE_COLOR = forced;
    });
    const { render } = await import('ink-testing-library');
    const { ChatApp } = await import('../../src/tui/app.js');
    const app = render(createElement(ChatApp, { chat }));
    cleanups.add(() => app.unmount());
    chat.togglePanel();
    const frame = await waitFor(() => (app.lastFrame()?.includes('Background agents') ? app.lastFrame() : undefined), 'the panel', SAFETY_NET);
    // The panel's row (not the transcript's line): "bg-1 \"…\"  ok  0.7s".
    const row = frame.split('\n').find((line) => line.includes(`${job.id} "`) && /\bok\b/.test(line) && !line.includes('✓'));
    expect(row, frame).toBeDefined();
    expect(row).toContain('\x1b[32m'); // green
    // The transcript's ended line, in green too.
    const line = app.frames
      .join('\n')
      .split('\n')
      .find((l) => l.includes(`✓ ${job.id}`));
    expect(line).toContain('\x1b[32m');
  });
});

describe('the busy hint', () => {
  it('is shown for Enter while busy, and cleared when the input is emptied and when the turn ends', async () => {
    const { proxy, chat } = await startChat(isParent);
    const turn = chat.submitLine('what does src/retry.ts do?').turn;
    await waitFor(() => proxy.held() >= 1, "the parent's model call held", SAFETY_NET);
    expect(chat.submitLine('and the cache?').accepted).toBe(false);
    expect(chat.hint).toBe(BUSY_HINT);
    chat.inputChanged('and the cach');
    expect(chat.hint).toBe(BUSY_HINT);
    chat.inputChanged('');
    expect(chat.hint).toBeUndefined();

    expect(chat.submitLine('and the cache?').accepted).toBe(false);
    expect(chat.hint).toBe(BUSY_HINT);
    proxy.release();
    await turn;
    await waitFor(() => !chat.busy, 'the turn to end', SAFETY_NET);
    expect(chat.hint).toBeUndefined();
    // Another hint (not about the busy model) is left alone by the input.
    chat.setHint('closing: no new turns');
    chat.inputChanged('');
    expect(chat.hint).toBe('closing: no new turns');
  });
});

describe('the busy hint on screen', () => {
  it('goes when the input is emptied with Backspace', async () => {
    const { proxy, chat } = await startChat(isParent);
    const { render } = await import('ink-testing-library');
    const { ChatApp } = await import('../../src/tui/app.js');
    const app = render(createElement(ChatApp, { chat }));
    cleanups.add(() => app.unmount());
    void chat.submitLine('what does src/retry.ts do?').turn;
    await waitFor(() => proxy.held() >= 1, "the parent's model call held", SAFETY_NET);
    app.stdin.write('ab');
    app.stdin.write('\r');
    await waitFor(() => app.lastFrame()?.includes('the model is busy: Ctrl+Enter'), 'the hint on screen', SAFETY_NET);
    app.stdin.write('\x7f');
    expect(chat.hint).toBe(BUSY_HINT); // "a" is still there
    app.stdin.write('\x7f');
    await waitFor(() => !app.lastFrame()?.includes('the model is busy: Ctrl+Enter'), 'the hint gone', SAFETY_NET);
    expect(chat.hint).toBeUndefined();
  });
});

describe('stopping your own job', () => {
  it('spends no parent model turn: it is shown to you at once and given to the model at its next turn', async () => {
    const { sim, proxy, session, chat, turns } = await startChat(isJob);
    chat.submitLine('/bg start where is the retry backoff?');
    await waitFor(() => session.manager.count('running') === 1 && proxy.held() === 1, 'the job running, its model call held', SAFETY_NET);
    chat.submitLine('/bg stop bg-1');
    const job = await waitFor(() => session.manager.jobs().find((j) => j.state === 'ended'), 'the job to end', SAFETY_NET);
    expect(job.status).toBe('cancelled');
    await session.onIdle();
    expect(turns).toEqual([]);
    expect(session.manager.get('bg-1')?.deliveredInTurn).toBeUndefined();
    expect(chat.entries.find((e) => e.text.startsWith('stopping bg-1'))?.text).toContain('no model turn for it');
    // The person saw it end, coloured as cancelled.
    expect(chat.entries.find((e) => e.kind === 'job' && e.jobState === 'cancelled')?.text).toContain('cancelled');

    // The person's next turn carries it to the model, once.
    proxy.release();
    const before = sim.requests.length;
    await chat.submitLine('what does src/retry.ts do?').turn;
    await session.onIdle();
    expect(turns).toEqual([{ turn: 1, followUp: false }]);
    expect(session.manager.get('bg-1')?.deliveredInTurn).toBe(1);
    const firstOfTurn = sim.requests.slice(before).find((r) => JSON.stringify(r.body.messages).includes(PRIMARY_PROMPT_MARKER));
    expect(JSON.stringify(firstOfTurn?.body.messages)).toContain('bg-1');
  });

  it('a user job that ends by itself still starts its own follow-up turn', async () => {
    const { session, chat, turns } = await startChat(() => false);
    chat.submitLine('/bg start where is the retry backoff?');
    await waitFor(() => session.manager.jobs().some((j) => j.state === 'ended'), 'the job to end', SAFETY_NET);
    await session.onIdle();
    expect(turns).toEqual([{ turn: 1, followUp: true }]);
    expect(session.manager.get('bg-1')?.deliveredInTurn).toBe(1);
  });
});
