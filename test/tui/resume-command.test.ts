/**
 * `/bg resume <id|name> <message>` in the chat: a real session (parent on this thread, jobs in
 * the Piscina pool, the sim): an ended job goes on as a new job; refusals are error lines.
 */
import { describe, expect, it } from 'vitest';
import { AgentSession } from '../../src/main/session/agent-session.js';
import { ChatController } from '../../src/tui/controller.js';
import { ended, makeConfig, makeWorkspace, startSim, useCleanup, watchManager } from '../helpers/index.js';

const cleanups = useCleanup();

describe('/bg resume', () => {
  it('resumes an ended job as a new one; usage without a message; an unknown or running job is an error line', async () => {
    const sim = await startSim(cleanups, { latencyMs: 40 });
    const session = new AgentSession({ config: makeConfig(sim, await makeWorkspace(cleanups)), closeExecutor: true });
    watchManager(session.manager);
    cleanups.add(() => session.close({ timeoutMs: 2_000 }));
    const chat = new ChatController({ session, closeTimeoutMs: 2_000 });
    const last = () => chat.entries.at(-1);

    chat.submitLine('/bg start where is the retry backoff?');
    chat.submitLine('/bg resume bg-1 and the cache?');
    expect(last()).toMatchObject({ kind: 'error' });
    expect(last()?.text).toMatch(/job bg-1 has not ended/);
    await ended(session.manager, 'bg-1');

    chat.submitLine('/bg resume bg-1');
    expect(last()?.text).toBe('usage: /bg resume <id|name> <message>');
    chat.submitLine('/bg resume bg-9 and the cache?');
    expect(last()).toMatchObject({ kind: 'error' });
    expect(last()?.text).toMatch(/no background job with id or name "bg-9"/);

    chat.submitLine('/bg resume bg-1 and where is the cache?');
    expect(last()?.text).toMatch(/^resumed bg-1 as bg-2 "/);
    expect(session.manager.get('bg-2')).toMatchObject({ resumedFrom: 'bg-1', task: 'and where is the cache?', role: 'user', wave: null });
    expect((await ended(session.manager, 'bg-2')).stopReason).toBe('final');
  }, 60_000);
});
