/**
 * A real terminal for end-to-end tests of the chat: a tmux server on a private socket (one per
 * test, killed in cleanup), one pane running a command, keys sent with `send-keys`, the screen
 * read with `capture-pane`. The pane stays after its command exits (remain-on-exit), so a test
 * can read the last screen and the exit status.
 *
 *   const pane = await startTmux(cleanup, ['node', CLI_PATH, 'chat'], { cwd: ws });
 *   await pane.type('hello'); await pane.keys('Enter');
 *   await pane.screen('hello');
 */
import { execFile, execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Cleanup } from './cleanup.js';
import { runs, skipWithout } from './system.js';
import { waitFor } from './cleanup.js';
import { cliEnv } from './cli.js';
import { uniqueMarker } from './faults.js';

const run = promisify(execFile);

export interface TmuxPane {
  socket: string;
  /** Types text literally. */
  type(text: string): Promise<void>;
  /** Sends tmux key names (`Enter`, `Escape`, `C-j`, `F3`, `C-c`, …). */
  keys(...names: string[]): Promise<void>;
  /** Sends raw bytes, as hex pairs (for sequences tmux has no name for, e.g. a kitty Ctrl+Enter). */
  bytes(text: string): Promise<void>;
  /** The screen and its scrollback, wrapped lines joined. */
  capture(): Promise<string>;
  /**
   * Waits until the screen with its scrollback passes `test` (`visible`: the visible screen only,
   * for what changes in place, like the status bar); the timeout names `what` and shows the screen.
   */
  screen(test: string | RegExp | ((screen: string) => boolean), options?: { visible?: boolean; what?: string }): Promise<string>;
  /** The pane's process id (the command's, run without a shell). */
  pid(): Promise<number>;
  /** `dead` once the command has exited, with its exit status (synchronous: usable in waitFor). */
  status(): { dead: boolean; exitStatus?: number };
  /** Waits until the command has exited and tmux has its status; returns the status. */
  exited(): Promise<number>;
}

/**
 * True when tmux is installed (`.ci/run` installs it); false skips the tmux tests and one line says
 * so (under `.ci/run` they run and fail instead).
 */
export function hasTmux(): boolean {
  return !skipWithout('tmux', runs('tmux', ['-V']));
}

export async function startTmux(
  cleanup: Cleanup,
  command: readonly string[],
  options: { cwd: string; env?: Record<string, string>; width?: number; height?: number },
): Promise<TmuxPane> {
  const socket = `fp-tui-${uniqueMarker()}-${Date.now() % 100_000}`;
  const conf = path.join(tmpdir(), `${socket}.conf`);
  // No user config; the pane outlives its command; no status line taking a row.
  writeFileSync(conf, 'set -g remain-on-exit on\nset -g status off\nset -g history-limit 5000\n');
  // ink renders one frame only under CI: the chat in the pane must see a real terminal session.
  const env = cliEnv({ ...options.env });
  delete env.CI;
  delete env.CONTINUOUS_INTEGRATION;
  // The server runs outside the workspace (only the pane's command is in it, by -c).
  const tmux = (...args: string[]) => run('tmux', ['-L', socket, '-f', conf, ...args], { env, cwd: tmpdir() });
  await tmux('new-session', '-d', '-x', String(options.width ?? 120), '-y', String(options.height ?? 40), '-c', options.cwd, ...command);
  cleanup.add(() => tmux('kill-server').catch(() => {}));
  // Synchronous, so waitFor (which polls a plain function) can read the screen.
  const captureNow = (visible = false) =>
    execFileSync('tmux', ['-L', socket, '-f', conf, 'capture-pane', '-p', '-J', ...(visible ? [] : ['-S', '-5000'])], { env, cwd: tmpdir(), encoding: 'utf8' });
  let last = '';
  return {
    socket,
    type: async (text) => void (await tmux('send-keys', '-l', text)),
    keys: async (...names) => void (await tmux('send-keys', ...names)),
    bytes: async (text) => void (await tmux('send-keys', '-H', ...Buffer.from(text, 'utf8').toString('hex').match(/../g)!)),
    capture: async () => captureNow(),
    screen: async (test, { visible = false, what } = {}) => {
      const passes = typeof test === 'string' ? (s: string) => s.includes(test) : test instanceof RegExp ? (s: string) => test.test(s) : test;
      try {
        return await waitFor(
          () => {
            last = captureNow(visible);
            return passes(last) ? last : undefined;
          },
          what ?? String(test),
          { timeoutMs: 90_000, intervalMs: 100 },
        );
      } catch (error) {
        throw new Error(`${(error as Error).message}\n--- screen ---\n${last}`, { cause: error });
      }
    },
    pid: async () => Number((await tmux('display-message', '-p', '#{pane_pid}')).stdout.trim()),
    status,
    exited: async () => {
      const serverPid = Number((await tmux('display-message', '-p', '#{pid}')).stdout.trim());
      const done = await waitFor(
        () => {
          const now = status();
          if (now.dead) return now;
          // Debian's tmux is built with libutempter, which swaps in its own SIGCHLD handler while
          // it removes the pane's utmp record (when the pty closes). A command that exits inside
          // that window stays an unreaped zombie and tmux never learns its status (tmux/tmux#311):
          // the pane shows no "Pane is dead". Another SIGCHLD makes tmux reap it; harmless otherwise.
          try {
            process.kill(serverPid, 'SIGCHLD');
          } catch {
            // the server is gone: status() above will fail loudly on the next poll
          }
          return undefined;
        },
        'the command in the pane to exit',
        { timeoutMs: 90_000, intervalMs: 200 },
      );
      return done.exitStatus!;
    },
  };

  function status(): { dead: boolean; exitStatus?: number } {
    const [dead, code] = execFileSync('tmux', ['-L', socket, '-f', conf, 'display-message', '-p', '#{pane_dead} #{pane_dead_status}'], {
      env,
      cwd: tmpdir(),
      encoding: 'utf8',
    })
      .trim()
      .split(' ');
    // tmux may mark the pane dead a moment before it has the status.
    return dead === '1' && code !== undefined && code !== '' ? { dead: true, exitStatus: Number(code) } : { dead: false };
  }
}
