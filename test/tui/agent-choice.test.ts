/**
 * Which agent the person's own jobs run as (agent-choice.ts): `chat --agent NAME`, else
 * `background.defaultAgent`, else one question asked once on a terminal, else (no terminal) a
 * fork of the parent, said once. Real sessions (jobs in the Piscina pool) on the sim; the ink
 * app for the question's keys.
 */
import { createElement } from 'react';
import { render } from 'ink-testing-library';
import { describe, expect, it } from 'vitest';
import { AgentSession } from '../../src/main/session/agent-session.js';
import { ChatApp } from '../../src/tui/app.js';
import { ChatController } from '../../src/tui/controller.js';
import type { ForkpoolConfigInput } from '../../src/shared/config.js';
import { ended, makeConfig, makeWorkspace, startSim, useCleanup, waitFor, watchManager } from '../helpers/index.js';

const cleanups = useCleanup();
const AGENTS: ForkpoolConfigInput['agents'] = {
  scout: { description: 'finds files', tools: ['find_files', 'grep'] },
  reader: { description: 'reads files', tools: ['read_file'] },
};

async function chatWith(options: { askAgent?: boolean; userAgent?: string; background?: ForkpoolConfigInput['background'] } = {}) {
  const sim = await startSim(cleanups);
  const config = makeConfig(sim, await makeWorkspace(cleanups), options.background ?? {}, { agents: AGENTS });
  const session = new AgentSession({ config, closeExecutor: true });
  watchManager(session.manager);
  cleanups.add(() => session.close({ timeoutMs: 2_000 }));
  const chat = new ChatController({ session, closeTimeoutMs: 2_000, ...(options.askAgent ? { askAgent: true } : {}), userAgent: options.userAgent });
  return { chat, session, notices: () => chat.entries.filter((e) => e.kind === 'notice').map((e) => e.text) };
}

describe('the agent of your own jobs', () => {
  it('on a terminal, asks once: nothing starts until a digit answers; the answer holds for the session', async () => {
    const { chat, session, notices } = await chatWith({ askAgent: true });
    chat.submitLine('/bg start where is the cache?');
    expect(session.manager.jobs()).toEqual([]);
    expect(chat.agentQuestion).toBe('Run your background jobs as: [1] a fork of the parent · [2] agent scout · [3] agent reader  (asked once; Esc: not now)');
    chat.startUserJob('a second one');
    expect(notices().at(-1)).toMatch(/^answer the question first/);
    chat.answerAgent(4);
    expect(chat.agentQuestion).toBeDefined();
    chat.answerAgent(2);
    expect(chat.agentQuestion).toBeUndefined();
    expect(notices()).toContain('your background jobs run as agent scout for this session (/bg start --agent NAME for another)');
    expect(await ended(session.manager, 'bg-1')).toMatchObject({ agent: 'scout', task: 'where is the cache?', role: 'user' });
    chat.submitLine('/bg start where is the retry backoff?');
    expect(chat.agentQuestion).toBeUndefined();
    expect(await ended(session.manager, 'bg-2')).toMatchObject({ agent: 'scout' });
    // An explicit --agent still wins over the answer.
    chat.submitLine('/bg start --agent reader what does the README say?');
    expect(await ended(session.manager, 'bg-3')).toMatchObject({ agent: 'reader' });
  }, 60_000);

  it('Esc starts nothing and asks again next time; 1 is a fork of the parent', async () => {
    const { chat, session, notices } = await chatWith({ askAgent: true });
    chat.startUserJob('where is the cache?');
    chat.answerAgent(undefined);
    expect(notices().at(-1)).toBe('not started: "where is the cache?" (↑ recalls it; asked again next time)');
    chat.startUserJob('where is the cache?');
    expect(chat.agentQuestion).toBeDefined();
    chat.answerAgent(1);
    const record = await ended(session.manager, 'bg-1');
    expect(record.agent).toBeUndefined();
    expect(session.manager.jobs()).toHaveLength(1);
  }, 60_000);

  it('no terminal: a fork of the parent, said once; --agent and background.defaultAgent ask nothing', async () => {
    const piped = await chatWith();
    piped.chat.submitLine('/bg start where is the cache?');
    piped.chat.submitLine('/bg start where is the retry backoff?');
    expect(piped.chat.agentQuestion).toBeUndefined();
    expect(piped.notices().filter((n) => n.startsWith('no --agent and no background.defaultAgent'))).toEqual([
      'no --agent and no background.defaultAgent: your jobs run as a fork of the parent (configured agents: scout, reader; /bg start --agent NAME picks one)',
    ]);
    expect((await ended(piped.session.manager, 'bg-1')).agent).toBeUndefined();

    const flagged = await chatWith({ askAgent: true, userAgent: 'reader' });
    flagged.chat.startUserJob('where is the cache?');
    expect(flagged.chat.agentQuestion).toBeUndefined();
    expect((await ended(flagged.session.manager, 'bg-1')).agent).toBe('reader');

    const configured = await chatWith({ askAgent: true, background: { defaultAgent: 'scout' } });
    configured.chat.startUserJob('where is the cache?');
    expect(configured.chat.agentQuestion).toBeUndefined();
    expect((await ended(configured.session.manager, 'bg-1')).agent).toBe('scout');
  }, 60_000);

  it('/agents says what your jobs run as: not chosen yet, the answer, --agent (issue 38)', async () => {
    const said = (chat: ChatController) => chat.entries.map((e) => e.text).filter((t) => t.startsWith('/bg start and Ctrl+Enter run'));
    const asked = await chatWith({ askAgent: true });
    asked.chat.submitLine('/agents');
    await waitFor(() => said(asked.chat).length === 1, '/agents before the question');
    expect(said(asked.chat)[0]).toMatch(/run the agent you pick when first asked/);
    asked.chat.startUserJob('where is the cache?');
    asked.chat.answerAgent(2);
    asked.chat.submitLine('/agents');
    await waitFor(() => said(asked.chat).length === 2, '/agents after the answer');
    expect(said(asked.chat)[1]).toMatch(/^\/bg start and Ctrl\+Enter run agent scout \(/);
    const flagged = await chatWith({ userAgent: 'reader' });
    flagged.chat.submitLine('/agents');
    await waitFor(() => said(flagged.chat).length === 1, '/agents with --agent');
    expect(said(flagged.chat)[0]).toMatch(/^\/bg start and Ctrl\+Enter run agent reader \(/);
    await ended(asked.session.manager, 'bg-1');
  }, 60_000);

  it('the ink app shows the question and a digit key answers it', async () => {
    const { chat, session } = await chatWith({ askAgent: true });
    const app = render(createElement(ChatApp, { chat }));
    cleanups.add(() => app.unmount());
    chat.submitLine('/bg start where is the cache?');
    await waitFor(() => (app.lastFrame() ?? '').includes('[3] agent reader'), 'the question on screen');
    app.stdin.write('x');
    expect(session.manager.jobs()).toEqual([]);
    app.stdin.write('3');
    expect(await ended(session.manager, 'bg-1')).toMatchObject({ agent: 'reader' });
    await waitFor(() => !(app.lastFrame() ?? '').includes('Run your background jobs as'), 'the question gone');
  }, 60_000);
});
