/**
 * A fan-out against an endpoint every job fails on alike (issue 36): failures are counted by
 * cause on stderr as they happen, a circuit breaker stops starting jobs after N in a row, the
 * run exits 1 with the cause in one line, and `--resume` on the same ledger runs only what was
 * not run. Against a real dead endpoint: a closed loopback port. Build first.
 */
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { describeResult, jsonl, parseJsonLines, requireBuiltCli, runCli } from '../helpers/cli.js';
import { cleanupOf } from '../helpers/cleanup.js';
import { tempWorkspace } from '../helpers/config.js';
import { FailureWatch, sharedKind } from '../../src/cli/fanout-failures.js';

requireBuiltCli();

/** A loopback port nothing listens on: bound once to get a free number, then closed. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Far more lines than the breaker lets start (at most MAX_IN_A_ROW + 2 × CONCURRENCY); the --resume runs the rest. */
const LINES = 40;
const MAX_IN_A_ROW = 5;
const CONCURRENCY = 2;

// Side by side: each test runs its own CLI processes in its own workspace.
describe.concurrent('fanout against a dead endpoint', () => {
  it('stops starting jobs after N failures in a row, says why in one line, exits 1; --resume runs the lines not run, each once', async (context) => {
    const cleanup = cleanupOf(context);
    // No retries: a refused connection fails its job at once (the breaker counts jobs, not time).
    const cwd = tempWorkspace({ 'a.txt': 'alpha\n', 'forkpool.config.json': JSON.stringify({ maxRetries: 0 }) }, cleanup);
    const ledger = path.join(tempWorkspace({}, cleanup), 'run.db');
    writeFileSync(path.join(cwd, 'tasks.jsonl'), jsonl(Array.from({ length: LINES }, (_, i) => ({ task: `find a.txt (${i + 1})` }))));
    const port = await closedPort();
    const flags = ['--json', '--no-progress', '--ledger', ledger];
    const first = await runCli(
      [
        'fanout',
        'tasks.jsonl',
        ...flags,
        '--concurrency',
        String(CONCURRENCY),
        '--base-url',
        `http://127.0.0.1:${port}/v1`,
        '--max-consecutive-failures',
        String(MAX_IN_A_ROW),
      ],
      { cwd, cleanup, env: { OPENAI_API_KEY: 'test-key' } },
    );
    expect(first.code, describeResult(first)).toBe(1);
    const records = parseJsonLines(first.stdout);
    for (const record of records) expect(['result', 'summary'], JSON.stringify(record)).toContain(record.type);
    const results = records.filter((r) => r.type === 'result');
    const summary = records.at(-1) as Record<string, unknown>;
    expect(summary.type).toBe('summary');
    // Jobs started, not time: every started job ran to its (failed) end and was printed; far fewer than the lines.
    expect(results.length).toBe(summary.started);
    expect(results.length).toBeGreaterThanOrEqual(MAX_IN_A_ROW);
    expect(results.length).toBeLessThanOrEqual(MAX_IN_A_ROW + 2 * CONCURRENCY);
    for (const result of results) expect(result.status).toBe('failed');
    expect(summary.failed).toBe(results.length);
    expect(summary.stoppedEarly).toMatch(new RegExp(`^${MAX_IN_A_ROW} jobs in a row failed with .*\\[MODEL_REQUEST_FAILED\\]`));
    // The cause as it happens, by cause, and the one line saying the fan-out stopped and what to do.
    expect(first.stderr).toMatch(/^forkpool fanout: 1 failed: .*\[MODEL_REQUEST_FAILED\]$/m);
    const stopLines = first.stderr.split('\n').filter((l) => l.includes('stopped early'));
    expect(stopLines, describeResult(first)).toEqual([
      expect.stringMatching(
        /^forkpool fanout: stopped early: \d+ jobs in a row failed with .*check --base-url.*; \d+ job\(s\) started, \d+ queued job\(s\) not started, input read up to line \d+; run the same command with --resume/,
      ),
    ]);
    // The jobs the stop kept from starting are not counted as failures of their own.
    expect(summary.failuresByCause).toEqual([{ cause: expect.stringMatching(/\[MODEL_REQUEST_FAILED\]$/), count: results.length }]);
    expect(first.stderr).not.toMatch(/\n\s+at /);

    // The endpoint fixed (the built-in simulator: no key, no URL): the same command with --resume.
    // ~35 jobs of one model call each, many at once: a minute's margin beside a busy machine.
    const second = await runCli(['fanout', 'tasks.jsonl', ...flags, '--concurrency', '16', '--sim-latency', '0', '--sim-steps', '1', '--resume'], {
      cwd,
      cleanup,
      timeoutMs: 120_000,
    });
    const again = parseJsonLines(second.stdout).filter((r) => r.type === 'result');
    const lines = again.map((r) => Number(r.line)).sort((a, b) => a - b);
    expect(lines, describeResult(second)).toEqual(Array.from({ length: LINES }, (_, i) => i + 1));
    // What failed before is printed from the ledger; everything else ran now, once.
    expect(again.filter((r) => r.fromLedger === true).map((r) => r.id)).toEqual(expect.arrayContaining(results.map((r) => r.id)));
    for (const r of again.filter((x) => x.fromLedger !== true)) expect(['ok', 'partial']).toContain(r.status);
    const secondSummary = parseJsonLines(second.stdout).at(-1) as Record<string, unknown>;
    expect(secondSummary).toMatchObject({ type: 'summary', started: LINES - results.length, stoppedEarly: null });
  }, 180_000);

  it('without --json the lines are as before: no type, no summary record', async (context) => {
    const cleanup = cleanupOf(context);
    const cwd = tempWorkspace({ 'a.txt': 'alpha\n' }, cleanup);
    const r = await runCli(['fanout', '-', '--no-progress', '--sim-latency', '0'], { cwd, cleanup, input: jsonl([{ task: 'find a.txt' }]) });
    expect(r.code, describeResult(r)).toBe(0);
    const records = parseJsonLines(r.stdout);
    expect(records).toHaveLength(1);
    expect(records[0]).not.toHaveProperty('type');
  });
});

