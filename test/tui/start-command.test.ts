/**
 * `/bg start --agent NAME <task>` in the chat: the job runs as that configured agent (not with
 * "--agent NAME" as its task text); an unknown agent is a line naming the configured ones, and
 * nothing starts. A real session, its jobs in the Piscina pool, on the sim.
 */
import { describe, expect, it } from 'vitest';
import { AgentSession } from '../../src/main/session/agent-session.js';
import { ChatController } from '../../src/tui/controller.js';
import { parseStart } from '../../src/tui/commands.js';
import { ended, makeConfig, makeWorkspace, startSim, useCleanup, watchManager } from '../helpers/index.js';

const cleanups = useCleanup();

describe('/bg start --agent', () => {
  it('runs the task as the named agent; an unknown agent starts nothing and names the configured ones', async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups);
    const config = makeConfig(sim, root, {}, { agents: { scout: { description: 'finds files', tools: ['find_files', 'grep'] } } });
    const session = new AgentSession({ config, closeExecutor: true });
    watchManager(session.manager);
    cleanups.add(() => session.close({ timeoutMs: 2_000 }));
    const chat = new ChatController({ session, closeTimeoutMs: 2_000 });

    chat.submitLine('/bg start --agent nobody where is the cache?');
    expect(chat.entries.at(-1)?.text).toBe('no agent "nobody": the configured ones are scout');
    expect(session.manager.jobs()).toEqual([]);

    chat.submitLine('/bg start --agent scout where is the cache?');
    const record = await ended(session.manager, 'bg-1');
    expect(record).toMatchObject({ agent: 'scout', task: 'where is the cache?', role: 'user' });
  }, 60_000);

  it('parses the flag in either form, and says the usage without a task', () => {
    expect(parseStart('--agent=scout find it', ['scout'])).toEqual({ task: 'find it', agent: 'scout' });
    expect(parseStart('  find --agent it ', ['scout'])).toEqual({ task: 'find --agent it' });
    expect(parseStart('--agent scout', ['scout'])).toEqual({ problem: 'usage: /bg start [--agent NAME] <task>' });
    expect(parseStart('', [])).toEqual({ problem: 'usage: /bg start [--agent NAME] <task>' });
    expect(parseStart('--agent x y', [])).toEqual({ problem: 'no agent "x": none is configured (see docs/agents.md)' });
  });
});
