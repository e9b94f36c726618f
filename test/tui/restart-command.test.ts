/**
 * `/bg restart <id|name>` in the chat: a real session (jobs in the Piscina pool) on the sim. A
 * running job is stopped and runs again under the same id; an ended or sleeping one is re-queued;
 * a queued one is left as it is; an unknown one is an error line.
 */
import { describe, expect, it } from 'vitest';
import { AgentSession } from '../../src/main/session/agent-session.js';
import { ChatController } from '../../src/tui/controller.js';
import { HELP_LINES } from '../../src/tui/commands.js';
import { ended, makeConfig, makeWorkspace, startSim, useCleanup, waitFor, watchManager } from '../helpers/index.js';

const cleanups = useCleanup();

describe('/bg restart', () => {
  it('restarts a running job and an ended one under the same id; a queued one is left; unknown is an error line', async () => {
    // Call 1 (bg-1's first run) hangs until it is stopped: the restart is what ends it.
    const sim = await startSim(cleanups, { latencyMs: 20, faults: { 1: { kind: 'hang_before_headers' } } });
    const session = new AgentSession({ config: makeConfig(sim, await makeWorkspace(cleanups), { maxConcurrent: 1 }), closeExecutor: true });
    watchManager(session.manager);
    cleanups.add(() => session.close({ timeoutMs: 2_000 }));
    const chat = new ChatController({ session, closeTimeoutMs: 2_000 });
    const last = () => chat.entries.at(-1);
    expect(HELP_LINES.some((line) => line.startsWith('/bg restart <id|name>'))).toBe(true);

    chat.submitLine('/bg start where is the retry backoff?');
    chat.submitLine('/bg start where is the cache?');
    await waitFor(() => sim.requests.length === 1, 'bg-1 mid-call');
    expect(session.manager.get('bg-2')?.state).toBe('queued');

    chat.submitLine('/bg restart');
    expect(last()?.text).toBe('usage: /bg restart <id|name>');
    chat.submitLine('/bg restart bg-9');
    expect(last()).toMatchObject({ kind: 'error', text: expect.stringMatching(/no background job with id or name "bg-9"/) });
    chat.submitLine('/bg restart bg-2');
    expect(last()?.text).toMatch(/^bg-2 ".*" is queued \(it has not started, or goes on where it waited\): nothing to restart$/);

    chat.submitLine('/bg restart bg-1');
    expect(last()?.text).toMatch(/^restarting bg-1 ".*": stopping this run, then it runs again$/);
    // The hung run was stopped and bg-1 ran again (same id), this time to its answer.
    const first = await ended(session.manager, 'bg-1');
    expect(first).toMatchObject({ status: 'ok', attempts: 2 });
    await ended(session.manager, 'bg-2');

    chat.submitLine('/bg restart bg-1');
    expect(last()?.text).toMatch(/^restarted bg-1 ".*": queued to run again$/);
    expect((await ended(session.manager, 'bg-1')).attempts).toBe(3);
    expect(
      session.manager
        .jobs()
        .map((j) => j.id)
        .sort(),
    ).toEqual(['bg-1', 'bg-2']);
  }, 60_000);

  it('restarts a sleeping job: its wake dropped, it runs again from its task', async () => {
    const sim = await startSim(cleanups, {
      script: [{ toolCalls: [{ name: 'schedule_next_turn', arguments: { after: '1h', reason: 'scan again' } }] }, { content: 'Scanned from the start.' }],
    });
    const config = makeConfig(sim, await makeWorkspace(cleanups), { maxConcurrent: 1, scheduler: 'sleep' });
    const session = new AgentSession({ config, closeExecutor: true });
    watchManager(session.manager);
    cleanups.add(() => session.close({ timeoutMs: 2_000 }));
    const chat = new ChatController({ session, closeTimeoutMs: 2_000 });
    chat.submitLine('/bg start scan the queue');
    await waitFor(() => session.manager.get('bg-1')?.sleepWait, 'bg-1 asleep');

    chat.submitLine('/bg restart bg-1');
    expect(chat.entries.at(-1)?.text).toMatch(/^restarted bg-1 ".*": it was asleep \(its wake dropped\); queued to run again from its task$/);
    expect(await ended(session.manager, 'bg-1')).toMatchObject({ status: 'ok', resultText: 'Scanned from the start.' });
    sim.assertScriptDone();
  }, 60_000);
});
