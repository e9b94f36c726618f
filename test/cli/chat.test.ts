/**
 * `forkpool chat` without a terminal (stdin and stdout are pipes): one prompt or /command per
 * line, plain lines out, like `run`; at the end of the input it waits for the jobs and their
 * follow-up, then closes.
 */
import { describe, expect, it } from 'vitest';
import { cleanupOf } from '../helpers/cleanup.js';
import { describeResult, parseJsonLines, runCli, spawnCli } from '../helpers/cli.js';
import { makeWorkspace } from '../helpers/config.js';
import { ledgerFile } from '../helpers/ledger.js';

// Side by side: each test is its own CLI process, mostly waiting on its sim and its jobs.
describe.concurrent('forkpool chat, not on a terminal', () => {
  it('runs a fan-out, /bg and /cost between turns, and delivers every result before it exits', async (context) => {
    const cleanup = cleanupOf(context);
    const ws = await makeWorkspace(cleanup);
    const input = ['Where is the retry backoff? Where is the LruCache class?', '/bg list', '/bg start what does the README say?', '/cost', ''].join('\n');
    const r = await runCli(['chat', '--sim-latency', '0'], { cwd: ws, input, timeoutMs: 150_000 });
    expect(r.code, describeResult(r)).toBe(0);
    // The first line says the model is the simulator.
    expect(r.stderr.split('\n')[0]).toContain('no model configured; using the built-in simulated model');
    expect(r.stdout).toContain('I started 2 background agents');
    expect(r.stdout).toMatch(/bg-1\s+(queued|running|ok)/);
    expect(r.stdout).toMatch(/tokens primary \S+/);
    expect(r.stderr).toMatch(/● bg-3 "what does the README say\?" started by you/);
    // Both the wave and the user's job reached the parent before the chat closed.
    const delivered = [...r.stderr.matchAll(/↳ (\d+) results? delivered into turn (\d+)/g)].reduce((n, m) => n + Number(m[1]), 0);
    expect(delivered, describeResult(r)).toBe(3);
    expect(r.stderr).toContain('closed: 0 jobs cancelled');
  }, 180_000);

  it('--json: one entry per line, answers and job lines alike', async (context) => {
    const cleanup = cleanupOf(context);
    const ws = await makeWorkspace(cleanup);
    const r = await runCli(['chat', '--json', '--sim-latency', '0'], {
      cwd: ws,
      input: 'Where is the retry backoff implemented?\n/help\n',
      timeoutMs: 150_000,
    });
    expect(r.code, describeResult(r)).toBe(0);
    const events = parseJsonLines(r.stdout);
    expect(events.some((e) => e.type === 'entry' && e.kind === 'answer' && String(e.text).includes('retry'))).toBe(true);
    expect(events.some((e) => e.type === 'entry' && e.kind === 'command' && String(e.text).startsWith('/bg list'))).toBe(true);
    expect(events.at(-1)?.type).toBe('usage');
  }, 180_000);

  it("--ledger then --resume: the second chat continues the first one's session, its jobs and its usage", async (context) => {
    const cleanup = cleanupOf(context);
    const ws = await makeWorkspace(cleanup);
    // Outside the workspace: a ledger inside it is refused (jobs could read and rewrite it).
    const ledger = ledgerFile(cleanup, 'forkpool-test.db');
    const first = await runCli(['chat', '--ledger', ledger, '--sim-latency', '0'], {
      cwd: ws,
      input: 'Where is the retry backoff? Where is the LruCache class?\n',
      timeoutMs: 150_000,
    });
    expect(first.code, describeResult(first)).toBe(0);
    const id = /session (s-[\w-]+) kept in/.exec(first.stderr)?.[1];
    expect(id, describeResult(first)).toBeDefined();
    expect(first.stderr).toContain(`forkpool chat --ledger ${ledger} --resume ${id}`);

    const second = await runCli(['chat', '--ledger', ledger, '--resume', id as string, '--sim-latency', '0'], {
      cwd: ws,
      input: '/bg list\n',
      timeoutMs: 150_000,
    });
    expect(second.code, describeResult(second)).toBe(0);
    expect(second.stderr).toContain(`session ${id} kept in`);
    expect(second.stderr).toMatch(/resumed: 0 result\(s\) waiting/);
    // The first chat's jobs are the resumed session's: listed, ended, not run again.
    expect(second.stdout).toMatch(/bg-1\s+ok/);
    expect(second.stdout).toMatch(/bg-2\s+ok/);
    expect(second.stderr).not.toMatch(/spawned in turn/);
    const subagentRequests = (text: string) => Number(/primary:subagent\s+\S+\s+(\d+) requests/.exec(text)?.[1]);
    expect(subagentRequests(second.stderr)).toBe(subagentRequests(first.stderr));
  }, 320_000);
  it('a prompt line read while a follow-up turn runs waits for it and runs, never dropped as "busy"', async (context) => {
    const cleanup = cleanupOf(context);
    const ws = await makeWorkspace(cleanup);
    // Every model call takes a while: the follow-up turn is still running when the next line is read.
    const chat = spawnCli(['chat', '--json', '--sim-latency', '1500'], { cwd: ws, keepStdinOpen: true, timeoutMs: 150_000, cleanup });
    chat.child.stdin?.write('Where is the retry backoff? Where is the LruCache class?\n');
    await chat.waitForStdout((out) => /follow-up turn 2/.test(out));
    chat.child.stdin?.end('And what does the README say? (the line that must not be dropped)\n');
    const r = await chat.exited;
    expect(r.code, describeResult(r)).toBe(0);
    const entries = parseJsonLines(r.stdout).filter((e) => e.type === 'entry');
    const prompt = entries.findIndex((e) => e.kind === 'user' && String(e.text).includes('the line that must not be dropped'));
    expect(prompt, describeResult(r)).toBeGreaterThan(-1);
    // Its turn ran after the follow-up: an answer comes after it.
    expect(entries.slice(prompt + 1).some((e) => e.kind === 'answer')).toBe(true);
    expect(entries.findIndex((e) => e.kind === 'notice' && /follow-up turn 2/.test(String(e.text)))).toBeLessThan(prompt);
  }, 180_000);
});