describe('FailureWatch', () => {
  const refused = {
    status: 'failed' as const,
    error: { code: 'MODEL_REQUEST_FAILED' as const, message: 'model request failed after 4 attempt(s): connection error: ECONNREFUSED 127.0.0.1:9' },
  };
  const denied = {
    status: 'failed' as const,
    error: { code: 'MODEL_REQUEST_FAILED' as const, message: 'model request failed after 1 attempt(s): HTTP 401: {"message":"Incorrect API key"}' },
  };
  const toolFault = { status: 'failed' as const, error: { code: 'THREAD_LOST' as const, message: 'worker exited with code 1' } };

  it('groups by cause without the retry count; trips after N in a row of a shared kind; an answer or another failure resets the run', () => {
    const watch = new FailureWatch(3);
    expect(watch.record(refused)).toEqual({ note: '1 failed: connection error: ECONNREFUSED 127.0.0.1:9 [MODEL_REQUEST_FAILED]' });
    expect(watch.record({ ...refused, error: { ...refused.error, message: refused.error.message.replace('4 attempt', '2 attempt') } })).toEqual({});
    expect(watch.record({ status: 'ok' })).toEqual({});
    expect(watch.record(refused).tripped).toBeUndefined();
    expect(watch.record(toolFault).tripped).toBeUndefined();
    expect(watch.record(refused).tripped).toBeUndefined();
    expect(watch.record(refused).tripped).toBeUndefined();
    expect(watch.record(refused).tripped).toMatch(/^3 jobs in a row failed with connection error: ECONNREFUSED 127\.0\.0\.1:9/);
    expect(watch.causes()).toEqual([
      { cause: 'connection error: ECONNREFUSED 127.0.0.1:9 [MODEL_REQUEST_FAILED]', count: 6 },
      { cause: 'worker exited with code 1 [THREAD_LOST]', count: 1 },
    ]);
  });

  it('a refused key trips it and says to check the key; 0 switches it off; counts shown at 1, 10, 100', () => {
    expect(sharedKind('HTTP 401: nope [MODEL_REQUEST_FAILED]')).toBe('auth');
    expect(sharedKind('HTTP 500: oops [MODEL_REQUEST_FAILED]')).toBeUndefined();
    const auth = new FailureWatch(2);
    auth.record(denied);
    expect(auth.record(denied).tripped).toMatch(/check the API key/);
    const off = new FailureWatch(0);
    const notes: string[] = [];
    for (let i = 0; i < 100; i++) {
      const seen = off.record(refused);
      expect(seen.tripped).toBeUndefined();
      if (seen.note) notes.push(seen.note.split(' ')[0] ?? '');
    }
    expect(notes).toEqual(['1', '10', '100']);
  });
});
