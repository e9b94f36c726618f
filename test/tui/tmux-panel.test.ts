/**
 * The background panel's scrollbar and mouse end to end: the built `forkpool chat` in a real
 * terminal (tmux), mouse events sent as the raw SGR bytes a terminal writes (tmux's own
 * `send-keys -M` only replays a mouse event inside a key binding). tmux answers the chat's
 * cursor query like a terminal. The pane's mouse flags show reporting on while the chat runs
 * and off after it exits. Every step waits for the screen, never for time.
 */
import { execFileSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLI_PATH, hasTmux, makeWorkspace, startTmux, useCleanup } from '../helpers/index.js';

const cleanup = useCleanup();

/** Jobs that outlast the test: 100-call research answers at >= 1.5 s a call, one slot, the rest queued. */
const SLOW_CONFIG = JSON.stringify({ background: { budget: { maxTurns: 500, maxWallclockMinutes: 30 } } });
const SLOW_SIM = ['--sim-latency', '1500', '--sim-steps', '100', '--max-iterations', '120', '--concurrency', '1'];

describe.skipIf(!hasTmux())('the background panel in a terminal (tmux): scrollbar and mouse', () => {
  it('shows the thumb, selects and opens a row by clicks, scrolls by the wheel; mouse reporting is off after exit', { timeout: 180_000 }, async () => {
    const ws = await makeWorkspace(cleanup);
    await writeFile(path.join(ws, 'forkpool.config.json'), SLOW_CONFIG);
    const pane = await startTmux(cleanup, [process.execPath, CLI_PATH, 'chat', ...SLOW_SIM], { cwd: ws });
    const flags = () =>
      execFileSync('tmux', ['-L', pane.socket, 'display-message', '-p', '#{mouse_button_flag}#{mouse_sgr_flag}'], { encoding: 'utf8' }).trim();
    await pane.screen('ask something, or /help', { visible: true });
    expect(flags()).toBe('11');

    for (let i = 1; i <= 10; i++) {
      await pane.type(`/bg start question ${i}`);
      await pane.keys('Enter');
      await pane.screen(`● bg-${i} "question ${i}" started by you`);
    }
    await pane.keys('F3');
    const panel = await pane.screen('Background agents · 10 jobs', { visible: true });
    // Eight rows of ten: a thumb on the track beside them, and the rest below.
    expect(panel).toContain('┃');
    expect(panel).toContain('↓ 2 more');

    const rowOf = (screen: string, id: string) => {
      const lines = screen.split('\n');
      const title = lines.findIndex((l) => l.includes('Background agents ·'));
      return lines.findIndex((l, i) => i > title && l.includes(`${id} "question`)) + 1;
    };
    const click = async (y: number) => {
      await pane.bytes(`\x1b[<0;6;${y}M`);
      await pane.bytes(`\x1b[<0;6;${y}m`);
    };
    // One click selects bg-4; a second on the selected row opens its detail.
    const y = rowOf(panel, 'bg-4');
    expect(y).toBeGreaterThan(0);
    await click(y);
    // The selected row is drawn inverse (SGR 7), seen in a capture with its attributes.
    const selected = () =>
      execFileSync('tmux', ['-L', pane.socket, 'capture-pane', '-p', '-e'], { encoding: 'utf8' })
        .split('\n')
        .find((l) => l.includes('\x1b[7m') && l.includes('"question'));
    await pane.screen(() => selected()?.includes('bg-4 "question 4"') ?? false, { visible: true, what: 'bg-4 selected by the click' });
    await click(y);
    await pane.screen('Background agent bg-4 (Esc', { visible: true });
    await pane.keys('Escape');
    await pane.screen('Background agents · 10 jobs', { visible: true });

    // The wheel: two steps down move the selection (bg-4 → bg-10) and the window with it.
    await pane.bytes('\x1b[<65;6;5M');
    await pane.bytes('\x1b[<65;6;5M');
    await pane.screen('↑ 2 more', { visible: true });
    await pane.bytes('\x1b[<64;6;5M\x1b[<64;6;5M\x1b[<64;6;5M');
    await pane.screen((s) => s.includes('↓ 2 more') && !/↑ \d+ more/.test(s), { visible: true, what: 'scrolled back to the top' });

    await pane.keys('F3');
    await pane.type('/quit');
    await pane.keys('Enter');
    expect(await pane.exited()).toBe(0);
    expect(flags()).toBe('00');
  });

  it(
    'a drag along a row selects that part of its text: highlighted, copied to the clipboard (OSC 52: a tmux buffer) and said in the hint',
    { timeout: 180_000 },
    async () => {
      const ws = await makeWorkspace(cleanup);
      await writeFile(path.join(ws, 'forkpool.config.json'), SLOW_CONFIG);
      const pane = await startTmux(cleanup, [process.execPath, CLI_PATH, 'chat', ...SLOW_SIM], { cwd: ws });
      const tmux = (...args: string[]) => execFileSync('tmux', ['-L', pane.socket, ...args], { encoding: 'utf8' });
      // tmux keeps what an application copies by OSC 52 as a paste buffer only with set-clipboard on.
      tmux('set', '-g', 'set-clipboard', 'on');
      await pane.screen('ask something, or /help', { visible: true });
      for (let i = 1; i <= 2; i++) {
        await pane.type(`/bg start question ${i}`);
        await pane.keys('Enter');
        await pane.screen(`● bg-${i} "question ${i}" started by you`);
      }
      await pane.keys('F3');
      await pane.screen('Background agents · 2 jobs', { visible: true });
      // Terminal rows as they are (no -J: a long line wrapped over two rows counts as two).
      const lines = tmux('capture-pane', '-p').split('\n');
      const title = lines.findIndex((l) => l.includes('Background agents ·'));
      const row = lines.findIndex((l, i) => i > title && l.includes('bg-2 "question 2"'));
      expect(row).toBeGreaterThan(title);
      const y = row + 1;
      const wanted = 'bg-2 "question 2"';
      const from = (lines[row] ?? '').indexOf(wanted) + 1;
      const to = from + wanted.length - 1;
      // Press on its first character, drag (motion with the button held: 32) to its last, release there.
      await pane.bytes(`\x1b[<0;${from};${y}M`);
      await pane.bytes(`\x1b[<32;${from + 5};${y}M`);
      await pane.bytes(`\x1b[<32;${to};${y}M`);
      await pane.bytes(`\x1b[<0;${to};${y}m`);
      await pane.screen(`copied ${wanted.length} characters: ${wanted}`, { visible: true, what: `the hint (drag ${from}-${to} on row ${y})` });
      expect(tmux('show-buffer')).toBe(wanted);
      // Highlighted on the row: the selected text on a yellow background (SGR 43), the rest of the row not.
      const coloured = tmux('capture-pane', '-p', '-e')
        .split('\n')
        .find((l) => l.includes('question 2') && l.includes('43m'));
      expect(coloured).toBeDefined();
      expect(coloured?.replace(/\x1b\[[0-9;]*m/g, '')).toContain(wanted);
      expect(coloured).toMatch(/43m[^\x1b]*bg-2 "question 2"/);
      // The drag was no click: bg-2's detail did not open, and bg-1 is still the selected row.
      expect(await pane.capture()).not.toContain('Background agent bg-2 (Esc');

      await pane.keys('F3');
      await pane.type('/quit');
      await pane.keys('Enter');
      expect(await pane.exited()).toBe(0);
    },
  );
});
