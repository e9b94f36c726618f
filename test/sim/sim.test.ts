import { request as httpRequest } from 'node:http';
import OpenAI from 'openai';
import type { ChatCompletionChunk, ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, ForkpoolError } from '../../src/shared/errors.js';
import { BACKGROUND_FOLLOWUP_PROMPT, BACKGROUND_RESULTS_CLOSE, BACKGROUND_RESULTS_OPEN, backgroundSystemPrompt } from '../../src/shared/prompts.js';
import { startSimServer, type SimServer, type SimServerOptions } from '../../src/sim/index.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((c) => c()));
});

async function sim(opts: SimServerOptions = {}): Promise<{ server: SimServer; client: OpenAI }> {
  const server = await startSimServer(opts);
  cleanups.push(() => server.close());
  return { server, client: new OpenAI({ baseURL: server.url, apiKey: 'test', maxRetries: 0, logLevel: 'off' }) };
}

function tool(name: string): ChatCompletionTool {
  return { type: 'function', function: { name, description: name, parameters: { type: 'object', properties: {} } } };
}
const RESEARCH_TOOLS = ['read_file', 'list_dir', 'find_files', 'grep'].map(tool);
const PARENT_TOOLS = [...RESEARCH_TOOLS, tool('spawn_background_agent')];

