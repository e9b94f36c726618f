/**
 * `forkpool chat` end to end: the built binary in a real terminal (tmux), keys sent as a person
 * types them, the screen read back. The simulator is made slow through its own options (long
 * research answers: `--sim-steps`, `--sim-latency`) so jobs and the parent's research turn
 * outlast the whole scenario; every step waits for text on the screen, never for time.
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLI_PATH, HAS_PROC, hasTmux, isAlive, liveProcesses, makeWorkspace, startTmux, useCleanup } from '../helpers/index.js';

const cleanup = useCleanup();

/** Lets a job make every model call of a slow research answer (the default budget is 50). */
const SLOW_CONFIG = JSON.stringify({ background: { budget: { maxTurns: 500, maxWallclockMinutes: 30 } } });

/**
 * Research answers of 100 model calls, each answered no sooner than 1.5 s: a job or a research
 * turn lasts at least 150 s however fast the machine, longer than every step below together
 * (at 500 ms, a CI machine loaded by other work once took longer than the jobs' 50 s).
 * The default per-job budget (50 model calls) would end jobs at half that: the workspace's config
 * raises it (see SLOW_CONFIG).
 */
const SLOW_SIM = ['--sim-latency', '1500', '--sim-steps', '100', '--max-iterations', '120', '--concurrency', '2'];

describe.skipIf(!hasTmux())('forkpool chat in a terminal (tmux)', () => {
  it(
    'fans out, shows the live count, panel, /bg start and Ctrl+J while busy, /bg stop, Esc keeps jobs, and quits leaving nothing',
    { timeout: 180_000 },
    async () => {
      const ws = await makeWorkspace(cleanup);
      await writeFile(path.join(ws, 'forkpool.config.json'), SLOW_CONFIG);
      const pane = await startTmux(cleanup, [process.execPath, CLI_PATH, 'chat', ...SLOW_SIM], { cwd: ws });
      await pane.screen('no model configured; using the built-in simulated model');
      await pane.screen('forkpool chat · the simulated model');
      await pane.screen('ask something, or /help', { visible: true });

      // A question that fans out: three jobs, two slots. The count goes up.
      await pane.type('Where is the retry backoff? Where is the LruCache class? What does the README say?');
      await pane.keys('Enter');
      await pane.screen(/● bg-3 "[^"]+" spawned in turn 1/);
      await pane.screen('⚙ 2 background agents running · 1 queued', { visible: true });
      await pane.screen('wave 1: 3 of 3 left', { visible: true });

      // The background panel: every job, its status and current tool.
      await pane.keys('F3');
      const panel = await pane.screen('Background agents · 3 jobs', { visible: true });
      expect(panel).toMatch(/bg-1 "[^"]+"\s+running/);
      expect(panel).toMatch(/bg-3 "[^"]+"\s+queued/);
      await pane.keys('F3');
      await pane.screen((s) => !s.includes('Background agents ·'), { visible: true, what: 'the panel hidden' });

      // A research turn keeps the parent busy. Turn 1 must have ended first: an Enter while it
      // still writes its answer only shows the busy hint (as it should).
      await pane.screen('I will report when they finish.');
      await pane.screen((s) => !s.includes('◐ turn 1') && s.includes('ask something'), { visible: true, what: 'turn 1 to end' });
      await pane.type('Where is the retry backoff implemented?');
      await pane.keys('Enter');
      await pane.screen('◐ turn 2', { visible: true });

      // Enter while busy: a hint, no job. Ctrl+J: the typed text becomes a user job.
      await pane.type('what does the cache evict first?');
      await pane.keys('Enter');
      await pane.screen('the model is busy: Ctrl+Enter (or Ctrl+J)', { visible: true });
      await pane.keys('C-j');
      await pane.screen('● bg-4 "what does the cache evict first?" started by you');
      await pane.type('/bg start where is the cache defined?');
      await pane.keys('Enter');
      await pane.screen('● bg-5 "where is the cache defined?" started by you');
      await pane.screen('⚙ 2 background agents running · 3 queued', { visible: true });
      // Enter while busy started nothing: only five jobs exist.
      expect(await pane.capture()).not.toContain('bg-6');

      // /bg stop a running job: the count goes down.
      await pane.type('/bg stop bg-1');
      await pane.keys('Enter');
      await pane.screen(/⊘ bg-1 "[^"]+" cancelled/);
      await pane.screen('⚙ 2 background agents running · 2 queued', { visible: true });

      // Esc cancels the turn; the jobs keep running.
      await pane.keys('Escape');
      await pane.screen('⊘ turn 2 cancelled; 4 background jobs keep running');
      await pane.screen((s) => s.includes('⚙ 2 background agents running · 2 queued') && !s.includes('◐ turn 2'), {
        visible: true,
        what: 'idle, jobs still running',
      });

      // /quit closes the manager within its bound and exits; nothing is left behind.
      const pid = await pane.pid();
      await pane.type('/quit');
      await pane.keys('Enter');
      const last = await pane.screen(/closed: 4 jobs cancelled/);
      expect(last).not.toContain('hard-stopped');
      expect(await pane.exited()).toBe(0);
      if (HAS_PROC) {
        expect(isAlive(pid)).toBe(false);
        expect(liveProcesses({ cwdUnder: ws })).toEqual([]);
      }
    },
  );
});
