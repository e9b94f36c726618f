/**
 * The background panel's scrollbar and mouse: the pure parts (thumb, list window, SGR and cursor
 * report parsing, the frame hit test), then the ink app over a real session (jobs in the Piscina
 * pool on the sim, one running and held, the rest queued): the thumb shows past eight rows, a
 * click (with the terminal's cursor report) selects a row and a second click opens it, the wheel
 * scrolls.
 */
import { createElement } from 'react';
import { render } from 'ink-testing-library';
import { describe, expect, it } from 'vitest';
import { AgentSession } from '../../src/main/session/agent-session.js';
import { ChatApp } from '../../src/tui/app.js';
import { listWindow, scrollThumb } from '../../src/tui/background-panel.js';
import { ChatController } from '../../src/tui/controller.js';
import { parseKey } from '../../src/tui/keys.js';
import { CURSOR_QUERY, enableMouse, frameRowAt, MOUSE_OFF, MOUSE_ON } from '../../src/tui/mouse.js';
import { makeConfig, makeWorkspace, startSim, useCleanup, waitFor, watchManager } from '../helpers/index.js';

const cleanups = useCleanup();

describe('panel scrollbar and mouse: the pure parts', () => {
  it('sizes and places the thumb in proportion, and draws none when everything fits', () => {
    expect(scrollThumb(8, 8, 0)).toEqual([]);
    expect(scrollThumb(16, 8, 0)).toEqual(['┃', '┃', '┃', '┃', '│', '│', '│', '│']);
    expect(scrollThumb(16, 8, 8)).toEqual(['│', '│', '│', '│', '┃', '┃', '┃', '┃']);
    expect(scrollThumb(100, 8, 46).indexOf('┃')).toBe(4);
    expect(scrollThumb(100, 8, 500).lastIndexOf('┃')).toBe(7);
    expect(listWindow(0, 20)).toEqual({ at: 0, start: 0 });
    expect(listWindow(10, 20)).toEqual({ at: 10, start: 6 });
    expect(listWindow(99, 20)).toEqual({ at: 19, start: 12 });
  });

  it('parses SGR mouse events and cursor reports; finds the frame row of a click', () => {
    expect(parseKey('\x1b[<0;12;7M')).toEqual({ type: 'mouse', button: 0, x: 12, y: 7, release: false });
    expect(parseKey('\x1b[<0;12;7m')).toMatchObject({ release: true });
    expect(parseKey('\x1b[<68;1;2M')).toMatchObject({ button: 64 });
    expect(parseKey('\x1b[<65;1;2M')).toMatchObject({ button: 65 });
    expect(parseKey('\x1b[24;1R')).toEqual({ type: 'cursor', row: 24, column: 1 });
    // The frame (10 rows) ends just above the cursor, or on it when it fills the terminal.
    expect(frameRowAt(14, { cursorRow: 15, frameHeight: 10, terminalRows: 40 })).toBe(9);
    expect(frameRowAt(5, { cursorRow: 15, frameHeight: 10, terminalRows: 40 })).toBe(0);
    expect(frameRowAt(4, { cursorRow: 15, frameHeight: 10, terminalRows: 40 })).toBeUndefined();
    expect(frameRowAt(15, { cursorRow: 15, frameHeight: 10, terminalRows: 40 })).toBeUndefined();
    expect(frameRowAt(40, { cursorRow: 40, frameHeight: 40, terminalRows: 40 })).toBe(39);
  });

  it('turns reporting on, and off once: by its disposer or at exit', () => {
    const written: string[] = [];
    const off = enableMouse({ write: (text: string) => written.push(text) });
    expect(written).toEqual([MOUSE_ON]);
    expect(process.listeners('exit')).toContain(off);
    off();
    off();
    expect(written).toEqual([MOUSE_ON, MOUSE_OFF]);
    expect(process.listeners('exit')).not.toContain(off);
    const again: string[] = [];
    const offAtExit = enableMouse({ write: (text: string) => again.push(text) });
    process.emit('exit', 0);
    expect(again).toEqual([MOUSE_ON, MOUSE_OFF]);
    expect(process.listeners('exit')).not.toContain(offAtExit);
  });
});

