/**
 * `forkpool fanout` as a user runs it (the built CLI in a child process, build first): queue
 * limits waited out, refused lines reported and the rest run, input streamed, one summary on
 * a signal, usage errors in one line with exit 2, rejected lines never echoed raw.
 * Exit codes: 0 every job ok/partial/error, 1 a failed/cancelled/timed-out job or a refused or
 * invalid line, 2 usage or configuration, 130 SIGINT, 143 SIGTERM.
 */
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { describeResult, jsonl, parseJsonLines, requireBuiltCli, runCli, spawnCli } from '../helpers/cli.js';
import { cleanupOf, waitFor, type Cleanup } from '../helpers/cleanup.js';
import { tempWorkspace } from '../helpers/config.js';
import { startSim } from '../helpers/sim.js';

requireBuiltCli();

/** A temp workspace, removed after the test. */
const workspace = (cleanup: Cleanup, files: Record<string, string> = { 'a.txt': 'alpha\n', 'src/loop.ts': 'export function toolLoop() {}\n' }) =>
  tempWorkspace(files, cleanup);
const summaryLines = (stderr: string) => stderr.split('\n').filter((l) => l.startsWith('fanout: '));

// Side by side (describe.concurrent, across the describes too): each test runs its own CLI
// processes in its own workspace, torn down by its own cleanup list.
describe.concurrent('fanout and the queue limit', () => {
  it('waits for room on QUEUE_FULL: 20 lines through background.queueLimit 2 all run, ok', async (context) => {
    const cleanup = cleanupOf(context);
    const cwd = workspace(cleanup, { 'a.txt': 'alpha\n', 'forkpool.config.json': JSON.stringify({ background: { queueLimit: 2, maxConcurrent: 2 } }) });
    const tasks = Array.from({ length: 20 }, (_, i) => ({ task: `find a.txt (${i + 1})` }));
    const r = await runCli(['fanout', '--sim-latency', '0', '-'], { cwd, input: jsonl(tasks), cleanup });
    expect(r.code, describeResult(r)).toBe(0);
    const results = parseJsonLines(r.stdout);
    expect(results.map((x) => x.line).sort((a, b) => Number(a) - Number(b))).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    for (const result of results) expect(result.status).toBe('ok');
    expect(r.stderr).not.toContain('QUEUE_FULL');
    expect(summaryLines(r.stderr)).toEqual([expect.stringMatching(/^fanout: 20 ok, 0 partial, .* 0 refused, 0 invalid line/)]);
  });
});

describe.concurrent('fanout with an over-long line', () => {
  it('refuses a 3 MB line while reading it (line number, size, limit), runs the others; model text in the JSON lines is escaped', async (context) => {
    const cleanup = cleanupOf(context);
    const cwd = workspace(cleanup);
    // A result with a C1 CSI, a line separator and a bidi override, which JSON.stringify leaves raw.
    const model = await startSim(cleanup, { script: [{ content: 'found\u009b2J\u2028\u202e' }, { content: 'found\u009b2J\u2028\u202e' }] });
    writeFileSync(path.join(cwd, 'long.jsonl'), jsonl([{ task: 'find a.txt' }, { task: 'x'.repeat(3 * 1024 * 1024) }, { task: 'find a.txt' }]));
    const r = await runCli(['fanout', 'long.jsonl', '--no-progress', '--base-url', model.url], { cwd, cleanup, env: { OPENAI_API_KEY: 'test-key' } });
    expect(r.code, describeResult(r)).toBe(1);
    expect(r.stderr).toMatch(/line 2: 3145739 bytes, over the limit of 2097152 bytes a line \(skipped\)/);
    expect(r.stdout).not.toMatch(/[\u007f-\u009f\u2028\u2029\u202a-\u202e]/);
    const records = parseJsonLines(r.stdout);
    expect(records.map((x) => x.line).sort()).toEqual([1, 3]);
    for (const record of records) expect(record.result).toBe('found\u009b2J\u2028\u202e');
    expect(summaryLines(r.stderr)).toEqual([expect.stringMatching(/^fanout: 2 ok, .* 0 refused, 1 invalid line/)]);
  });
});

