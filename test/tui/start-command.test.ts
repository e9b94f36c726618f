/**
 * `/bg start --agent NAME <task>` in the chat: the job runs as that configured agent (not with
 * "--agent NAME" as its task text); an unknown agent is a line naming the configured ones, and
 * nothing starts. A real session, its jobs in the Piscina pool, on the sim.
 */
import { describe, expect, it, vi } from 'vitest';
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

  it('--tools, --model and --system give the job its own spec (seen in its model request); a refused spec starts nothing and says why', async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups);
    const config = makeConfig(sim, root, {}, { agents: { scout: { description: 'finds files', model: 'scout-model' } } });
    const session = new AgentSession({ config, closeExecutor: true });
    watchManager(session.manager);
    cleanups.add(() => session.close({ timeoutMs: 2_000 }));
    const chat = new ChatController({ session, closeTimeoutMs: 2_000 });

    chat.submitLine('/bg start --tools nosuchtool where is the cache?');
    expect(chat.entries.at(-1)?.text).toMatch(/^could not start the job: .*nosuchtool/);
    expect(session.manager.jobs()).toEqual([]);

    chat.submitLine('/bg start --tools grep --model scout-model --system "Answer in one line." where is the cache?');
    const [job] = session.manager.jobs();
    expect(await ended(session.manager, job?.id as string)).toMatchObject({ role: 'user', task: 'where is the cache?' });
    const body = sim.requests[0]?.body as { model: string; tools: Array<{ function: { name: string } }>; messages: Array<{ role: string; content: string }> };
    expect(body.model).toBe('scout-model');
    // Its built-in tools narrowed to grep (report_alert is every job's own channel, not a built-in).
    expect(body.tools.map((t) => t.function.name).filter((name) => name !== 'report_alert')).toEqual(['grep']);
    expect(body.messages[0]?.content).toMatch(/Answer in one line\.$/);
  }, 60_000);

  it('--worktree outside a git repository: the refusal is said once git has answered (off the main thread), and nothing starts', async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups);
    const session = new AgentSession({ config: makeConfig(sim, root, {}, { agents: { scout: { description: 'finds files' } } }), closeExecutor: true });
    watchManager(session.manager);
    cleanups.add(() => session.close({ timeoutMs: 2_000 }));
    const chat = new ChatController({ session, closeTimeoutMs: 2_000 });

    chat.submitLine('/bg start --agent scout --worktree write the notes');
    await vi.waitFor(() => expect(chat.entries.at(-1)?.text).toMatch(/^could not start the job: .*not inside a git repository.*nothing was started/), {
      timeout: 30_000,
    });
    expect(session.manager.jobs()).toEqual([]);
    expect(sim.requests).toHaveLength(0);
  }, 60_000);

  it('parses the flag in either form, and says the usage without a task', () => {
    expect(parseStart('--agent=scout find it', ['scout'])).toEqual({ task: 'find it', agent: 'scout' });
    expect(parseStart('  find --agent it ', ['scout'])).toEqual({ task: 'find --agent it' });
    const usage = 'usage: /bg start [--agent NAME] [--tools a,b] [--model M] [--system "…"] [--worktree] <task>';
    expect(parseStart('--agent scout', ['scout'])).toEqual({ problem: usage });
    expect(parseStart('', [])).toEqual({ problem: usage });
    expect(parseStart('--worktree --tools grep,read_file --system "Say \\"no\\" briefly." --model m find it', [])).toEqual({
      task: 'find it',
      workspace: 'worktree',
      tools: ['grep', 'read_file'],
      systemPrompt: 'Say "no" briefly.',
      model: 'm',
    });
    expect(parseStart('--agent x y', [])).toEqual({ problem: 'no agent "x": none is configured (see docs/agents.md)' });
  });
});