describe('panel scrollbar and mouse in the ink app', () => {
  it('shows the thumb past eight jobs; a click selects a row, a second opens it; the wheel scrolls', async () => {
    // One slot, its first model call held: the first job runs, the other eleven wait queued.
    const sim = await startSim(cleanups, { faults: { 1: { kind: 'hang_before_headers' } } });
    const session = new AgentSession({ config: makeConfig(sim, await makeWorkspace(cleanups), { maxConcurrent: 1 }), closeExecutor: true });
    watchManager(session.manager);
    cleanups.add(() => session.close({ timeoutMs: 2_000 }));
    const chat = new ChatController({ session, closeTimeoutMs: 2_000 });
    for (let i = 1; i <= 12; i++) session.manager.spawn({ task: `task ${i}`, label: `job ${i}`, role: 'user', wave: null });
    const app = render(createElement(ChatApp, { chat }));
    cleanups.add(() => app.unmount());
    const frame = () => app.lastFrame() ?? '';
    const queries: number[] = [];
    // What the app writes to the terminal besides frames: the cursor query of a click.
    const write = app.stdout.write.bind(app.stdout);
    app.stdout.write = (text: string) => (text === CURSOR_QUERY ? queries.push(1) > 0 : write(text));

    app.stdin.write('\x1bOR');
    await waitFor(() => frame().includes('Background agents · 12 jobs'), 'the panel');
    const lines = () => frame().split('\n');
    // Eight rows and a thumb on the top half of the track (rows 1-8 of 12 shown).
    const thumbRows = () => lines().filter((l) => /bg-\d+ .*[┃│]\s*│?\s*$/.test(l));
    expect(thumbRows()).toHaveLength(8);
    const thumbOf = () =>
      thumbRows()
        .map((l) => (l.includes('┃') ? '┃' : '│'))
        .join('');
    expect(thumbOf()).toBe('┃┃┃┃┃│││');
    expect(frame()).toContain('↓ 4 more');

    // A click on bg-3's row: the app asks where the cursor is; the answer places the frame.
    const clickOn = async (id: string) => {
      // The panel's row, not the transcript's line about the same job.
      const title = lines().findIndex((l) => l.includes('Background agents ·'));
      const row = lines().findIndex((l, i) => i > title && l.includes(`${id} "job`));
      expect(row).toBeGreaterThan(-1);
      const asked = queries.length;
      app.stdin.write(`\x1b[<0;5;${row + 1}M`);
      await waitFor(() => queries.length === asked + 1, 'the cursor query');
      app.stdin.write(`\x1b[<0;5;${row + 1}m`);
      // The screen is the transcript then the frame: the cursor sits on the row below it.
      app.stdin.write(`\x1b[${lines().length + 1};1R`);
    };
    await clickOn('bg-3');
    await waitFor(() => chat.panel.selected === 2, 'bg-3 selected');
    await clickOn('bg-3');
    await waitFor(() => frame().includes('Background agent bg-3 (Esc'), "bg-3's detail");
    app.stdin.write('\x1b');
    await waitFor(() => frame().includes('Background agents · 12 jobs'), 'back to the list');

    // The wheel: three rows a step, down then up.
    app.stdin.write('\x1b[<65;5;5M');
    await waitFor(() => chat.panel.selected === 5, 'wheel down');
    app.stdin.write('\x1b[<65;5;5M\x1b[<65;5;5M');
    await waitFor(() => chat.panel.selected === 11, 'wheel down to the last');
    // Rows 5-12 of 12 shown: the thumb has moved to the bottom of the track.
    await waitFor(() => thumbOf() === '│││┃┃┃┃┃', 'the thumb at the bottom');
    app.stdin.write('\x1b[<64;5;5M');
    await waitFor(() => chat.panel.selected === 8, 'wheel up');
    // A click outside the list changes nothing.
    const asked = queries.length;
    app.stdin.write('\x1b[<0;5;1M');
    await waitFor(() => queries.length === asked + 1, 'the cursor query');
    app.stdin.write(`\x1b[${lines().length + 1};1R`);
    expect(chat.panel.selected).toBe(8);
  }, 60_000);
});
