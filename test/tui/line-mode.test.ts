/**
 * The chat's stdin channel (line mode, `forkpool chat` with piped stdin): control lines
 * (`/bg stop|restart|send|interrupt`, `/cancel`) act the moment they are read, while a turn
 * runs; every other line keeps its place after the turn before it. A real session (jobs in the
 * Piscina pool) on the sim, the input written a line at a time like a program driving the chat.
 */
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { AgentSession } from '../../src/main/session/agent-session.js';
import { ChatController } from '../../src/tui/controller.js';
import { isControlLine, runLineMode } from '../../src/tui/line-mode.js';
import { ended, makeConfig, makeWorkspace, startSim, useCleanup, waitFor, watchManager } from '../helpers/index.js';

const cleanups = useCleanup();

describe('line mode: control lines mid-turn', () => {
  it('restarts and stops jobs and cancels the turn while it runs; /bg list waits for the turn', async () => {
    // Calls 1 and 2 (the two jobs' first runs) and 3 (the parent's turn) hang until stopped.
    const hang = { kind: 'hang_before_headers' } as const;
    const sim = await startSim(cleanups, { latencyMs: 20, faults: { 1: hang, 2: hang, 3: hang } });
    const session = new AgentSession({ config: makeConfig(sim, await makeWorkspace(cleanups)), closeExecutor: true });
    watchManager(session.manager);
    cleanups.add(() => session.close({ timeoutMs: 2_000 }));
    const chat = new ChatController({ session, closeTimeoutMs: 2_000 });
    const input = new PassThrough();
    const out: Array<{ line: string; busy: boolean }> = [];
    const running = runLineMode(chat, { input, out: (line) => out.push({ line, busy: chat.busy }), note: () => {} });
    const said = (test: RegExp) => out.find((o) => test.test(o.line));

    input.write('/bg start where is the retry backoff?\n/bg start where is the cache?\n');
    await waitFor(() => sim.requests.length === 2, 'both jobs mid-call');
    input.write('Where is the retry backoff implemented?\n');
    await waitFor(() => sim.requests.length === 3 && chat.busy, 'the turn mid-call');

    input.write('/bg list\n/bg restart bg-1\n/bg stop bg-2\n');
    await waitFor(() => said(/^stopping bg-2/), 'the stop answered');
    // Both answered while the turn still ran; /bg list, read before them, has not run yet.
    expect(said(/^restarting bg-1 ".*": stopping this run, then it runs again$/)?.busy).toBe(true);
    expect(said(/^stopping bg-2/)?.busy).toBe(true);
    expect(said(/^bg-1 /)).toBeUndefined();
    expect((await ended(session.manager, 'bg-2')).status).toBe('cancelled');
    expect(await ended(session.manager, 'bg-1')).toMatchObject({ status: 'ok', attempts: 2 });

    input.write('/cancel\n');
    await waitFor(() => !chat.busy, 'the turn cancelled');
    // The list ran once the turn had ended (a follow-up with the results may run by then): both jobs, ended.
    await waitFor(() => said(/^bg-2\s+cancelled/), '/bg list after the turn');
    const at = (test: RegExp) => chat.entries.findIndex((e) => test.test(e.text));
    expect(at(/turn 1 cancelled/)).toBeGreaterThan(-1);
    expect(at(/^bg-2\s+cancelled/)).toBeGreaterThan(at(/turn 1 cancelled/));
    input.end();
    await running;
    expect(chat.closing).toBe(true);
  }, 60_000);

  it('knows its control lines', () => {
    for (const line of ['/bg stop bg-1', '/BG restart x', ' /bg send bg-1 hi', '/bg interrupt a b', '/cancel']) expect(isControlLine(line), line).toBe(true);
    for (const line of ['/bg list', '/bg start stop it', '/bg show bg-1', '/cost', 'stop bg-1', '/bg stopper', '/cancelled'])
      expect(isControlLine(line), line).toBe(false);
  });
});
