/**
 * Errors a user meets first, as a new user meets them on the command line (issue 36 §2): a real
 * model's name with no endpoint is refused (never run on the simulator in its name), a public
 * endpoint with no key is refused up front, `--sim` and `npm run demo` still work keyless, a
 * retry is a line on stderr and an event in `--json`, a dead endpoint is named with its cause,
 * and a parent turn cut at the token limit says so.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { freeLoopbackPort } from '../../src/shared/loopback.js';
import { cleanupOf } from '../helpers/cleanup.js';
import { describeResult, parseJsonLines, runCli } from '../helpers/cli.js';
import { makeWorkspace } from '../helpers/config.js';
import { startSim } from '../helpers/sim.js';

const CLI_TIMEOUT_MS = 90_000;

describe.concurrent('no endpoint, no key', () => {
  it(
    '--model gpt-4.1-mini with no key and no endpoint is refused in one line naming OPENAI_API_KEY and --base-url; nothing runs',
    async (context) => {
      const cleanup = cleanupOf(context);
      const ws = await makeWorkspace(cleanup);
      const r = await runCli(['run', '--model', 'gpt-4.1-mini', 'hello'], { cwd: ws, timeoutMs: 60_000 });
      expect(r.code, describeResult(r)).toBe(2);
      expect(r.stderr).toContain('--model gpt-4.1-mini needs a model endpoint: set OPENAI_API_KEY (OpenAI) or --base-url');
      expect(r.stderr).not.toContain('simulated model');
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(r.stdout).toBe('');
    },
    CLI_TIMEOUT_MS,
  );

  it(
    "on the anthropic wire, the same refusals name ANTHROPIC_API_KEY, not OpenAI's key",
    async (context) => {
      const ws = await makeWorkspace(cleanupOf(context));
      const noEndpoint = await runCli(['run', '--api', 'anthropic', '--model', 'claude-sonnet-4-5', 'hello'], { cwd: ws, timeoutMs: 60_000 });
      expect(noEndpoint.code, describeResult(noEndpoint)).toBe(2);
      expect(noEndpoint.stderr.trim().split('\n')).toEqual([
        'forkpool: --model claude-sonnet-4-5 needs a model endpoint: set ANTHROPIC_API_KEY (Anthropic) or --base-url (a server of the Messages API); --sim runs the built-in simulator instead',
      ]);
      const publicUrl = await runCli(['run', '--api', 'anthropic', '--base-url', 'https://api.anthropic.com/v1', '--model', 'claude-sonnet-4-5', 'hello'], {
        cwd: ws,
        timeoutMs: 60_000,
      });
      expect(publicUrl.code, describeResult(publicUrl)).toBe(2);
      expect(publicUrl.stderr).toContain('an API key for https://api.anthropic.com (set ANTHROPIC_API_KEY');
      expect(publicUrl.stderr).not.toContain('OPENAI_API_KEY');
      // --sim on the anthropic wire: the banner names the key that wire reads.
      const sim = await runCli(['run', '--sim', '--api', 'anthropic', 'hello'], { cwd: ws, timeoutMs: 60_000 });
      expect(sim.code, describeResult(sim)).toBe(0);
      expect(sim.stderr).toContain('Set --base-url and ANTHROPIC_API_KEY for a real one.');
      expect(sim.stderr).not.toContain('OPENAI_API_KEY');
    },
    CLI_TIMEOUT_MS,
  );

  it(
    'a public endpoint with no key is refused up front, before any request',
    async (context) => {
      const cleanup = cleanupOf(context);
      const ws = await makeWorkspace(cleanup);
      const r = await runCli(['run', '--base-url', 'https://api.openai.com/v1', '--model', 'gpt-4.1-mini', 'hello'], { cwd: ws, timeoutMs: 60_000 });
      expect(r.code, describeResult(r)).toBe(2);
      expect(r.stderr).toContain('config field "apiKey"');
      expect(r.stderr).toContain('an API key for https://api.openai.com (set OPENAI_API_KEY');
    },
    CLI_TIMEOUT_MS,
  );

  it(
    '--sim runs the simulator whatever model is named, and the demo still runs keyless',
    async (context) => {
      const cleanup = cleanupOf(context);
      const ws = await makeWorkspace(cleanup);
      const sim = await runCli(['run', '--sim', '--model', 'gpt-4.1-mini', 'Where is the retry backoff implemented?'], { cwd: ws, timeoutMs: 80_000 });
      expect(sim.code, describeResult(sim)).toBe(0);
      expect(sim.stderr).toContain('--sim; using the built-in simulated model');
      const demo = await runCli(['run', '--demo'], { cwd: ws, timeoutMs: 80_000 });
      expect(demo.code, describeResult(demo)).toBe(0);
      expect(demo.stderr).toContain('no model configured; using the built-in simulated model');
    },
    CLI_TIMEOUT_MS * 2,
  );
});

describe.concurrent('failures and retries, said as they happen', () => {
  it(
    'a rate limit: a line on stderr per retry (who, how long, which try), an event per retry in --json',
    async (context) => {
      const cleanup = cleanupOf(context);
      const ws = await makeWorkspace(cleanup);
      const sim = await startSim(cleanup, { script: [{ content: 'answered after the wait' }], faults: { 1: { kind: '429', retryAfterSeconds: 0.3 } } });
      const host = new URL(sim.url).host;
      const human = await runCli(['run', '--base-url', sim.url, 'hello'], { cwd: ws, timeoutMs: 60_000 });
      expect(human.code, describeResult(human)).toBe(0);
      expect(human.stdout).toContain('answered after the wait');
      expect(human.stderr).toMatch(new RegExp(`↻ rate limited by ${host.replace(/\./g, '\\.')}, retrying in \\d\\.\\d s \\(1/3\\)`));

      // Request numbers run on across runs: the first run took 1 (the 429) and 2.
      sim.setOptions({ script: [{ content: 'answered again' }], faults: { 3: { kind: '429', retryAfterSeconds: 0.3 } } });
      const json = await runCli(['run', '--json', '--base-url', sim.url, 'hello'], { cwd: ws, timeoutMs: 60_000 });
      expect(json.code, describeResult(json)).toBe(0);
      const retries = parseJsonLines(json.stdout).filter((line) => line.type === 'retry');
      expect(retries).toEqual([expect.objectContaining({ jobId: null, attempt: 1, maxRetries: 3, status: 429, host })]);
      expect((retries[0]?.delayMs as number) >= 300).toBe(true);
    },
    CLI_TIMEOUT_MS,
  );

  it(
    'fanout: a retry is a line on stderr naming the task line',
    async (context) => {
      const cleanup = cleanupOf(context);
      const ws = await makeWorkspace(cleanup);
      writeFileSync(path.join(ws, 'tasks.jsonl'), '{"task":"say hi"}\n');
      const sim = await startSim(cleanup, { script: [{ content: 'hi' }], faults: { 1: { kind: '429', retryAfterSeconds: 0.3 } } });
      const r = await runCli(['fanout', '--base-url', sim.url, 'tasks.jsonl'], { cwd: ws, timeoutMs: 60_000 });
      expect(r.code, describeResult(r)).toBe(0);
      expect(r.stderr).toMatch(/↻ line 1 \(\S+\): rate limited by 127\.0\.0\.1:\d+, retrying in \d\.\d s \(1\/3\)/);
    },
    CLI_TIMEOUT_MS,
  );

  it(
    'fanout --json: a retry is a typed stdout line naming the task line and label, before its result',
    async (context) => {
      const cleanup = cleanupOf(context);
      const ws = await makeWorkspace(cleanup);
      writeFileSync(path.join(ws, 'tasks.jsonl'), '{"task":"say hi","label":"greeter"}\n');
      const sim = await startSim(cleanup, { script: [{ content: 'hi' }], faults: { 1: { kind: '429', retryAfterSeconds: 0.3 } } });
      const r = await runCli(['fanout', '--json', '--base-url', sim.url, 'tasks.jsonl'], { cwd: ws, timeoutMs: 60_000 });
      expect(r.code, describeResult(r)).toBe(0);
      const lines = parseJsonLines(r.stdout);
      expect(lines.map((line) => line.type)).toEqual(['retry', 'result', 'summary']);
      expect(lines[0]).toEqual(
        expect.objectContaining({ type: 'retry', line: 1, label: 'greeter', attempt: 1, maxRetries: 3, status: 429, host: new URL(sim.url).host }),
      );
      expect((lines[0]?.waitMs as number) >= 300).toBe(true);
      expect(r.stderr).not.toContain('↻');
    },
    CLI_TIMEOUT_MS,
  );

  it(
    'a refused port: the turn names ECONNREFUSED, the URL and --base-url',
    async (context) => {
      const cleanup = cleanupOf(context);
      const ws = await makeWorkspace(cleanup);
      const port = await freeLoopbackPort();
      const url = `http://127.0.0.1:${port}/v1`;
      const r = await runCli(['run', '--base-url', url, 'hello'], { cwd: ws, timeoutMs: 80_000 });
      expect(r.code, describeResult(r)).toBe(1);
      expect(r.stderr).toContain(`connection error: ECONNREFUSED 127.0.0.1:${port} (POST ${url}/chat/completions) — check --base-url / baseUrl`);
      expect(r.stderr).not.toContain('Connection error.');
    },
    CLI_TIMEOUT_MS,
  );

  it(
    'a parent reply cut at the token limit: the turn says it was cut',
    async (context) => {
      const cleanup = cleanupOf(context);
      const ws = await makeWorkspace(cleanup);
      const sim = await startSim(cleanup, {
        script: [
          { content: 'The start of a long answer', finishReason: 'length' },
          { content: ' that was cut again', finishReason: 'length' },
        ],
      });
      const r = await runCli(['run', '--base-url', sim.url, 'hello'], { cwd: ws, timeoutMs: 60_000 });
      expect(r.stdout).toContain('The start of a long answer that was cut again');
      expect(r.stderr).toContain("turn 1 ended with truncated: the model's reply was cut at the token limit");
    },
    CLI_TIMEOUT_MS,
  );
});
