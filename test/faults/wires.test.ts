/**
 * The Responses and Anthropic Messages wires (issue 36 §3): real jobs through the real Piscina
 * pool against the simulator, which speaks both. Each test asserts on what the simulator
 * received (path, body shape) and on the job's record, never on timing. The tests run side by
 * side (they wait on retries and watchdogs, with little CPU), each with its own servers and pool.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import type { Cleanup } from '../helpers/cleanup.js';
import type { RecordedRequest } from '../../src/sim/index.js';
import {
  makeConfig,
  makeManager,
  makeWorkspace,
  RESEARCH_TASK,
  retriesOf,
  runOneJob,
  startSim,
  startStatusServer,
  cleanupOf,
  ended,
} from '../helpers/index.js';

const WIRES = ['responses', 'anthropic'] as const;
const IDLE_TIMEOUT_MS = 400;
const ANSWER_TEXT = 'The retry backoff is implemented in src/retry.ts (exponential, capped at 8 s).';
const ANSWER = `${ANSWER_TEXT}\n<result status="ok" files_touched=""/>`;
/** The events that close a stream on each wire. */
const CLOSING_EVENTS = { responses: /^event: response\.completed$/m, anthropic: /^event: message_(delta|stop)$/m };

/**
 * A proxy to the sim whose first answer loses its closing events and still ends cleanly (no cut
 * connection, which the client would see as a read error anyway): a server that stopped early.
 */