describe.concurrent('fanout with a line refused part-way', () => {
  it('the issue reproduction: a task over 200,000 chars is refused by line number, the others run, one summary, exit 1', async (context) => {
    const cleanup = cleanupOf(context);
    const cwd = workspace(cleanup);
    writeFileSync(path.join(cwd, 'b.jsonl'), jsonl([{ task: 'find a.txt' }, { task: 'x'.repeat(200_001) }, { task: 'find a.txt' }]));
    const r = await runCli(['fanout', 'b.jsonl', '--no-progress', '--sim-latency', '0'], { cwd, cleanup });
    expect(r.timedOut, describeResult(r)).toBe(false);
    expect(r.code, describeResult(r)).toBe(1);
    const records = parseJsonLines(r.stdout);
    const refused = records.filter((x) => x.status === 'refused');
    const ran = records.filter((x) => x.status !== 'refused');
    expect(ran.map((x) => x.line).sort()).toEqual([1, 3]);
    for (const job of ran) expect(job.status).toBe('ok');
    expect(refused).toEqual([
      { line: 2, label: 'line 2', status: 'refused', error: { code: 'TOOL_ARGUMENTS_INVALID', message: expect.stringContaining('200000') } },
    ]);
    expect(r.stderr).toMatch(/line 2: refused: .*200000/);
    // The 200,001-char task is not echoed.
    expect(r.stderr).not.toContain('x'.repeat(100));
    expect(summaryLines(r.stderr)).toEqual([expect.stringMatching(/^fanout: 2 ok, .* 1 refused, 0 invalid line/)]);
  });
});

describe.concurrent('fanout streams its input', () => {
  it('runs line 1 and prints its result before line 2 is written', async (context) => {
    const cleanup = cleanupOf(context);
    const p = spawnCli(['fanout', '--sim-latency', '0', '-'], { cwd: workspace(cleanup), keepStdinOpen: true, cleanup });
    p.child.stdin?.write(`${JSON.stringify({ task: 'find a.txt', label: 'first' })}\n`);
    // If fanout read all of its input before starting, this never resolves (stdin is still open).
    const before = await p.waitForStdout((s) => s.includes('\n'));
    expect(parseJsonLines(before)).toEqual([expect.objectContaining({ line: 1, label: 'first', status: 'ok' })]);
    p.child.stdin?.end(`${JSON.stringify({ task: 'find a.txt', label: 'second' })}\n`);
    const r = await p.exited;
    expect(r.code, describeResult(r)).toBe(0);
    expect(parseJsonLines(r.stdout).map((x) => x.label)).toEqual(['first', 'second']);
  });
});

describe.concurrent('fanout on a signal', () => {
  it('SIGTERM mid-run: one summary line, one record per accepted job, exit 143', async (context) => {
    const cleanup = cleanupOf(context);
    const server = await startSim(cleanup, { latencyMs: 2_000 });
    const cwd = workspace(cleanup);
    writeFileSync(path.join(cwd, 'four.jsonl'), jsonl([1, 2, 3, 4].map((i) => ({ task: `find a.txt ${i}` }))));
    const p = spawnCli(['fanout', '--concurrency', '2', '--base-url', server.url, 'four.jsonl'], { cwd, cleanup });
    await waitFor(() => server.requests.length >= 1, 'the first model request');
    p.child.kill('SIGTERM');
    const r = await p.exited;
    expect(r.code, describeResult(r)).toBe(143);
    expect(summaryLines(r.stderr), describeResult(r)).toHaveLength(1);
    expect(
      parseJsonLines(r.stdout)
        .map((x) => x.line)
        .sort(),
    ).toEqual([1, 2, 3, 4]);
    expect(r.stderr).toContain('SIGTERM');
  });
});

describe.concurrent('fanout when its reader leaves (`fanout … | head -1`)', () => {
  it('stops quietly on EPIPE: no stack trace, one summary, exit 1', async (context) => {
    const cleanup = cleanupOf(context);
    const cwd = workspace(cleanup);
    writeFileSync(path.join(cwd, 'many.jsonl'), jsonl(Array.from({ length: 8 }, (_, i) => ({ task: `find a.txt ${i}` }))));
    const p = spawnCli(['fanout', '--concurrency', '1', '--sim-latency', '50', 'many.jsonl'], { cwd, cleanup });
    await p.waitForStdout((s) => s.includes('\n'));
    p.child.stdout?.destroy();
    const r = await p.exited;
    expect(r.code, describeResult(r)).toBe(1);
    expect(r.stderr).not.toMatch(/Unhandled|\n\s+at /);
    expect(summaryLines(r.stderr), describeResult(r)).toHaveLength(1);
  });
});

