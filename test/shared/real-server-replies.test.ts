/**
 * What a real model server showed (issue 36 §1), against the simulator's fault modes and real
 * refused ports and unresolvable hosts (loopback and `.invalid` only): a failed turn never
 * shows an earlier answer, a reply cut at the token limit is not a whole answer, usage is
 * booked under the configured model, the deadline counts from the first byte, and a failed
 * request names its cause, its URL and what to check (issue 36 §2).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { ParentAgent } from '../../src/main/session/parent-agent.js';
import { createModelClient } from '../../src/shared/model-call.js';
import { freeLoopbackPort } from '../../src/shared/loopback.js';
import { runToolLoop } from '../../src/shared/tool-loop.js';
import type { LoopEvent } from '../../src/shared/loop-events.js';
import type { ForkpoolConfigInput } from '../../src/shared/config.js';
import type { SimServerOptions } from '../../src/sim/index.js';
import { startTestSim, tempWorkspace, testConfig, toolContextFor, useCleanup } from '../helpers/index.js';

const cleanup = useCleanup();

async function loopOn(sim: SimServerOptions, config: Partial<ForkpoolConfigInput> = {}) {
  const t = await startTestSim(cleanup, sim, { maxRetries: 0, ...config });
  const events: LoopEvent[] = [];
  const result = await runToolLoop({
    client: t.client,
    config: t.config,
    messages: [{ role: 'user', content: 'Answer at length.' }],
    tools: [],
    toolContext: toolContextFor(t.config),
    onEvent: (e) => events.push(e),
  });
  return { ...t, result, events };
}

/** The loop against an endpoint where nothing (or no model server) listens. */
async function loopAgainst(baseUrl: string, config: Partial<ForkpoolConfigInput> = {}) {
  const cfg = testConfig({ baseUrl, workspaceRoot: tempWorkspace(undefined, cleanup), maxRetries: 0, ...config });
  return runToolLoop({
    client: createModelClient(cfg),
    config: cfg,
    messages: [{ role: 'user', content: 'hi' }],
    tools: [],
    toolContext: toolContextFor(cfg),
  });
}

describe('a parent turn that fails before any reply', () => {
  it("does not show the previous turn's answer as its own", async () => {
    const t = await startTestSim(cleanup, { script: [{ content: 'FIRST TURN ANSWER' }], faults: { 2: { kind: '500' } } }, { maxRetries: 0 });
    const agent = new ParentAgent({ config: t.config, client: t.client });
    expect((await agent.runTurn('first question')).answer).toBe('FIRST TURN ANSWER');
    const failed = await agent.runTurn('second question');
    expect(failed.stopReason).toBe('error');
    expect(failed.error?.code).toBe('MODEL_REQUEST_FAILED');
    expect(failed.answer).not.toContain('FIRST TURN ANSWER');
    expect(failed.answer).toBe('');
  });
});

describe.each([true, false])('a reply cut at the token limit (stream=%s)', (stream) => {
  it('sends a bounded max_tokens, asks once to continue, and ends `truncated` when cut again', async () => {
    const { result, sim } = await loopOn(
      {
        script: [
          { content: 'part one,', finishReason: 'length' },
          { content: ' part two', finishReason: 'length' },
        ],
      },
      { stream, maxTokens: 321 },
    );
    expect(sim.requests.map((r) => r.body.max_tokens)).toEqual([321, 321]);
    expect(result.stopReason).toBe('truncated');
    expect(result.finalText).toBe('part one, part two');
    expect(result.error).toMatchObject({ code: 'MODEL_OUTPUT_TRUNCATED' });
    expect(result.error?.message).toContain('maxTokens 321');
    // The continuation asked for exactly that, after the cut text.
    const second = sim.requests[1]?.body.messages as Array<{ role: string; content: string }>;
    expect(second.at(-2)).toEqual({ role: 'assistant', content: 'part one,' });
    expect(second.at(-1)?.content).toContain('cut off at the token limit (321 tokens)');
  });

  it('a continuation that finishes gives the whole answer, `final`', async () => {
    const { result } = await loopOn({ script: [{ content: 'part one,', finishReason: 'length' }, { content: ' the end.' }] }, { stream });
    expect(result.stopReason).toBe('final');
    expect(result.finalText).toBe('part one, the end.');
    expect(result.error).toBeUndefined();
  });
});

describe('usage is booked under the configured model', () => {
  it('whatever name the server answers with (llama-server: a GGUF path); the server name is kept on the event', async () => {
    const gguf = '/models/qwen2.5-7b-instruct-q4_k_m.gguf';
    const { result, events } = await loopOn(
      { script: [{ content: 'ok', usage: { prompt_tokens: 10, completion_tokens: 5 } }], servedModel: gguf },
      { model: 'qwen-local' },
    );
    expect(Object.keys(result.usage)).toEqual(['qwen-local']);
    expect(result.usage['qwen-local']).toMatchObject({ promptTokens: 10, completionTokens: 5 });
    expect(events.find((e) => e.type === 'model_response')).toMatchObject({ model: 'qwen-local', servedModel: gguf });
  });
});