async function collect(stream: AsyncIterable<ChatCompletionChunk>): Promise<ChatCompletionChunk[]> {
  const chunks: ChatCompletionChunk[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

/** Assembles tool calls from stream deltas, by index. */
function assemble(chunks: readonly ChatCompletionChunk[]) {
  const calls = new Map<number, { id: string; name: string; args: string }>();
  let content = '';
  let finish: string | null = null;
  for (const chunk of chunks) {
    for (const choice of chunk.choices) {
      content += choice.delta.content ?? '';
      for (const d of choice.delta.tool_calls ?? []) {
        const call = calls.get(d.index) ?? { id: '', name: '', args: '' };
        if (d.id) call.id = d.id;
        call.name += d.function?.name ?? '';
        call.args += d.function?.arguments ?? '';
        calls.set(d.index, call);
      }
      finish = choice.finish_reason ?? finish;
    }
  }
  return { content, finish, calls: [...calls.entries()].sort(([a], [b]) => a - b).map(([, c]) => c) };
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

/** Raw HTTP, for what the SDK hides (status of bad requests, SSE comments). */
function raw(server: SimServer, method: string, path: string, body?: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port: server.port, method, path, headers: { 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const user = (content: string): ChatCompletionMessageParam => ({ role: 'user', content });

describe('protocol', () => {
  it('answers a non-stream request with a message, usage and the echoed model', async () => {
    const { client } = await sim();
    const res = await client.chat.completions.create({ model: 'my-model', messages: [user('Where is the retry backoff configured?')] });
    expect(res.object).toBe('chat.completion');
    expect(res.id).toBe('chatcmpl-sim-1');
    expect(res.model).toBe('my-model');
    expect(res.choices[0]?.message.role).toBe('assistant');
    expect(typeof res.choices[0]?.message.content).toBe('string');
    expect(res.choices[0]?.finish_reason).toBe('stop');
    expect(res.usage?.prompt_tokens).toBe(Math.ceil('Where is the retry backoff configured?'.length / 4));
    expect(res.usage?.completion_tokens).toBeGreaterThan(0);
    expect(res.usage?.total_tokens).toBe((res.usage?.prompt_tokens ?? 0) + (res.usage?.completion_tokens ?? 0));
  });

  it('streams tool-call deltas that assemble into valid JSON, then a usage chunk', async () => {
    const args = { path: 'src/shared/some/deeply/nested/file-name.ts', limit: 60, note: 'x'.repeat(50) };
    const { client } = await sim({ script: [{ toolCalls: [{ name: 'read_file', arguments: args }] }], maxTokensPerChunk: 2 });
    const stream = await client.chat.completions.create({
      model: 'm',
      messages: [user('read it')],
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = await collect(stream);
    expect(chunks.every((c) => c.object === 'chat.completion.chunk' && c.model === 'm')).toBe(true);
    expect(chunks[0]?.choices[0]?.delta.role).toBe('assistant');
    const argChunks = chunks.filter((c) => c.choices[0]?.delta.tool_calls?.[0]?.function?.arguments);
    expect(argChunks.length).toBeGreaterThan(3);
    const { calls, finish } = assemble(chunks);
    expect(finish).toBe('tool_calls');
    expect(calls).toHaveLength(1);
    expect(calls[0]?.name).toBe('read_file');
    expect(calls[0]?.id).toBe('call_1_0');
    expect(JSON.parse(calls[0]?.args ?? '')).toEqual(args);
    const last = chunks.at(-1);
    expect(last?.choices).toEqual([]);
    expect(last?.usage?.total_tokens).toBeGreaterThan(0);
  });

  it('sends several tool calls in one message, streamed and not', async () => {
    const step = {
      content: 'Looking.',
      toolCalls: [
        { name: 'grep', arguments: { pattern: 'a|b', ignore_case: true } },
        { name: 'find_files', arguments: '{"pattern":"**/*x*"}', id: 'my_id' },
      ],
    };
    const { client } = await sim({ script: [step, step] });
    const res = await client.chat.completions.create({ model: 'm', messages: [user('go')] });
    const calls = res.choices[0]?.message.tool_calls ?? [];
    expect(res.choices[0]?.finish_reason).toBe('tool_calls');
    expect(res.choices[0]?.message.content).toBe('Looking.');
    expect(calls.map((c) => c.id)).toEqual(['call_1_0', 'my_id']);
    const streamed = assemble(await collect(await client.chat.completions.create({ model: 'm', messages: [user('go')], stream: true })));
    expect(streamed.content).toBe('Looking.');
    expect(streamed.calls.map((c) => [c.name, JSON.parse(c.args)])).toEqual([
      ['grep', { pattern: 'a|b', ignore_case: true }],
      ['find_files', { pattern: '**/*x*' }],
    ]);
  });

  it('lists models, rejects bad JSON with 400 and unknown routes with 404', async () => {
    const { server, client } = await sim();
    const models = await client.models.list();
    expect(models.data.map((m) => m.id)).toEqual(['forkpool-sim']);
    const bad = await raw(server, 'POST', '/v1/chat/completions', '{"messages": [');
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.text).error.type).toBe('invalid_request_error');
    expect((await raw(server, 'GET', '/v1/nothing')).status).toBe(404);
    // Also served without the /v1 prefix; bad requests are not counted.
    const ok = await raw(server, 'POST', '/chat/completions', JSON.stringify({ model: 'm', messages: [user('hi?')] }));
    expect(JSON.parse(ok.text).id).toBe('chatcmpl-sim-1');
    expect(server.requests.map((r) => r.n)).toEqual([1]);
  });

  it('waits latencyMs before answering and perTokenMs per streamed token', async () => {
    const { server, client } = await sim({ latencyMs: 60, script: [{ content: 'x'.repeat(40) }, { content: 'x'.repeat(40) }] });
    let started = Date.now();
    await client.chat.completions.create({ model: 'm', messages: [user('x')] });
    expect(Date.now() - started).toBeGreaterThanOrEqual(55);
    // 40 chars = 10 tokens at 5 ms each, spread over the chunks.
    server.setOptions({ latencyMs: 0, perTokenMs: 5 });
    started = Date.now();
    await collect(await client.chat.completions.create({ model: 'm', messages: [user('x')], stream: true }));
    expect(Date.now() - started).toBeGreaterThanOrEqual(45);
  });

  it('rejects invalid options naming the option', async () => {
    const error = await rejection(startSimServer({ latencyMs: -5 }));
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toContain('sim.latencyMs');
  });
});

describe('scripted mode', () => {
  it('consumes steps in order and reports exhaustion', async () => {
    const { server, client } = await sim({ script: [{ content: 'one' }, { content: 'two' }] });
    const ask = () => client.chat.completions.create({ model: 'm', messages: [user('x')] });
    expect((await ask()).choices[0]?.message.content).toBe('one');
    expect((await ask()).choices[0]?.message.content).toBe('two');
    const error = await rejection(ask());
    expect(error).toBeInstanceOf(OpenAI.InternalServerError);
    expect((error as Error).message).toContain('sim script exhausted at request 3');
    expect(server.scriptErrors).toEqual(['sim script exhausted at request 3']);
    expect(() => server.assertScriptDone()).toThrow(ForkpoolError);
  });

  it('assertScriptDone throws while steps are left and passes when all are used', async () => {
    const { server, client } = await sim({ script: [{ content: 'one' }, { content: 'two', usage: { prompt_tokens: 7, completion_tokens: 3 } }] });
    await client.chat.completions.create({ model: 'm', messages: [user('x')] });
    expect(() => server.assertScriptDone()).toThrow(/1 script step\(s\) unused/);
    const res = await client.chat.completions.create({ model: 'm', messages: [user('x')] });
    expect(res.usage).toMatchObject({ prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 });
    expect(() => server.assertScriptDone()).not.toThrow();
  });

  it('a fault from `faults` leaves the step for the retry; setOptions changes faults at runtime', async () => {
    const { server, client } = await sim({ script: [{ content: 'one' }, { content: 'two' }], faults: { 1: { kind: '503' } } });
    const ask = () => client.chat.completions.create({ model: 'm', messages: [user('x')] });
    expect(await rejection(ask())).toMatchObject({ status: 503 });
    expect((await ask()).choices[0]?.message.content).toBe('one');
    server.setOptions({ faults: { 3: { kind: '502' } } });
    expect(await rejection(ask())).toMatchObject({ status: 502 });
    expect((await ask()).choices[0]?.message.content).toBe('two');
    expect(server.requests.map((r) => r.fault)).toEqual(['503', undefined, '502', undefined]);
    server.assertScriptDone();
  });
});

describe('faults', () => {
  const ask = (client: OpenAI, extra: { stream?: boolean; timeout?: number } = {}) =>
    client.chat.completions.create(
      { model: 'm', messages: [user('Where is the config schema?')], tools: RESEARCH_TOOLS },
      extra.timeout ? { timeout: extra.timeout } : {},
    );

  it('429 carries Retry-After and a JSON error body', async () => {
    const { client } = await sim({ faults: { 1: { kind: '429', retryAfterSeconds: 2 } } });
    const error = await rejection(ask(client));
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
    const e = error as InstanceType<typeof OpenAI.RateLimitError>;
    expect(e.status).toBe(429);
    expect(e.headers?.get('retry-after')).toBe('2');
    expect(e.headers?.get('retry-after-ms')).toBe('2000');
    expect(e.code).toBe('rate_limit_exceeded');
  });

  it('500, 502 and 503 are API errors with their status', async () => {
    const { client } = await sim({ faults: { 1: { kind: '500' }, 2: { kind: '502' }, 3: { kind: '503' } } });
    for (const status of [500, 502, 503]) {
      const error = await rejection(ask(client));
      expect(error).toBeInstanceOf(OpenAI.APIError);
      expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(status);
    }
  });

  it('bad_json breaks both the JSON body and an SSE line', async () => {
    const { client } = await sim({ faults: { 1: { kind: 'bad_json' }, 2: { kind: 'bad_json' } } });
    expect(await rejection(ask(client))).toBeInstanceOf(Error);
    const stream = await client.chat.completions.create({ model: 'm', messages: [user('x')], stream: true });
    expect(await rejection(collect(stream))).toBeInstanceOf(Error);
  });

  it('malformed_tool_args sends arguments that are not JSON; unknown_tool calls no_such_tool', async () => {
    const { client } = await sim({ faults: { 1: { kind: 'malformed_tool_args' }, 2: { kind: 'unknown_tool' } } });
    const malformed = (await ask(client)).choices[0]?.message.tool_calls?.[0];
    expect(malformed?.type).toBe('function');
    expect(() => JSON.parse(malformed?.type === 'function' ? malformed.function.arguments : '')).toThrow();
    const unknown = (await ask(client)).choices[0]?.message.tool_calls?.[0];
    expect(unknown?.type === 'function' && unknown.function.name).toBe('no_such_tool');
  });

  it('truncated_stream cuts the connection before finish_reason (stream and not)', async () => {
    const { client } = await sim({ faults: { 1: { kind: 'truncated_stream' }, 2: { kind: 'truncated_stream' } } });
    const stream = await client.chat.completions.create({
      model: 'm',
      messages: [user('Tell me a long story about worker threads, please, with many details?')],
      stream: true,
    });
    const seen: ChatCompletionChunk[] = [];
    const error = await rejection(
      (async () => {
        for await (const chunk of stream) seen.push(chunk);
      })(),
    );
    expect(error).toBeInstanceOf(Error);
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.some((c) => c.choices[0]?.finish_reason)).toBe(false);
    expect(await rejection(ask(client))).toBeInstanceOf(Error);
  });

  it('hang_before_headers is ended by the client timeout', async () => {
    const { server, client } = await sim({ faults: { 1: { kind: 'hang_before_headers' } } });
    const error = await rejection(ask(client, { timeout: 200 }));
    expect(error).toBeInstanceOf(OpenAI.APIConnectionTimeoutError);
    expect(server.requests[0]?.fault).toBe('hang_before_headers');
  });

  it('stall_mid_stream sends a first chunk, then only keep-alives, until the client aborts', async () => {
    const { client } = await sim({ faults: { 1: { kind: 'stall_mid_stream' } } });
    const controller = new AbortController();
    const stream = await client.chat.completions.create({ model: 'm', messages: [user('x')], stream: true }, { signal: controller.signal });
    const seen: ChatCompletionChunk[] = [];
    const outcome = await (async () => {
      try {
        for await (const chunk of stream) {
          seen.push(chunk);
          // Abort as soon as the first chunk is in: nothing else can ever arrive.
          controller.abort();
        }
        return 'ended';
      } catch (error) {
        return error;
      }
    })();
    expect(seen).toHaveLength(1);
    expect(outcome === 'ended' || outcome instanceof OpenAI.APIUserAbortError || outcome instanceof Error).toBe(true);
  });

  it('slow_drip streams real chunks steadily and never finishes; the client counts them as the sim does', async () => {
    const { server, client } = await sim({ faults: { 1: { kind: 'slow_drip', dripIntervalMs: 1 } } });
    const controller = new AbortController();
    const stream = await client.chat.completions.create({ model: 'm', messages: [user('x')], stream: true }, { signal: controller.signal });
    const seen: ChatCompletionChunk[] = [];
    // The SDK ends the loop silently or with an abort error on abort: either way it stops here.
    await (async () => {
      for await (const chunk of stream) {
        seen.push(chunk);
        // Past the reply's own chunks it keeps sending empty deltas: data, not keep-alive comments.
        if (seen.length === 60) controller.abort();
      }
    })().catch(() => undefined);
    expect(seen).toHaveLength(60);
    expect(seen.map((c) => c.choices[0]?.finish_reason ?? null).filter((f) => f !== null)).toEqual([]);
    // The reply's own content came first (a fault from `faults` answers as the plausible agent would).
    expect(assemble(seen).content).toContain('Found no matching lines');
    expect(server.requests[0]).toMatchObject({ fault: 'slow_drip' });
    expect(server.requests[0]?.chunks).toBeGreaterThanOrEqual(60);
  });

  it('stall_mid_stream writes SSE keep-alive comments', async () => {
    const { server } = await sim({ faults: { 1: { kind: 'stall_mid_stream' } } });
    const text = await new Promise<string>((resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port: server.port, method: 'POST', path: '/v1/chat/completions' }, (res) => {
        let buffer = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => {
          buffer += d;
          if (buffer.includes(': keep-alive\n\n')) {
            req.destroy();
            resolve(buffer);
          }
        });
      });
      req.on('error', (e) => (e.message.includes('socket hang up') ? undefined : reject(e)));
      req.end(JSON.stringify({ model: 'm', messages: [user('x')], stream: true }));
    });
    expect(text.startsWith('data: {')).toBe(true);
    expect(text).not.toContain('[DONE]');
  });

  it('endless_tool_calls answers with a tool call that never repeats', async () => {
    const { client } = await sim({ endlessToolCalls: true });
    const messages: ChatCompletionMessageParam[] = [user('Say hi.')];
    const seen = new Set<string>();
    for (let i = 0; i < 6; i++) {
      const message = (await client.chat.completions.create({ model: 'm', messages, tools: RESEARCH_TOOLS })).choices[0]?.message;
      const call = message?.tool_calls?.[0];
      if (!message || call?.type !== 'function') throw new Error('expected a tool call');
      expect(call.function.name).toBe('list_dir');
      seen.add(call.function.arguments);
      messages.push({ role: 'assistant', content: null, tool_calls: message.tool_calls ?? [] }, { role: 'tool', tool_call_id: call.id, content: 'a\nb' });
    }
    expect(seen.size).toBe(6);
  });

  it('faultRate draws seeded random faults and records them', async () => {
    const { server, client } = await sim({ faultRate: 1, faultKinds: ['500'] });
    expect(await rejection(ask(client))).toMatchObject({ status: 500 });
    expect(server.requests[0]?.fault).toBe('500');
    server.setOptions({ faultRate: 0 });
    await ask(client);
    expect(server.requests[1]?.fault).toBeUndefined();
  });

  it('close() ends hung and stalled requests at once', async () => {
    const server = await startSimServer({ faults: { 1: { kind: 'hang_before_headers' }, 2: { kind: 'stall_mid_stream' } } });
    const client = new OpenAI({ baseURL: server.url, apiKey: 'test', maxRetries: 0 });
    const hung = rejection(client.chat.completions.create({ model: 'm', messages: [user('x')] }));
    const stream = await client.chat.completions.create({ model: 'm', messages: [user('x')], stream: true });
    const stalled = rejection(collect(stream));
    await server.close();
    expect(await hung).toBeInstanceOf(Error);
    expect(await stalled).toBeInstanceOf(Error);
  });
});

describe('request log', () => {
  const ask = (client: OpenAI) => client.chat.completions.create({ model: 'm', messages: [user('Where is it?')] });

  it('keeps no request bodies unless asked, and bodies when asked', async () => {
    const { server: plain, client: plainClient } = await sim();
    await ask(plainClient);
    expect(plain.requests).toHaveLength(1);
    expect(plain.requests[0]?.body).toBeUndefined();
    const { server: recording, client: recordingClient } = await sim({ recordBodies: true });
    await ask(recordingClient);
    expect(recording.requests[0]?.body.messages).toEqual([user('Where is it?')]);
  });

  it('keeps only the latest requestLogLimit entries; requestCount counts them all', async () => {
    const { server, client } = await sim({ requestLogLimit: 3 });
    for (let i = 0; i < 5; i++) await ask(client);
    expect(server.requests.map((r) => r.n)).toEqual([3, 4, 5]);
    expect(server.requestCount).toBe(5);
    const { server: none, client: noneClient } = await sim({ requestLogLimit: 0 });
    await ask(noneClient);
    expect(none.requests).toEqual([]);
    expect(none.requestCount).toBe(1);
  });

  it('rejects a bad requestLogLimit, recordBodies or dripIntervalMs naming the option', async () => {
    for (const [opts, field] of [
      [{ requestLogLimit: -1 }, 'sim.requestLogLimit'],
      [{ recordBodies: 'yes' }, 'sim.recordBodies'],
      [{ faults: { 1: { kind: 'slow_drip', dripIntervalMs: 0 } } }, 'sim.faults.1.dripIntervalMs'],
    ] as const) {
      const error = (await rejection(startSimServer(opts as SimServerOptions))) as { issues: Array<{ field: string }> };
      expect(error.issues.map((i) => i.field)).toEqual([field]);
    }
  });
});

describe('plausible agent', () => {
  it('(b) spawns one background agent per question', async () => {
    const { client } = await sim();
    const prompt =
      'Please look into these:\n1. Where is the retry backoff implemented?\n2) How does the delivery ledger work?\n3. Which tests cover cancellation?';
    const res = await client.chat.completions.create({ model: 'm', messages: [user(prompt)], tools: PARENT_TOOLS });
    const calls = (res.choices[0]?.message.tool_calls ?? []).flatMap((c) => (c.type === 'function' ? [c.function] : []));
    expect(calls.map((c) => c.name)).toEqual(Array(3).fill('spawn_background_agent'));
    const args = calls.map((c) => JSON.parse(c.arguments) as { task: string; label: string });
    expect(args[0]?.task).toBe('Where is the retry backoff implemented? Answer from the files in the workspace.');
    expect(args.every((a) => a.label.length > 0 && a.label.length <= 40)).toBe(true);
    expect(new Set(args.map((a) => a.label)).size).toBe(3);
    expect(args.map((a) => a.label)).toEqual(['retry backoff', 'delivery ledger', 'test cancellation']);
  });

  it('(b) questions as sentences ending in "?"; a single question researches instead', async () => {
    const { client } = await sim();
    const multi = await client.chat.completions.create({
      model: 'm',
      messages: [user('Where is the pool created? What limits the queue length?')],
      tools: PARENT_TOOLS,
    });
    expect(multi.choices[0]?.message.tool_calls).toHaveLength(2);
    const single = await client.chat.completions.create({ model: 'm', messages: [user('Where is the pool created?')], tools: PARENT_TOOLS });
    const names = (single.choices[0]?.message.tool_calls ?? []).map((c) => (c.type === 'function' ? c.function.name : ''));
    expect(names).toEqual(['find_files', 'grep']);
  });

  it('(c) after spawn results, says what it started', async () => {
    const { client } = await sim();
    const messages: ChatCompletionMessageParam[] = [
      user('1. a question about pools\n2. another about queues'),
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'c1', type: 'function', function: { name: 'spawn_background_agent', arguments: '{"task":"t1","label":"pools"}' } },
          { id: 'c2', type: 'function', function: { name: 'spawn_background_agent', arguments: '{"task":"t2","label":"queues"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'c1', content: 'Started job j1.' },
      { role: 'tool', tool_call_id: 'c2', content: 'Started job j2.' },
    ];
    const res = await client.chat.completions.create({ model: 'm', messages, tools: PARENT_TOOLS });
    expect(res.choices[0]?.message.content).toBe('I started 2 background agents (pools, queues). I will report when they finish.');
    expect(res.choices[0]?.message.tool_calls).toBeUndefined();
  });

  it('(a) synthesizes background results, naming each label and quoting it', async () => {
    const { client } = await sim();
    const block = [
      BACKGROUND_RESULTS_OPEN,
      '[Background agent "retry backoff" (job j1) finished: ok]',
      'The backoff lives in src/shared/model-call.ts. It doubles up to 8 s.',
      '[Background agent "ledger" (job j2) finished: failed]',
      'Timed out after 20 minutes.',
      BACKGROUND_RESULTS_CLOSE,
    ].join('\n');
    const res = await client.chat.completions.create({ model: 'm', messages: [user(`${block}\n\n${BACKGROUND_FOLLOWUP_PROMPT}`)], tools: PARENT_TOOLS });
    const content = res.choices[0]?.message.content ?? '';
    expect(res.choices[0]?.message.tool_calls).toBeUndefined();
    expect(content).toContain('- retry backoff: "The backoff lives in src/shared/model-call.ts. It doubles up to 8 s."');
    expect(content).toContain('- ledger: "Timed out after 20 minutes."');
  });

  it('(d) researches in steps: search, read the best hit, summarize with a result tag', async () => {
    const { client } = await sim();
    const system: ChatCompletionMessageParam = { role: 'system', content: backgroundSystemPrompt({ workspaceRoot: '/ws' }) };
    const messages: ChatCompletionMessageParam[] = [system, user('Where is the heartbeat interval configured? Answer from the files in the workspace.')];
    const next = async () => (await client.chat.completions.create({ model: 'm', messages, tools: RESEARCH_TOOLS })).choices[0]?.message;

    const step1 = await next();
    const calls1 = (step1?.tool_calls ?? []).flatMap((c) => (c.type === 'function' ? [c] : []));
    expect(calls1.map((c) => [c.function.name, JSON.parse(c.function.arguments)])).toEqual([
      ['find_files', { pattern: '**/*heartbeat*' }],
      ['grep', { pattern: 'heartbeat|interval', ignore_case: true }],
    ]);
    messages.push(
      { role: 'assistant', content: null, tool_calls: step1?.tool_calls ?? [] },
      { role: 'tool', tool_call_id: calls1[0]?.id ?? '', content: 'src/heartbeat.ts\ntest/heartbeat.test.ts' },
      { role: 'tool', tool_call_id: calls1[1]?.id ?? '', content: 'src/a.ts:3: heartbeat\nsrc/config.ts:10: interval\nsrc/config.ts:12: heartbeatMs' },
    );

    const step2 = await next();
    const read = step2?.tool_calls?.[0];
    expect(read?.type === 'function' && read.function.name).toBe('read_file');
    expect(read?.type === 'function' && JSON.parse(read.function.arguments)).toEqual({ path: 'src/config.ts', limit: 60 });
    messages.push(
      { role: 'assistant', content: null, tool_calls: step2?.tool_calls ?? [] },
      { role: 'tool', tool_call_id: read?.id ?? '', content: '     1\t\n     2\texport const heartbeatMs = 500;\n' },
    );

    const step3 = await next();
    expect(step3?.tool_calls).toBeUndefined();
    expect(step3?.content).toBe(
      'Found 3 matching lines in 2 files for heartbeat, interval. Most relevant: src/config.ts. export const heartbeatMs = 500;\n' +
        '<result status="ok" files_touched="src/config.ts"/>',
    );
  });

  it('(d) with no hits (or only tool errors) ends with a partial result', async () => {
    const { client } = await sim();
    const messages: ChatCompletionMessageParam[] = [user('Where is the quantum flux capacitor?')];
    const step1 = (await client.chat.completions.create({ model: 'm', messages, tools: RESEARCH_TOOLS })).choices[0]?.message;
    const ids = (step1?.tool_calls ?? []).map((c) => c.id);
    messages.push(
      { role: 'assistant', content: null, tool_calls: step1?.tool_calls ?? [] },
      { role: 'tool', tool_call_id: ids[0] ?? '', content: 'Error: path outside workspace' },
      { role: 'tool', tool_call_id: ids[1] ?? '', content: 'No matches.' },
    );
    const step2 = (await client.chat.completions.create({ model: 'm', messages, tools: RESEARCH_TOOLS })).choices[0]?.message;
    expect(step2?.tool_calls).toBeUndefined();
    expect(step2?.content).toBe('Found no matching lines or files for capacitor, quantum.\n<result status="partial" files_touched=""/>');
  });

  it('is deterministic: the same request gives the same body', async () => {
    const body = { model: 'm', messages: [user('1. Where are workers started?\n2. How is a job cancelled?')], tools: PARENT_TOOLS, stream: true as const };
    const a = await sim({ seed: 7, jitterMs: 3 });
    const b = await sim({ seed: 7, jitterMs: 3 });
    const run = async (s: { server: SimServer }) => (await raw(s.server, 'POST', '/v1/chat/completions', JSON.stringify(body))).text;
    const first = await run(a);
    expect(first).toBe(await run(b));
    const again = await run(a);
    expect(again.replaceAll('chatcmpl-sim-2', 'X').replaceAll('call_2_', 'c')).toBe(first.replaceAll('chatcmpl-sim-1', 'X').replaceAll('call_1_', 'c'));
  });
});