describe.concurrent('fanout and run: usage errors exit 2 with one clear line', () => {
  it('a missing input file, a folder as input, a missing or non-folder workspace', async (context) => {
    const cleanup = cleanupOf(context);
    const cwd = workspace(cleanup, { 'tasks.jsonl': jsonl([{ task: 'find a.txt' }]), 'file.txt': 'not a folder' });
    const cases: Array<[string[], RegExp]> = [
      [['fanout', 'missing.jsonl'], /^forkpool: input file "missing\.jsonl" does not exist$/],
      [['fanout', cwd], /^forkpool: input ".+" is a folder, not a JSONL file$/],
      [['fanout', '--workspace', path.join(cwd, 'nope'), 'tasks.jsonl'], /^forkpool: workspace ".+nope" does not exist$/],
      [['fanout', '--workspace', path.join(cwd, 'file.txt'), 'tasks.jsonl'], /^forkpool: workspace ".+file\.txt" is not a folder$/],
      [['run', '--workspace', path.join(cwd, 'nope'), 'hi'], /^forkpool: workspace ".+nope" does not exist$/],
    ];
    const results = await Promise.all(cases.map(([args]) => runCli(args, { cwd, cleanup })));
    results.forEach((r, i) => {
      expect(r.code, describeResult(r)).toBe(2);
      expect(r.stderr.trimEnd().split('\n'), describeResult(r)).toEqual([expect.stringMatching(cases[i]?.[1] ?? /^$/)]);
      expect(r.stdout).toBe('');
    });
  });

  it('sim --port on a port in use: one line naming the port, exit 2, no stack trace', async (context) => {
    const cleanup = cleanupOf(context);
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    cleanup.add(() => new Promise<void>((resolve) => blocker.close(() => resolve())));
    const port = (blocker.address() as { port: number }).port;
    const r = await runCli(['sim', '--port', String(port)], { cleanup });
    expect(r.code, describeResult(r)).toBe(2);
    expect(r.stderr.trimEnd().split('\n')).toEqual([
      expect.stringMatching(new RegExp(`^forkpool sim: 127\\.0\\.0\\.1 port ${port} is already in use \\(EADDRINUSE\\)`)),
    ]);
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });

  it('--timeout 100000 is a config error naming the field, the bound and the value', async (context) => {
    const cleanup = cleanupOf(context);
    const r = await runCli(['fanout', '--timeout', '100000', '-'], { cwd: workspace(cleanup), input: jsonl([{ task: 'find a.txt' }]), cleanup });
    expect(r.code, describeResult(r)).toBe(2);
    expect(r.stderr).toContain('config field "background.timeoutMinutes" (from flag --timeout): expected a value <= 35791, received 100000');
    expect(r.stdout).toBe('');
  });

  it('a large but valid timeout does not end the job timed_out (minutes flag, or timeoutMs in a file)', async (context) => {
    const cleanup = cleanupOf(context);
    const cwd = workspace(cleanup, { 'a.txt': 'alpha\n', 'ms.json': JSON.stringify({ background: { timeoutMs: 2_147_460_000 } }) });
    const input = jsonl([{ task: 'find a.txt' }]);
    const [minutes, ms] = await Promise.all([
      runCli(['fanout', '--sim-latency', '0', '--timeout', '35791', '-'], { cwd, input, cleanup }),
      runCli(['fanout', '--sim-latency', '0', '--config', 'ms.json', '-'], { cwd, input, cleanup }),
    ]);
    for (const r of [minutes, ms]) {
      expect(r.code, describeResult(r)).toBe(0);
      expect(parseJsonLines(r.stdout)).toEqual([expect.objectContaining({ line: 1, status: 'ok' })]);
      expect(r.stderr).not.toContain('TimeoutOverflowWarning');
    }
  });

  it('warns when max_background_agents and background.maxConcurrent are both set, naming both and the winner', async (context) => {
    const cleanup = cleanupOf(context);
    const cwd = workspace(cleanup, {
      'a.txt': 'alpha\n',
      'forkpool.config.json': JSON.stringify({ max_background_agents: 2, background: { maxConcurrent: 5 } }),
    });
    const r = await runCli(['fanout', '--sim-latency', '0', '-'], { cwd, input: jsonl([{ task: 'find a.txt' }]), cleanup });
    expect(r.code, describeResult(r)).toBe(0);
    expect(r.stderr).toContain(
      'forkpool: warning: config sets both "max_background_agents" (2) and "background.maxConcurrent" (5); using "max_background_agents" (2)',
    );
  });
});