describe('requestTimeoutMs counts from the first byte', () => {
  it.each([true, false])(
    'a reply queued inside the server longer than requestTimeoutMs still answers (stream=%s)',
    async (stream) => {
      // The server sits on the request for 1.5 s before its first byte: a deadline counted from
      // sending (1 s) would cut every attempt; counted from the first byte, it answers.
      const { result, sim } = await loopOn({ script: [{ content: 'after the queue' }], latencyMs: 1_500 }, { stream, requestTimeoutMs: 1_000 });
      expect(result.error).toBeUndefined();
      expect(result.finalText).toBe('after the queue');
      expect(sim.requests).toHaveLength(1);
    },
    20_000,
  );

  it('a server that never sends a byte is given up at firstByteTimeoutMs, named', async () => {
    const { result } = await loopOn({ script: [{ content: 'never' }], faults: { 1: { kind: 'hang_before_headers' } } }, { firstByteTimeoutMs: 500 });
    expect(result.stopReason).toBe('error');
    expect(result.error?.message).toBe('model request failed after 1 attempt(s): no response within 500 ms of sending (firstByteTimeoutMs)');
  }, 20_000);
});

describe('a failed request names its cause, its URL and what to check', () => {
  it('a refused port', async () => {
    // Free a moment ago, nothing listens there now.
    const port = await freeLoopbackPort();
    const result = await loopAgainst(`http://127.0.0.1:${port}/v1`);
    expect(result.error?.message).toBe(
      `model request failed after 1 attempt(s): connection error: ECONNREFUSED 127.0.0.1:${port} (POST http://127.0.0.1:${port}/v1/chat/completions) — check --base-url / baseUrl`,
    );
  }, 20_000);

  it('port 9 (the issue\'s example): our client connects like anywhere else and is refused, named; a caller\'s own openai client (fetch) says the port is blocked, not "Connection error."', async () => {
    const url = 'http://127.0.0.1:9/v1';
    const ours = await loopAgainst(url);
    expect(ours.error?.message).toBe(
      'model request failed after 1 attempt(s): connection error: ECONNREFUSED 127.0.0.1:9 (POST http://127.0.0.1:9/v1/chat/completions) — check --base-url / baseUrl',
    );
    const cfg = testConfig({ baseUrl: url, workspaceRoot: tempWorkspace(undefined, cleanup), maxRetries: 0 });
    const sdk = new OpenAI({ apiKey: 'sk-test', baseURL: url, maxRetries: 0, logLevel: 'off' });
    const theirs = await runToolLoop({ client: sdk, config: cfg, messages: [{ role: 'user', content: 'hi' }], tools: [], toolContext: toolContextFor(cfg) });
    expect(theirs.error?.message).toBe(
      'model request failed after 1 attempt(s): connection error: port 9 is one fetch never connects to (a blocked port): use another (POST http://127.0.0.1:9/v1/chat/completions) — check --base-url / baseUrl',
    );
  }, 20_000);

  it('a host name that does not resolve', async () => {
    const result = await loopAgainst('http://model-host.invalid:8080/v1');
    expect(result.error?.message).toMatch(
      /^model request failed after 1 attempt\(s\): connection error: (ENOTFOUND|EAI_AGAIN) model-host\.invalid \(the host name does not resolve\) \(POST http:\/\/model-host\.invalid:8080\/v1\/chat\/completions\) — check --base-url \/ baseUrl$/,
    );
  }, 20_000);

  it('a TLS failure names the TLS error', async () => {
    // A self-signed certificate made for this test (openssl is on every machine the suite runs on).
    const dir = tempWorkspace({}, cleanup);
    execFileSync(
      'openssl',
      ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'key.pem', '-out', 'cert.pem', '-days', '1', '-subj', '/CN=localhost'],
      {
        cwd: dir,
        stdio: 'ignore',
      },
    );
    const server = createHttpsServer({ key: readFileSync(path.join(dir, 'key.pem')), cert: readFileSync(path.join(dir, 'cert.pem')) }, (_req, res) =>
      res.end('{}'),
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    cleanup.add(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
    const result = await loopAgainst(url);
    expect(result.error?.message).toMatch(
      /^model request failed after 1 attempt\(s\): connection error: TLS DEPTH_ZERO_SELF_SIGNED_CERT: self-signed certificate/,
    );
    expect(result.error?.message).toContain(`(POST ${url}/chat/completions) — check --base-url / baseUrl`);
  }, 20_000);

  it('a refused key names where keys come from, never the key', async () => {
    const { result } = await loopOn({ script: [{ content: 'never' }], faults: { 1: { kind: '401' } } }, { apiKey: 'sk-test-secret-key-1234' });
    expect(result.error?.message).toContain('HTTP 401');
    expect(result.error?.message).toContain("the endpoint refused the API key: check OPENAI_API_KEY or the config's apiKey");
    expect(JSON.stringify(result.error)).not.toContain('sk-test-secret-key-1234');
  });

  it('an unknown model names the model and the endpoint', async () => {
    const { result, sim } = await loopOn({ script: [{ content: 'never' }], faults: { 1: { kind: '404' } } }, { model: 'gpt-4.1-typo' });
    expect(result.error?.message).toContain(
      `(POST ${sim.url}/chat/completions) — model "gpt-4.1-typo" or the endpoint was not found: check --model / model and --base-url / baseUrl`,
    );
  });

  it('a retry says who limited it, when it tries again and which try it is', async () => {
    const { result, events } = await loopOn(
      { script: [{ content: 'after the wait' }], faults: { 1: { kind: '429', retryAfterSeconds: 0.2 } } },
      { maxRetries: 2 },
    );
    expect(result.finalText).toBe('after the wait');
    const retry = events.find((e): e is Extract<LoopEvent, { type: 'retry' }> => e.type === 'retry');
    expect(retry).toMatchObject({ attempt: 1, maxRetries: 2, status: 429, host: expect.stringMatching(/^127\.0\.0\.1:\d+$/) });
    // Retry-After is honoured: the wait is at least what the server asked for.
    expect(retry?.delayMs).toBeGreaterThanOrEqual(200);
  });
});
