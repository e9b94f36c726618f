/**
 * `/bg wait [ids…] [--timeout S] [--any]` in the chat: a real session, its jobs in the fault
 * fixture's pool (real jobs on the sim). It says what ended and what still runs, marks nothing
 * delivered (the model still gets each result), names an unknown job without waiting, stops on
 * Esc, and in line mode the next line waits for it.
 */
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { AgentSession } from '../../src/main/session/agent-session.js';
import { ChatController } from '../../src/tui/controller.js';
import { runLineMode } from '../../src/tui/line-mode.js';
import { parseWait } from '../../src/tui/wait-command.js';
import { RESEARCH_TASK, fixtureExecutor, makeConfig, makeWorkspace, startSim, startedJob, useCleanup, watchManager } from '../helpers/index.js';

const cleanups = useCleanup();

async function chatWithJobs(): Promise<{ chat: ChatController; session: AgentSession; texts: () => string[] }> {
  const root = await makeWorkspace(cleanups);
  const sim = await startSim(cleanups);
  const config = makeConfig(sim, root, { maxConcurrent: 3, cancelGraceMs: 100 });
  const session = new AgentSession({ config, executor: fixtureExecutor(config, cleanups) });
  watchManager(session.manager);
  cleanups.add(() => session.close({ timeoutMs: 2_000 }));
  const chat = new ChatController({ session, closeTimeoutMs: 2_000 });
  // The command's own lines (the chat's job lines come in between).
  return { chat, session, texts: () => chat.entries.filter((e) => e.kind === 'command').map((e) => e.text) };
}

describe('/bg wait', () => {
  it('any: what ended and what still runs, nothing delivered; the timeout; an unknown job; bad options; Esc stops it', async () => {
    const { chat, session, texts } = await chatWithJobs();
    // Wave 99 is never sealed: no follow-up turn starts on its own.
    const quick = session.manager.spawn({ task: RESEARCH_TASK, label: 'quick', wave: 99 });
    const long = session.manager.spawn({ task: 'FAULT:finish_on_cancel', label: 'long', wave: 99 });
    await startedJob(session.manager, long.id);

    // Named: by default it waits for the live jobs only, and on a loaded machine `quick` may have ended already.
    const any = chat.submitLine(`/bg wait ${quick.id} ${long.id} --any`);
    expect(chat.waiting).toBe(true);
    await any.turn;
    expect(chat.waiting).toBe(false);
    const said = texts().slice(-4);
    expect(said[0]).toBe('waiting for 2 jobs until the first of them ends (at most 30s; Esc stops waiting)…');
    expect(said[1]).toMatch(/^waited \d+\.\ds: 1 ended, 1 still running$/);
    expect(said[2]).toMatch(new RegExp(`^  ✓ ${quick.id} "quick" ok in `));
    expect(said[3]).toBe(`  … ${long.id} "long" running`);
    expect(session.manager.get(quick.id)?.deliveredInTurn).toBeUndefined();
    expect(session.deliveries.undeliveredCount).toBe(1);

    await chat.submitLine(`/bg wait ${long.id} --timeout 0.05`).turn;
    expect(texts().slice(-2)).toEqual(['waited 0.1s: 0 ended, 1 still running (the timeout passed)', `  … ${long.id} "long" running`]);

    await chat.submitLine('/bg wait nobody').turn;
    expect(texts().at(-1)).toBe('no background job with id or name "nobody"; nothing to wait for');
    await chat.submitLine('/bg wait --timeout soon').turn;
    expect(texts().at(-1)).toBe('--timeout: expected seconds from 0 to 3600, received soon');
    expect(parseWait('bg-1 bg-2 --any --timeout=2.5')).toEqual({ jobs: ['bg-1', 'bg-2'], timeoutMs: 2_500, mode: 'any' });
    expect(parseWait('--later')).toEqual({ problem: expect.stringContaining('unknown option --later') });

    const stopped = chat.submitLine(`/bg wait ${long.id} --timeout 60`);
    expect(chat.cancelTurn()).toBe(true);
    await stopped.turn;
    expect(texts().at(-1)).toBe('stopped waiting (the jobs go on)');
    expect(chat.waiting).toBe(false);
    expect(session.manager.get(long.id)?.state).toBe('running');
  });

  it('in line mode the next line waits for the wait to end', async () => {
    const { chat, session } = await chatWithJobs();
    session.manager.spawn({ task: RESEARCH_TASK, label: 'quick', wave: 99 });
    const out: string[] = [];
    await runLineMode(chat, { input: Readable.from(['/bg wait --timeout 30\n', '/bg list\n']), out: (line) => out.push(line), note: () => {} });
    const waited = out.findIndex((line) => /^waited .*: 1 ended, 0 still running$/.test(line));
    const listed = out.findIndex((line) => line === '› /bg list');
    expect(waited).toBeGreaterThan(0);
    expect(listed).toBeGreaterThan(waited);
  });
});