describe.concurrent('fanout input lines and the summary', () => {
  it('a rejected line is shown by number with a short escaped preview: no control bytes reach the terminal', async (context) => {
    const cleanup = cleanupOf(context);
    const hostile = `{"task": "\u001b[2J\u001b]0;pwned\u0007 ${'y'.repeat(500)}`; // not JSON: unterminated
    const badKey = JSON.stringify({ task: 'find a.txt', '\u001b[31mred': 1 });
    const binary = Buffer.concat([Buffer.from('{"task": '), Buffer.from([0xff, 0xfe, 0x00, 0x1b, 0x9b]), Buffer.from('}')]).toString('latin1');
    const r = await runCli(['fanout', '--sim-latency', '0', '-'], {
      cwd: workspace(cleanup),
      input: jsonl([hostile, badKey, binary, { task: 'find a.txt' }]),
      cleanup,
    });
    expect(r.code, describeResult(r)).toBe(1);
    const noteLines = r.stderr.split('\n').filter((l) => l.startsWith('forkpool fanout: line'));
    expect(noteLines.map((l) => /line (\d+):/.exec(l)?.[1])).toEqual(['1', '2', '3']);
    // No ESC, BEL, NUL or C1 control anywhere on stderr; the escape shows as text instead.
    expect(r.stderr).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/);
    expect(noteLines[0]).toContain('\\u001b[2J');
    expect(noteLines[1]).toContain('\\u001b[31mred');
    for (const line of noteLines) expect(line.length).toBeLessThan(400);
    expect(noteLines[0]).toContain(`(${hostile.length} chars)`);
    expect(parseJsonLines(r.stdout).map((x) => x.line)).toEqual([4]);
  });

  it('a UTF-8 byte-order mark at the start of the input file is not part of line 1', async (context) => {
    const cleanup = cleanupOf(context);
    // As a Windows editor saves it. stdin goes through the same reader.
    const cwd = workspace(cleanup);
    writeFileSync(
      path.join(cwd, 'tasks.jsonl'),
      `\uFEFF${jsonl([
        { task: 'find a.txt', label: 'first' },
        { task: 'find a.txt', label: 'second' },
      ])}`,
    );
    const r = await runCli(['fanout', '--sim-latency', '0', 'tasks.jsonl'], { cwd, cleanup });
    expect(r.code, describeResult(r)).toBe(0);
    expect(
      parseJsonLines(r.stdout)
        .map((x) => x.line)
        .sort(),
    ).toEqual([1, 2]);
    expect(r.stderr).not.toContain('forkpool fanout: line 1');
    expect(summaryLines(r.stderr)).toEqual([expect.stringMatching(/^fanout: 2 ok, .* 0 invalid line/)]);
  });

  it('counts partial apart from ok in the summary', async (context) => {
    const cleanup = cleanupOf(context);
    // The simulator answers `partial` when its keywords match nothing in the workspace.
    const input = jsonl([{ task: 'find a.txt' }, { task: 'Where is the frobnicator quux?' }]);
    const r = await runCli(['fanout', '--sim-latency', '0', '-'], { cwd: workspace(cleanup), input, cleanup });
    expect(r.code, describeResult(r)).toBe(0);
    expect(
      parseJsonLines(r.stdout)
        .map((x) => x.status)
        .sort(),
    ).toEqual(['ok', 'partial']);
    expect(summaryLines(r.stderr)).toEqual([
      expect.stringMatching(/^fanout: 1 ok, 1 partial, 0 error, 0 failed, 0 cancelled, 0 timed_out, 0 refused, 0 invalid line\(s\)/),
    ]);
  });
});
