/**
 * Server test helpers: a real `forkpool serve` app on loopback (port 0) over a sim, fetch
 * with the token, an SSE reader, and a Prometheus text checker.
 */
import { startForkpoolServer, type ForkpoolServer, type ForkpoolServerOptions } from '../../src/server/app.js';
import type { ForkpoolConfigInput } from '../../src/shared/config.js';
import type { SimServerOptions } from '../../src/sim/index.js';
import type { Cleanup } from './cleanup.js';
import { startTestSim, type TestSim } from './sim.js';
import { ApiContract, type OpenApiDoc } from './openapi.js';
import { expect } from 'vitest';

export const TOKEN = 'test-token-0123456789';

export interface TestServer {
  server: ForkpoolServer;
  url: string;
  /** The loopback sim the server's model calls go to (its `requests` show calls in flight). */
  sim: TestSim['sim'];
  /** fetch with the bearer token (pass `token: null` for none, or another string). */
  api: (path: string, init?: RequestInit & { token?: string | null; json?: unknown }) => Promise<Response>;
}

export async function startTestServer(
  cleanup: Cleanup,
  configOverrides: Partial<ForkpoolConfigInput> = {},
  simOptions: SimServerOptions = {},
  serverOptions: Partial<ForkpoolServerOptions> = {},
): Promise<TestServer> {
  const { config, sim } = await startTestSim(cleanup, { latencyMs: 20, ...simOptions }, configOverrides);
  const server = await startForkpoolServer({ config, token: TOKEN, port: 0, ...serverOptions });
  cleanup.add(() => server.close());
  const api: TestServer['api'] = (path, init = {}) => {
    const { token = TOKEN, json, ...rest } = init;
    const headers = new Headers(rest.headers);
    if (token !== null) headers.set('authorization', `Bearer ${token}`);
    if (json !== undefined) headers.set('content-type', 'application/json');
    return fetch(`${server.url}${path}`, { ...rest, headers, ...(json !== undefined ? { body: JSON.stringify(json), method: rest.method ?? 'POST' } : {}) });
  };
  return { server, url: server.url, sim, api };
}

export interface SseEvent {
  id: string | undefined;
  event: string;
  data: string;
}

/**
 * Reads `/v1/events` until `until` accepts the events so far (or the stream ends), then
 * aborts. Returns every event and the raw text.
 */
export async function readEvents(
  url: string,
  options: { lastEventId?: string; until: (events: SseEvent[]) => boolean; token?: string },
): Promise<{ events: SseEvent[]; text: string }> {
  const abort = new AbortController();
  const headers: Record<string, string> = { authorization: `Bearer ${options.token ?? TOKEN}` };
  if (options.lastEventId !== undefined) headers['last-event-id'] = options.lastEventId;
  const response = await fetch(`${url}/v1/events`, { headers, signal: abort.signal });
  if (!response.ok || !response.body) throw new Error(`events: HTTP ${response.status}`);
  const events: SseEvent[] = [];
  let text = '';
  let buffer = '';
  const decoder = new TextDecoder();
  const reader = response.body.getReader();
  try {
    while (!options.until(events)) {
      const { value, done } = await reader.read();
      if (done) break;
      const chunk = decoder.decode(value, { stream: true });
      text += chunk;
      buffer += chunk;
      let end: number;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const fields = new Map<string, string>();
        for (const line of block.split('\n')) {
          if (line.startsWith(':') || !line.includes(':')) continue;
          const at = line.indexOf(':');
          fields.set(line.slice(0, at), line.slice(at + 1).replace(/^ /, ''));
        }
        if (fields.has('event') || fields.has('data'))
          events.push({ id: fields.get('id'), event: fields.get('event') ?? 'message', data: fields.get('data') ?? '' });
      }
    }
  } finally {
    abort.abort();
    await reader.cancel().catch(() => {});
  }
  return { events, text };
}

/**
 * Checks Prometheus text exposition format 0.0.4 line by line (HELP/TYPE before samples,
 * metric and label names, escaped label values, numeric values) and returns the samples.
 * Throws on the first bad line.
 */
export function parsePrometheus(text: string): Map<string, number> {
  const samples = new Map<string, number>();
  const typed = new Map<string, string>();
  const sample =
    /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\["\\n])*"(?:,[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\["\\n])*")*)?\})? (-?(?:\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|NaN|\+Inf|-Inf))$/;
  if (!text.endsWith('\n')) throw new Error('metrics text must end with a newline');
  for (const [index, line] of text.slice(0, -1).split('\n').entries()) {
    const type = /^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped)$/.exec(line);
    if (type) {
      if (typed.has(type[1] as string)) throw new Error(`line ${index + 1}: second TYPE for ${type[1]}`);
      typed.set(type[1] as string, type[2] as string);
      continue;
    }
    if (/^# HELP [a-zA-Z_:][a-zA-Z0-9_:]* .*$/.test(line)) continue;
    const match = sample.exec(line);
    if (!match) throw new Error(`line ${index + 1} is not Prometheus text: ${JSON.stringify(line)}`);
    // A histogram's or summary's samples carry _bucket, _sum and _count after the TYPE's name.
    const base = (match[1] as string).replace(/_(bucket|sum|count)$/, '');
    const family = typed.has(match[1] as string) ? match[1] : ['histogram', 'summary'].includes(typed.get(base) ?? '') ? base : undefined;
    if (family === undefined) throw new Error(`line ${index + 1}: sample of ${match[1]} before its TYPE`);
    const key = `${match[1]}${match[2] ?? ''}`;
    if (samples.has(key)) throw new Error(`line ${index + 1}: duplicate sample ${key}`);
    samples.set(key, Number(match[3]));
  }
  return samples;
}

/**
 * The server's own /openapi.json as an ApiContract, and `call`: a request whose response is
 * checked against it (and, given `status`, asserted to have it); the method is POST with a `json`
 * body, else GET, unless `init.method` says.
 */
export async function contractCalls(server: TestServer): Promise<{
  contract: ApiContract;
  call: (route: string, init?: Parameters<TestServer['api']>[1], status?: number) => ReturnType<ApiContract['check']>;
}> {
  const contract = new ApiContract((await (await server.api('/openapi.json')).json()) as OpenApiDoc);
  const call = async (route: string, init: Parameters<TestServer['api']>[1] = {}, status?: number) => {
    const method = init.method ?? (init.json !== undefined ? 'POST' : 'GET');
    const response = await server.api(route, init);
    const body = await contract.check(method, route, response, { stream: false });
    if (status !== undefined) expect(response.status, `${method} ${route}: ${JSON.stringify(body)}`).toBe(status);
    return body;
  };
  return { contract, call };
}
