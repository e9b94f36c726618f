/**
 * What the CLI prints besides its results (issue 36, "Noise"): a warning on a stderr that is
 * not a terminal is a human line (JSON log lines only with --json); the server's exposure
 * warning once; a `run --json` error without a stack or this machine's paths; a port that
 * cannot be bound in one line. The built CLI in child processes (pipes, never a terminal).
 */
import { describe, expect, it } from 'vitest';
import { useCleanup } from '../helpers/cleanup.js';
import { describeResult, jsonl, parseJsonLines, REPO_ROOT, runCli, requireBuiltCli } from '../helpers/cli.js';
import { tempWorkspace } from '../helpers/config.js';

const cleanup = useCleanup();

requireBuiltCli();

const TOKEN = 'noise-test-token-0123456789abcdef';
const stackLine = /\n\s+at /;

describe('CLI noise', () => {
  it('a logged warning on a piped stderr is one human line; with --json it is a JSON log line', async () => {
    // A bubblewrap that is not there: the manager logs its one no-sandbox warning.
    const cwd = tempWorkspace({ 'a.txt': 'alpha\n', 'forkpool.config.json': JSON.stringify({ bwrapPath: '/nonexistent/forkpool-test/bwrap' }) }, cleanup);
    const input = jsonl([{ task: 'find a.txt' }]);
    const [human, json] = await Promise.all([
      runCli(['fanout', '-', '--no-progress', '--sim-latency', '0'], { cwd, cleanup, input }),
      runCli(['fanout', '-', '--json', '--sim-latency', '0'], { cwd, cleanup, input }),
    ]);
    const humanWarnings = human.stderr.split('\n').filter((l) => l.includes('bubblewrap is not usable here'));
    expect(humanWarnings, describeResult(human)).toEqual([expect.stringMatching(/^(?:\[[\d:.]+\] )?WARN: forkpool: bubblewrap is not usable here/)]);
    expect(human.stderr).not.toMatch(/^\{/m);
    const jsonWarnings = json.stderr.split('\n').filter((l) => l.includes('bubblewrap is not usable here'));
    expect(jsonWarnings, describeResult(json)).toHaveLength(1);
    expect(JSON.parse(jsonWarnings[0] ?? '')).toMatchObject({ level: 40, msg: expect.stringMatching(/^forkpool: bubblewrap is not usable here/) });
  });

  it('serve on an address that is not loopback: the warning once, and a failed bind in one line', async () => {
    // TEST-NET-1: on no interface, so the bind fails after the warning; a dead model endpoint (no simulator).
    const r = await runCli(['serve', '--host', '192.0.2.1', '--port', '0', '--base-url', 'http://127.0.0.1:9/v1'], {
      env: { FORKPOOL_SERVER_TOKEN: TOKEN },
      cleanup,
      timeoutMs: 20_000,
    });
    expect([r.timedOut, r.code]).toEqual([false, 1]);
    expect(r.stderr.match(/not loopback/g), describeResult(r)).toHaveLength(1);
    expect(r.stderr).toMatch(/^forkpool: listen EADDRNOTAVAIL: .*192\.0\.2\.1 \[EADDRNOTAVAIL\]$/m);
    expect(r.stderr).not.toMatch(stackLine);
  });

  it('run --json against a dead endpoint: the error is its code and message, no stack and no path of this machine', async () => {
    const cwd = tempWorkspace({ 'a.txt': 'alpha\n', 'forkpool.config.json': JSON.stringify({ maxRetries: 0 }) }, cleanup);
    const r = await runCli(['run', '--json', '--base-url', 'http://127.0.0.1:9/v1', 'hello'], { cwd, cleanup, env: { OPENAI_API_KEY: 'test-key' } });
    expect(r.code, describeResult(r)).toBe(1);
    const answer = parseJsonLines(r.stdout).find((e) => e.type === 'answer');
    expect(answer?.error, describeResult(r)).toEqual({ code: 'MODEL_REQUEST_FAILED', message: expect.any(String) });
    expect(r.stdout).not.toMatch(/\\n\s+at |"stack"/);
    expect(r.stdout).not.toContain(REPO_ROOT);
  });
});
