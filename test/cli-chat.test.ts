/**
 * `forkpool chat` without a terminal (stdin and stdout are pipes): one prompt or /command per
 * line, plain lines out, like `run`; at the end of the input it waits for the jobs and their
 * follow-up, then closes.
 */
import { describe, expect, it } from 'vitest';
import { describeResult, makeWorkspace, parseJsonLines, runCli, useCleanup } from './helpers/index.js';

const cleanup = useCleanup();

describe('forkpool chat, not on a terminal', () => {
  it('runs a fan-out, /bg and /cost between turns, and delivers every result before it exits', async () => {
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

  it('--json: one entry per line, answers and job lines alike', async () => {
    const ws = await makeWorkspace(cleanup);
    const r = await runCli(['chat', '--json', '--sim-latency', '0'], { cwd: ws, input: 'Where is the retry backoff implemented?\n/help\n', timeoutMs: 150_000 });
    expect(r.code, describeResult(r)).toBe(0);
    const events = parseJsonLines(r.stdout);
    expect(events.some((e) => e.type === 'entry' && e.kind === 'answer' && String(e.text).includes('retry'))).toBe(true);
    expect(events.some((e) => e.type === 'entry' && e.kind === 'command' && String(e.text).startsWith('/bg list'))).toBe(true);
    expect(events.at(-1)?.type).toBe('usage');
  }, 180_000);
});