async function startClosingDropper(cleanups: Cleanup, target: string, closing: RegExp): Promise<{ url: string }> {
  let first = true;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      for (const name of ['anthropic-version', 'x-api-key', 'authorization']) if (typeof req.headers[name] === 'string') headers[name] = req.headers[name];
      void fetch(`${target}${(req.url ?? '').replace(/^\/v1/, '')}`, { method: 'POST', headers, body: Buffer.concat(chunks) })
        .then(async (upstream) => {
          let text = await upstream.text();
          if (first)
            text = text
              .split('\n\n')
              .filter((event) => !closing.test(event))
              .join('\n\n');
          first = false;
          res.writeHead(upstream.status, { 'content-type': upstream.headers.get('content-type') ?? 'text/plain' });
          res.end(text);
        })
        .catch(() => res.destroy());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.add(() => new Promise<void>((resolve) => server.close(() => resolve())).finally(() => server.closeAllConnections()));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1` };
}

/** The tool results a request sends back, on either wire. */
function toolResultsIn(request: RecordedRequest | undefined): unknown[] {
  const body = request?.body as { input?: Array<{ type?: string }>; messages?: Array<{ content?: unknown }> } | undefined;
  if (request?.wire === 'responses') return (body?.input ?? []).filter((item) => item.type === 'function_call_output');
  return (body?.messages ?? []).flatMap((m) =>
    Array.isArray(m.content) ? (m.content as Array<{ type?: string }>).filter((b) => b.type === 'tool_result') : [],
  );
}

describe.concurrent.each(WIRES)('the %s wire', (api) => {
  it.for([true, false])('a multi-step tool job (stream %s) ends ok, every request on this wire, its usage counted', async (stream, context) => {
    const cleanups = cleanupOf(context);
    const { record, sim } = await runOneJob(cleanups, { config: { api, stream } });
    expect(record.status).toBe('ok');
    expect(record.resultText).toContain('src/retry.ts');
    // The plausible agent searches, reads, then answers: three model calls, the last two with tool results.
    expect(sim.requests.length).toBeGreaterThanOrEqual(3);
    expect(sim.requests.every((r) => r.wire === api)).toBe(true);
    expect(sim.requests.every((r) => (r.body as { stream?: boolean }).stream === (stream ? true : undefined))).toBe(true);
    expect(toolResultsIn(sim.requests[0])).toEqual([]);
    expect(toolResultsIn(sim.requests.at(-1)).length).toBeGreaterThan(0);
    const usage = Object.values(record.usage);
    expect(usage.reduce((n, u) => n + u.requests, 0)).toBe(sim.requests.length);
    expect(usage.reduce((n, u) => n + u.promptTokens, 0)).toBeGreaterThan(0);
    expect(usage.reduce((n, u) => n + u.completionTokens, 0)).toBeGreaterThan(0);
  });

  it('a 429 (Retry-After) and a 500 are retried, then the job ends ok', async (context) => {
    const cleanups = cleanupOf(context);
    const { record, sim, events } = await runOneJob(cleanups, {
      sim: { faults: { 1: { kind: '429', retryAfterSeconds: 0.2 }, 2: { kind: '500' } } },
      config: { api, maxRetries: 3 },
    });
    expect(record.status).toBe('ok');
    expect(sim.requests.slice(0, 3).map((r) => [r.wire, r.fault])).toEqual([
      [api, '429'],
      [api, '500'],
      [api, undefined],
    ]);
    const retries = retriesOf(events);
    expect(retries.map((r) => r.reason)).toEqual([expect.stringMatching(/^HTTP 429: /), expect.stringMatching(/^HTTP 500: /)]);
    // Retry-After was honoured: the retry waited at least its 200 ms.
    expect(retries[0]?.delayMs).toBeGreaterThanOrEqual(200);
  });

  it('a stream that stalls after its headers is caught by the idle watchdog and retried', async (context) => {
    const cleanups = cleanupOf(context);
    const { record, sim, events } = await runOneJob(cleanups, {
      sim: { faults: { 1: { kind: 'stall_mid_stream' } } },
      config: { api, stream: true, streamIdleTimeoutMs: IDLE_TIMEOUT_MS, requestTimeoutMs: 60_000, maxRetries: 1 },
    });
    expect(record.status).toBe('ok');
    expect(sim.requests.slice(0, 2).map((r) => [r.wire, r.fault])).toEqual([
      [api, 'stall_mid_stream'],
      [api, undefined],
    ]);
    expect(retriesOf(events).map((r) => r.reason)).toEqual([expect.stringContaining(`stream sent nothing for ${IDLE_TIMEOUT_MS} ms`)]);
  });

  it('a stream that ends cleanly without its closing event is retried, not taken as a whole answer', async (context) => {
    const cleanups = cleanupOf(context);
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups, { script: [{ content: ANSWER }, { content: ANSWER }] });
    const proxy = await startClosingDropper(cleanups, sim.url, CLOSING_EVENTS[api]);
    const manager = makeManager(makeConfig(sim, root, { maxConcurrent: 1 }, { api, stream: true, maxRetries: 1, baseUrl: proxy.url }), cleanups);
    const events: Array<{ type: string; reason?: string }> = [];
    manager.on('progress', ({ event }) => events.push(event));
    const { id } = manager.spawn({ task: RESEARCH_TASK, label: 'cut' });
    const record = await ended(manager, id);
    expect(record.status).toBe('ok');
    expect(record.resultText).toBe(ANSWER_TEXT);
    expect(sim.requests.map((r) => r.wire)).toEqual([api, api]);
    expect(events.filter((e) => e.type === 'retry').map((e) => e.reason)).toEqual([expect.stringContaining('cut off')]);
    sim.assertScriptDone();
  });

  it('a stream cut off before its closing event is retried, not taken as a whole answer', async (context) => {
    const cleanups = cleanupOf(context);
    const { record, sim, events } = await runOneJob(cleanups, {
      sim: { faults: { 1: { kind: 'truncated_stream' } } },
      config: { api, stream: true, maxRetries: 1 },
    });
    expect(record.status).toBe('ok');
    expect(sim.requests.slice(0, 2).map((r) => [r.wire, r.fault])).toEqual([
      [api, 'truncated_stream'],
      [api, undefined],
    ]);
    expect(retriesOf(events)).toHaveLength(1);
  });
});

describe.concurrent('the Responses wire', () => {
  it('sends the reasoning items of each answer back with the next request, before the calls they led to', async (context) => {
    const cleanups = cleanupOf(context);
    const { record, sim } = await runOneJob(cleanups, { config: { api: 'responses' } });
    expect(record.status).toBe('ok');
    const [first, second, third] = sim.requests.map(
      (r) => r.body as { input: Array<{ type?: string; id?: string; encrypted_content?: string }>; store?: boolean },
    );
    expect(first?.store).toBe(false);
    expect(first?.input.filter((i) => i.type === 'reasoning')).toEqual([]);
    // The sim's first answer carried rs_resp_sim_1: the next request sends it back, whole.
    const sentBack = second?.input.find((i) => i.type === 'reasoning');
    expect(sentBack).toMatchObject({ id: 'rs_resp_sim_1', encrypted_content: 'sim-reasoning-of-resp_sim_1' });
    const order = (second?.input ?? []).map((i) => i.type);
    expect(order.indexOf('reasoning')).toBeLessThan(order.indexOf('function_call'));
    // Both earlier answers' reasoning in the third request.
    expect(third?.input.filter((i) => i.type === 'reasoning').map((i) => i.id)).toEqual(['rs_resp_sim_1', 'rs_resp_sim_2']);
  });
});

describe.concurrent('the Anthropic wire', () => {
  it('marks the stable prefix (system and tools) with cache_control, and counts cache reads and writes', async (context) => {
    const cleanups = cleanupOf(context);
    const { record, sim } = await runOneJob(cleanups, { config: { api: 'anthropic' } });
    expect(record.status).toBe('ok');
    for (const request of sim.requests) {
      const body = request.body as { system: Array<{ cache_control?: unknown }>; tools: Array<{ cache_control?: unknown }>; max_tokens?: number };
      expect(body.system.at(-1)?.cache_control).toEqual({ type: 'ephemeral' });
      expect(body.tools.at(-1)?.cache_control).toEqual({ type: 'ephemeral' });
      // Required by the API: a default is sent when none is configured.
      expect(body.max_tokens).toBeGreaterThan(0);
    }
    // The first request wrote the prefix to the cache, the later ones read it.
    const usage = Object.values(record.usage)[0];
    expect(usage?.cacheWriteTokens).toBeGreaterThan(0);
    expect(usage?.cachedTokens).toBeGreaterThan(0);
  });

  it('sends the key as x-api-key with anthropic-version; a server that echoes the key never gets it into the record', async (context) => {
    const cleanups = cleanupOf(context);
    const key = 'sk-ant-test-0123456789abcdef';
    const server = await startStatusServer(
      cleanups,
      401,
      (headers) => `bad key ${String(headers['x-api-key'])} (version ${String(headers['anthropic-version'])})`,
    );
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups);
    const manager = makeManager(makeConfig(sim, root, { maxConcurrent: 1 }, { api: 'anthropic', baseUrl: server.url, apiKey: key, maxRetries: 2 }), cleanups);
    const { id } = manager.spawn({ task: RESEARCH_TASK, label: 'echo' });
    const record = await ended(manager, id);
    expect(record.status).toBe('failed');
    // 401 is not retried; the message quotes the body, with the key redacted.
    expect(server.hits).toBe(1);
    expect(record.error?.message).toContain('HTTP 401');
    expect(record.error?.message).toContain('bad key [REDACTED] (version 2023-06-01)');
    expect(JSON.stringify(record)).not.toContain(key);
  });
});

// Alone, after the concurrent tests above: its 20 ms gaps must stay far below the 400 ms watchdog.
describe.each(WIRES)('the %s wire, a long stream', (api) => {
  it('a stream longer in all than the idle timeout, but never idle that long, is not cut', async (context) => {
    const cleanups = cleanupOf(context);
    // 100 events 20 ms apart: two seconds of stream, each gap a twentieth of the watchdog's 400 ms.
    const { record, events } = await runOneJob(cleanups, {
      sim: { script: [{ content: `${'x'.repeat(400)}\n<result status="ok" files_touched=""/>` }], perTokenMs: 20, maxTokensPerChunk: 1 },
      config: { api, stream: true, streamIdleTimeoutMs: IDLE_TIMEOUT_MS, maxRetries: 0 },
    });
    expect(record.status).toBe('ok');
    expect(retriesOf(events)).toEqual([]);
  });
});
