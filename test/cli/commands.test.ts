/**
 * The CLI as a user runs it: `node dist/cli/index.js` in a child process (build first), against
 * the built-in simulator or one started here. Exit codes: 0 ok, 1 failure, 2 usage, 130 SIGINT.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT, describeResult, jsonl, parseJsonLines, requireBuiltCli, runCli, spawnCli } from '../helpers/cli.js';
import { cleanupOf, waitFor, type Cleanup } from '../helpers/cleanup.js';
import { tempWorkspace } from '../helpers/config.js';
import { startSim } from '../helpers/sim.js';

const TWO_QUESTIONS = 'Answer these:\n1. Where is the tool loop implemented?\n2. How are API keys redacted?';

requireBuiltCli();

/** The demo's five agents search the whole repository: a generous safety net beside the file's other CLI runs on a busy machine. */
const DEMO_TIMEOUT_MS = 120_000;

/** A temp workspace with a few files, removed after the test; the CLI runs with it as cwd. */
const workspace = (cleanup: Cleanup, files?: Record<string, string>) => tempWorkspace(files, cleanup);

// Side by side (describe.concurrent): each test runs its own CLI processes in its own workspace,
// torn down by its own cleanup list.
describe.concurrent('forkpool run', () => {
  it('answers a two-question prompt with the built-in simulator and exits 0', async (context) => {
    const cleanup = cleanupOf(context);
    const r = await runCli(['run', '--sim-latency', '0', TWO_QUESTIONS], { cwd: workspace(cleanup), cleanup });
    expect(r.code, describeResult(r)).toBe(0);
    expect(r.stderr).toContain('using the built-in simulated model');
    expect(r.stdout).toContain('I started 2 background agents');
    expect(r.stdout).toMatch(/Here is what the 2 background agents found:\n- .+\n- .+/);
    // The follow-up is one line saying why (here: the whole wave ended), never its input.
    expect(r.stderr).toContain("… turn 1's wave finished: follow-up turn 2");
    expect(r.stderr).not.toContain('<background_results>');
  });

  it('prints only JSON lines with --json: spawns, one job_done per job, answers and usage', async (context) => {
    const cleanup = cleanupOf(context);
    const r = await runCli(['run', '--json', '--sim-latency', '0', TWO_QUESTIONS], { cwd: workspace(cleanup), cleanup });
    expect(r.code, describeResult(r)).toBe(0);
    const events = parseJsonLines(r.stdout);
    const of = (type: string) => events.filter((e) => e.type === type);
    const spawned = of('job_spawned').map((e) => e.id);
    expect(spawned).toHaveLength(2);
    expect(
      of('job_done')
        .map((e) => e.id)
        .sort(),
    ).toEqual([...spawned].sort());
    for (const done of of('job_done')) expect(done).toMatchObject({ status: expect.stringMatching(/^(ok|partial|error)$/), label: expect.any(String) });
    const answers = of('answer');
    expect(answers.length).toBeGreaterThanOrEqual(2);
    expect(answers.at(-1)).toMatchObject({ followUp: true, stopReason: 'final', text: expect.stringContaining('background agents found') });
    expect(of('usage')).toHaveLength(1);
    expect(of('follow_up')).toEqual([
      { type: 'follow_up', turn: 2, cause: { reasons: [{ kind: 'wave', wave: 1 }], delivered: { agents: 2, user: 0 }, stillRunning: 0 } },
    ]);
    // Human notes go nowhere with --json: stderr carries no spawn lines.
    expect(r.stderr).not.toContain('spawned');
  });

  it(
    '--demo --json carries the peer, the alert and the nested job in its events',
    async (context) => {
      const cleanup = cleanupOf(context);
      const r = await runCli(['run', '--demo', '--json', '--sim-latency', '0', '--workspace', REPO_ROOT], {
        cwd: workspace(cleanup, {}),
        cleanup,
        timeoutMs: DEMO_TIMEOUT_MS,
      });
      expect(r.code, describeResult(r)).toBe(0);
      const events = parseJsonLines(r.stdout);
      const of = (type: string) => events.filter((e) => e.type === type);
      const spawned = of('job_spawned');
      expect(spawned.filter((e) => e.depth === 1)).toHaveLength(5);
      expect(spawned.find((e) => e.agent === 'scout')).toBeDefined();
      const nested = spawned.find((e) => e.depth === 2);
      expect(nested?.parentJobId).toMatch(/^bg-\d+$/);
      const alert = of('alert')[0];
      expect(alert).toMatchObject({ jobId: expect.stringMatching(/^bg-\d+$/), severity: 'warning', message: expect.any(String) });
      // The alert came before its job's job_done.
      const alertAt = events.indexOf(alert as (typeof events)[number]);
      const doneAt = events.findIndex((e) => e.type === 'job_done' && e.id === alert?.jobId);
      expect(alertAt).toBeLessThan(doneAt);
      const parentDone = of('job_done').find((e) => e.id === nested?.parentJobId);
      expect(parentDone).toMatchObject({ children: [nested?.id], childrenOnEnd: 'waited' });
    },
    DEMO_TIMEOUT_MS + 10_000,
  );

  it('reads the prompt from stdin with "-"', async (context) => {
    const cleanup = cleanupOf(context);
    const r = await runCli(['run', '--sim-latency', '0', '-'], { cwd: workspace(cleanup), input: 'Where is the tool loop implemented?', cleanup });
    expect(r.code, describeResult(r)).toBe(0);
    expect(r.stdout.trim().length).toBeGreaterThan(0);
  });

  it(
    '--demo over the repository names every background agent in the synthesis, with a peer agent, an alert and a nested job',
    async (context) => {
      const cleanup = cleanupOf(context);
      const r = await runCli(['run', '--demo', '--sim-latency', '0', '--workspace', REPO_ROOT], {
        cwd: workspace(cleanup, {}),
        cleanup,
        timeoutMs: DEMO_TIMEOUT_MS,
      });
      expect(r.code, describeResult(r)).toBe(0);
      const labels = [...r.stderr.matchAll(/^● bg-\d+(?: \[agent \w+\])? "([^"]+)" spawned$/gm)].map((m) => m[1]);
      expect(labels).toHaveLength(5);
      expect(r.stdout).toContain('Here is what the 5 background agents found:');
      for (const label of labels) expect(r.stdout).toContain(`- ${label}: `);
      expect(r.stderr).toMatch(/^● bg-\d+ \[agent scout\] "/m);
      expect(r.stderr).toMatch(/^⚠ bg-\d+ "[^"]+" alert \(warning\): /m);
      expect(r.stderr).toMatch(/└ ● bg-\d+ "[^"]+" spawned by bg-\d+ \(depth 2\)/);
      expect(r.stdout).toContain('Alerts they raised:');
    },
    DEMO_TIMEOUT_MS + 10_000,
  );

  it('never prints the API key, even at debug level', async (context) => {
    const cleanup = cleanupOf(context);
    const key = 'sk-secret-cli-7f3e9a1b2c4d5e6f';
    const server = await startSim(cleanup);
    const r = await runCli(['run', '--json', '--log-level', 'debug', '--base-url', server.url, TWO_QUESTIONS], {
      cwd: workspace(cleanup),
      env: { OPENAI_API_KEY: key },
      cleanup,
    });
    expect(r.code, describeResult(r)).toBe(0);
    expect(server.requests.length).toBeGreaterThan(0);
    // Debug logging really happened (so the check below means something).
    expect(r.stderr).toContain('parent tool call');
    expect(r.stdout).not.toContain(key);
    expect(r.stderr).not.toContain(key);
    expect(r.stdout).not.toContain('"type":"sim"');
  });

  it('exits 2 naming the flag for a bad flag value, an unknown option or a bad choice', async (context) => {
    const cleanup = cleanupOf(context);
    const cases: Array<[string[], string]> = [
      [['run', '--concurrency', 'abc', 'hi'], '--concurrency'],
      [['run', '--bogus-flag', 'hi'], '--bogus-flag'],
      [['run', '--isolation', 'process', 'hi'], '--isolation'],
      [['fanout', '--max-iterations', '0', '-'], '--max-iterations'],
      [['fanout', '--max-turns', '0', '-'], '--max-turns'],
      [['sim', '--fault-rate', '2'], '--fault-rate'],
    ];
    const results = await Promise.all(cases.map(([args]) => runCli(args, { cwd: workspace(cleanup, {}), cleanup })));
    results.forEach((r, i) => {
      expect(r.code, describeResult(r)).toBe(2);
      expect(r.stderr).toContain(cases[i]?.[1]);
      expect(r.stdout).toBe('');
    });
  });

  it('exits 2 without a prompt', async (context) => {
    const cleanup = cleanupOf(context);
    const r = await runCli(['run'], { cwd: workspace(cleanup, {}), cleanup });
    expect(r.code, describeResult(r)).toBe(2);
    expect(r.stderr).toContain('give a prompt');
  });

  it('exits 2 naming the field for a bad config file, found or given', async (context) => {
    const cleanup = cleanupOf(context);
    const cwd = workspace(cleanup, { 'forkpool.config.json': JSON.stringify({ background: { maxConcurrent: 0 } }), 'other.json': '{"modle": "x"}' });
    const found = await runCli(['run', 'hi'], { cwd, cleanup });
    expect(found.code, describeResult(found)).toBe(2);
    expect(found.stderr).toContain('invalid configuration');
    expect(found.stderr).toContain('"background.maxConcurrent"');
    expect(found.stderr).toContain(path.join(cwd, 'forkpool.config.json'));
    const given = await runCli(['run', '--config', 'other.json', 'hi'], { cwd, cleanup });
    expect(given.code, describeResult(given)).toBe(2);
    expect(given.stderr).toContain('"modle"');
  });

  it('exits 2 naming the environment variable for a bad env value', async (context) => {
    const cleanup = cleanupOf(context);
    const r = await runCli(['run', 'hi'], { cwd: workspace(cleanup, {}), env: { FORKPOOL_MAX_BACKGROUND_AGENTS: 'abc' }, cleanup });
    expect(r.code, describeResult(r)).toBe(2);
    expect(r.stderr).toContain('FORKPOOL_MAX_BACKGROUND_AGENTS');
  });
});

describe.concurrent('forkpool sim', () => {
  it('prints a listening line, serves the API, and exits 0 on SIGTERM', async (context) => {
    const cleanup = cleanupOf(context);
    const p = spawnCli(['sim', '--port', '0'], { cleanup });
    const stdout = await p.waitForStdout((s) => s.includes('\n'));
    const [listening] = parseJsonLines(stdout);
    expect(listening).toMatchObject({ type: 'listening', url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/v1$/) });
    const url = String(listening?.url);
    const models = await fetch(`${url}/models`);
    expect(models.status).toBe(200);
    expect(await models.json()).toMatchObject({ object: 'list', data: [{ id: 'forkpool-sim' }] });
    const chat = await fetch(`${url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hello' }] }),
    });
    expect(((await chat.json()) as { object: string }).object).toBe('chat.completion');
    p.child.kill('SIGTERM');
    const r = await p.exited;
    expect(r.code, describeResult(r)).toBe(0);
  });

  it('refuses a non-loopback host', async (context) => {
    const cleanup = cleanupOf(context);
    const r = await runCli(['sim', '--port', '0', '--host', '0.0.0.0'], { cleanup });
    expect(r.code, describeResult(r)).toBe(2);
    expect(r.stderr).toContain('loopback');
  });
});

describe.concurrent('forkpool fanout', () => {
  const good = (i: number) => ({ task: `Where is the tool loop implemented? (${i})`, label: `job-${i}` });

  it('runs the good lines, reports bad ones by line number, and exits 1', async (context) => {
    const cleanup = cleanupOf(context);
    const cwd = workspace(cleanup);
    // Lines 3 (not JSON) and 5 (no task) are bad; the blank line 8 is skipped silently.
    const file = path.join(cwd, 'tasks.jsonl');
    writeFileSync(file, jsonl([good(1), good(2), '{"task": "unterminated', good(4), { label: 'no task' }, good(6), { task: 'Where are keys redacted?' }, '']));
    const r = await runCli(['fanout', '--concurrency', '3', file], { cwd, cleanup });
    expect(r.code, describeResult(r)).toBe(1);
    const results = parseJsonLines(r.stdout);
    expect(results).toHaveLength(5);
    for (const result of results) {
      expect(result).toMatchObject({ id: expect.stringMatching(/^bg-\d+$/), status: expect.any(String), label: expect.any(String), line: expect.any(Number) });
      expect(['ok', 'partial', 'error']).toContain(result.status);
    }
    expect(results.map((x) => x.line).sort()).toEqual([1, 2, 4, 6, 7]);
    expect(results.find((x) => x.line === 7)?.label).toBe('line 7');
    expect(results.find((x) => x.line === 4)?.label).toBe('job-4');
    expect(new Set(results.map((x) => x.id)).size).toBe(5);
    expect(r.stderr).toMatch(/line 3: not valid JSON/);
    expect(r.stderr).toMatch(/line 5: .*task/);
    expect(r.stderr).not.toMatch(/line (1|2|4|6|7|8):/);
    expect(r.stderr).toContain('2 invalid line(s)');
  });

  it('exits 0 when every line is good', async (context) => {
    const cleanup = cleanupOf(context);
    const cwd = workspace(cleanup);
    writeFileSync(path.join(cwd, 'ok.jsonl'), jsonl([good(1), good(2), good(3)]));
    const r = await runCli(['fanout', 'ok.jsonl'], { cwd, cleanup });
    expect(r.code, describeResult(r)).toBe(0);
    expect(
      parseJsonLines(r.stdout)
        .map((x) => x.line)
        .sort(),
    ).toEqual([1, 2, 3]);
  });

  it("--max-turns is a job's one turn limit: past --max-iterations, it ends partial at its turns; a line asking more is refused", async (context) => {
    const cleanup = cleanupOf(context);
    // Research answers of 12 model calls on the built-in simulator; the parent's cap (3) is not the jobs'.
    const input = jsonl([good(1), { ...good(2), budget: { maxTurns: 9 } }]);
    const r = await runCli(['fanout', '--sim-steps', '12', '--max-iterations', '3', '--max-turns', '6', '-'], { cwd: workspace(cleanup), input, cleanup });
    const results = parseJsonLines(r.stdout);
    expect(
      results.find((x) => x.line === 1),
      describeResult(r),
    ).toMatchObject({
      status: 'partial',
      stopReason: 'budget_exceeded',
      budgetExceeded: 'maxTurns',
      budget: { limits: { maxTurns: 6 }, spent: { turns: 6 } },
    });
    expect(results.find((x) => x.line === 2)).toMatchObject({ status: 'refused', error: { code: 'BUDGET_OVER_LIMIT' } });
    expect(r.stderr).toContain('may use at most 6 model calls per job');
  });

  it('reads tasks from stdin with "-"', async (context) => {
    const cleanup = cleanupOf(context);
    const r = await runCli(['fanout', '-'], { cwd: workspace(cleanup), input: jsonl([good(1), good(2)]), cleanup });
    expect(r.code, describeResult(r)).toBe(0);
    expect(
      parseJsonLines(r.stdout)
        .map((x) => x.label)
        .sort(),
    ).toEqual(['job-1', 'job-2']);
  });

  it('on SIGINT cancels what is left, prints one JSON line per job and exits 130', async (context) => {
    const cleanup = cleanupOf(context);
    const server = await startSim(cleanup, { latencyMs: 2_000 });
    const cwd = workspace(cleanup);
    writeFileSync(path.join(cwd, 'six.jsonl'), jsonl([1, 2, 3, 4, 5, 6].map(good)));
    const p = spawnCli(['fanout', '--concurrency', '2', '--base-url', server.url, 'six.jsonl'], { cwd, cleanup });
    // fanout prints nothing until a job ends; the sim seeing a request means jobs are running.
    await waitFor(() => server.requests.length >= 1, 'the first model request');
    p.child.kill('SIGINT');
    const r = await p.exited;
    expect(r.code, describeResult(r)).toBe(130);
    const results = parseJsonLines(r.stdout);
    expect(results).toHaveLength(6);
    expect(results.map((x) => x.line).sort()).toEqual([1, 2, 3, 4, 5, 6]);
    // Each request takes 2 s and a job needs several: nothing could finish, all were cut short.
    for (const result of results) expect(result).toMatchObject({ status: 'cancelled', id: expect.any(String), label: expect.any(String) });
    expect(r.stderr).toContain('SIGINT');
  });
});
