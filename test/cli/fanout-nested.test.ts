/**
 * `forkpool fanout` reports its lines' jobs: a nested job (one a line's job spawned) ends into its
 * parent, which reads its result. Its end is not a line's end: the run goes on until the parent
 * ends, and prints the parent's line only. Before, the child's end counted as the line's, so a
 * parent asleep after its child ended was stopped (`1 interrupted`) and the run exited early.
 * The built CLI in a child process (build first), on a scripted simulator.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cleanupOf } from '../helpers/cleanup.js';
import { describeResult, parseJsonLines, runCli } from '../helpers/cli.js';
import { makeWorkspace } from '../helpers/config.js';
import { startSim } from '../helpers/sim.js';

const FINAL = 'Supervisor: the finder says src/net/retry.ts.';

describe('fanout: a line whose job spawns a job of its own', () => {
  it('the child ends while its parent sleeps: the run waits for the parent, prints its line once, and exits 0', async (context) => {
    const cleanup = cleanupOf(context);
    const workspace = await makeWorkspace(cleanup);
    const configFile = path.join(workspace, 'nested.config.json');
    writeFileSync(
      configFile,
      JSON.stringify({ model: 'forkpool-sim', maxRetries: 0, background: { scheduler: 'sleep', maxDepth: 2, maxConcurrent: 1, maxAlertsPerJob: 0 } }),
    );
    // One slot: the child runs only once the parent sleeps, so it ends well before the parent wakes.
    const sim = await startSim(cleanup, {
      script: [
        {
          toolCalls: [
            { name: 'spawn_background_agent', arguments: { task: 'Find where the retry backoff is.', label: 'finder' } },
            { name: 'schedule_next_turn', arguments: { after: '3s', reason: 'read the finder result' } },
          ],
        },
        { content: 'The retry backoff is in src/net/retry.ts (answer 4242).' },
        { content: FINAL },
      ],
    });
    const r = await runCli(['fanout', '-', '--config', configFile, '--base-url', sim.url, '--workspace', workspace, '--no-progress'], {
      input: JSON.stringify({ task: 'Supervise: delegate the search, then sleep.', label: 'supervisor' }),
      timeoutMs: 90_000,
    });
    expect(r.code, describeResult(r)).toBe(0);
    expect(r.stderr).not.toContain('interrupted');
    const lines = parseJsonLines(r.stdout) as Array<{ label: string; status: string; result: string; parentJobId?: string | null }>;
    expect(lines).toEqual([expect.objectContaining({ label: 'supervisor', status: 'ok', result: FINAL })]);
    sim.assertScriptDone();
  }, 120_000);
});
