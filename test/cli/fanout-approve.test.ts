/**
 * `forkpool fanout --approve-with` as a user runs it (the built CLI in a child process, a
 * scripted loopback model): no person is present, so a gated call is denied at once unless an
 * approver is named — a command (the pending approval on its stdin, the decision on its stdout)
 * or a loopback URL (a POST of it, the decision as the answer). A failing approver is a deny
 * whose reason the job's model reads.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cleanupOf } from '../helpers/cleanup.js';
import { describeResult, jsonl, parseJsonLines, requireBuiltCli, runCli } from '../helpers/cli.js';
import { tempWorkspace } from '../helpers/config.js';
import { toolMessagesOf } from '../helpers/requests.js';
import { startSim } from '../helpers/sim.js';
import type { Cleanup } from '../helpers/cleanup.js';

requireBuiltCli();

/** One job that asks to write `notes.txt`, then answers. */
async function writingSim(cleanup: Cleanup) {
  return startSim(cleanup, {
    script: [{ toolCalls: [{ name: 'write_file', arguments: { path: 'notes.txt', content: 'fanned out\n' } }] }, { content: 'Done with notes.txt.' }],
  });
}

/** The tool result the job's model read for its write_file call. */
const toolResult = (sim: Awaited<ReturnType<typeof writingSim>>) => toolMessagesOf(sim.requests[1]?.body as never).join('\n');

async function fanout(cleanup: Cleanup, cwd: string, sim: Awaited<ReturnType<typeof writingSim>>, ...extra: string[]) {
  // approvals "ask" in the config: without --approve-with, fanout must still deny at once (nobody would answer).
  writeFileSync(path.join(cwd, 'forkpool.config.json'), JSON.stringify({ approvals: 'ask', approvalTimeoutMs: 600_000 }));
  return runCli(['fanout', '-', '--no-progress', '--base-url', sim.url, ...extra], {
    cwd,
    cleanup,
    input: jsonl([{ task: 'Write notes.txt.', label: 'writer' }]),
    env: { OPENAI_API_KEY: 'test-key' },
    // A net against a hang, not a bound: the four tests' CLIs run side by side, slower on a loaded machine.
    timeoutMs: 120_000,
  });
}

describe.concurrent('fanout and approvals', { timeout: 180_000 }, () => {
  it('without --approve-with a gated call is denied at once, even with approvals "ask" in the config', async (context) => {
    const cleanup = cleanupOf(context);
    const cwd = tempWorkspace({}, cleanup);
    const sim = await writingSim(cleanup);
    const r = await fanout(cleanup, cwd, sim);
    expect(r.timedOut, describeResult(r)).toBe(false);
    expect(r.code, describeResult(r)).toBe(0);
    expect(parseJsonLines(r.stdout)).toMatchObject([{ status: 'ok' }]);
    expect(existsSync(path.join(cwd, 'notes.txt'))).toBe(false);
    // Denied at once, as without approvals: nobody was asked.
    expect(toolResult(sim)).toMatch(/permission denied: "write_file" is not granted/);
    expect(parseJsonLines(r.stdout)[0]?.approvals).toBeUndefined();
  });

  it('--approve-with a command: it reads the pending approval on stdin, its allow runs the call', async (context) => {
    const cleanup = cleanupOf(context);
    const cwd = tempWorkspace({}, cleanup);
    const sim = await writingSim(cleanup);
    // It allows a write of notes.txt only, and keeps what it read.
    writeFileSync(
      path.join(cwd, 'approve.mjs'),
      `import { writeFileSync } from 'node:fs';
let text = ''; process.stdin.on('data', (d) => (text += d)).on('end', () => {
  writeFileSync('asked.json', text);
  const call = JSON.parse(text);
  const ok = call.tool === 'write_file' && JSON.parse(call.args).path === 'notes.txt';
  console.log(JSON.stringify(ok ? { decision: 'allow' } : { decision: 'deny', reason: 'not that' }));
});\n`,
    );
    const r = await fanout(cleanup, cwd, sim, '--approve-with', `${JSON.stringify(process.execPath)} approve.mjs`);
    expect(r.code, describeResult(r)).toBe(0);
    expect(readFileSync(path.join(cwd, 'notes.txt'), 'utf8')).toBe('fanned out\n');
    // The line says who allowed it, and what it allowed.
    expect(parseJsonLines(r.stdout)).toMatchObject([{ status: 'ok', approvals: [{ tool: 'write_file', decision: 'allow', by: 'approve-with' }] }]);
    expect(JSON.parse(readFileSync(path.join(cwd, 'asked.json'), 'utf8'))).toMatchObject({ jobId: expect.any(String), tool: 'write_file', label: 'writer' });
  });

  it('--approve-with a loopback URL: it gets a POST of the pending approval, its deny reason reaches the model', async (context) => {
    const cleanup = cleanupOf(context);
    const cwd = tempWorkspace({}, cleanup);
    const sim = await writingSim(cleanup);
    const posted: unknown[] = [];
    const approver = createServer((req, res) => {
      let text = '';
      req.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
      req.on('end', () => {
        posted.push(JSON.parse(text));
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ decision: 'deny', reason: 'reviewers are out today' }));
      });
    });
    await new Promise<void>((resolve) => approver.listen(0, '127.0.0.1', resolve));
    cleanup.add(() => new Promise<void>((resolve) => approver.close(() => resolve())));
    const url = `http://127.0.0.1:${(approver.address() as { port: number }).port}/approve`;
    const r = await fanout(cleanup, cwd, sim, '--approve-with', url);
    expect(r.code, describeResult(r)).toBe(0);
    expect(posted).toMatchObject([{ tool: 'write_file', label: 'writer' }]);
    expect(existsSync(path.join(cwd, 'notes.txt'))).toBe(false);
    expect(toolResult(sim)).toContain('reviewers are out today');
  });

  it('an approver command that fails is a deny naming its exit code; a bad value exits 2 naming it', async (context) => {
    const cleanup = cleanupOf(context);
    const cwd = tempWorkspace({}, cleanup);
    const sim = await writingSim(cleanup);
    const r = await fanout(
      cleanup,
      cwd,
      sim,
      '--approve-with',
      `${JSON.stringify(process.execPath)} -e "console.log('{\\"decision\\":\\"allow\\"}'); process.exit(4)"`,
    );
    expect(r.code, describeResult(r)).toBe(0);
    expect(existsSync(path.join(cwd, 'notes.txt'))).toBe(false);
    expect(toolResult(sim)).toContain('exited with code 4');
    const bad = await runCli(['fanout', '-', '--approve-with', 'ftp://example.test/approve'], { cwd, cleanup, input: '' });
    expect(bad.code, describeResult(bad)).toBe(2);
    expect(bad.stderr).toContain('--approve-with expects an http(s) URL or a command; received a ftp:// URL');
  });
});
