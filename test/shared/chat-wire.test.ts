/**
 * The Chat Completions wire with forkpool's own client (model-client.ts: fetch, no SDK, so a
 * worker thread never loads the `openai` package) against the `openai` client it replaced, side
 * by side on the same endpoint: the same request (headers and body; the SDK's own name and
 * platform headers aside), the environment's headers included, and the same words for a failed
 * status, which the retries and the records carry.
 */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { callModel, createModelClient, type ModelClient } from '../../src/shared/model-call.js';
import { startRecordingProxy, startTestSim, testConfig, useCleanup, type Cleanup } from '../helpers/index.js';

const cleanup = useCleanup();
const KEY = 'sk-test-chat-wire-1234';
/** What the `openai` client reads from the environment for every request. */
const ENV = { OPENAI_ORG_ID: 'org-chat-wire', OPENAI_PROJECT_ID: 'proj-chat-wire', OPENAI_CUSTOM_HEADERS: 'X-Gateway-Team: search\nX-Trace-Sample: 1' };
/**
 * Headers that only say who sent a request (the SDK's name, version, platform, retry count), and
 * those fetch adds to every request the SDK sends (ours go out with `node:http`: wires/http.ts).
 */
const SENDER_ONLY = /^(user-agent|x-stainless-.*|accept-encoding|accept-language|sec-fetch-mode)$/;

/** Both clients for `baseUrl`, built with {@link ENV} set (as the SDK reads it when it is built). */
function bothClients(baseUrl: string): Array<[string, ModelClient]> {
  const saved = Object.fromEntries(Object.keys(ENV).map((name) => [name, process.env[name]]));
  Object.assign(process.env, ENV);
  try {
    const config = testConfig({ baseUrl, apiKey: KEY });
    const sdk = new OpenAI({ apiKey: KEY, baseURL: baseUrl, timeout: config.firstByteTimeoutMs, maxRetries: 0, logLevel: 'off' });
    return [
      ['openai client', sdk],
      ['own client', createModelClient(config)],
    ];
  } finally {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  }
}

function callWith(client: ModelClient, baseUrl: string, stream: boolean) {
  const config = testConfig({ baseUrl, apiKey: KEY, maxRetries: 0, stream });
  return callModel({ client, config, params: { messages: [{ role: 'user', content: 'Where is the retry backoff?' }] }, signal: new AbortController().signal });
}

function comparable(headers: IncomingHttpHeaders): Record<string, unknown> {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !SENDER_ONLY.test(name)));
}

/** A loopback endpoint answering every request with `status` and `body` as it is. */
async function startRawStatusServer(cleanups: Cleanup, status: number, body: string): Promise<string> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(status, { 'content-type': body.startsWith('{') ? 'application/json' : 'text/plain' });
      res.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.add(() => new Promise<void>((resolve) => server.close(() => resolve())).finally(() => server.closeAllConnections()));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
}

describe.each([false, true])('a Chat Completions request with our own client (stream %s)', (stream) => {
  it('sends what the openai client sent: key, environment headers and body alike', async () => {
    const { sim } = await startTestSim(cleanup);
    const proxy = await startRecordingProxy(cleanup, sim.url);
    const replies: Awaited<ReturnType<typeof callModel>>[] = [];
    for (const [, client] of bothClients(proxy.url)) replies.push(await callWith(client, proxy.url, stream));
    expect(replies.map((r) => r.content.length > 0)).toEqual([true, true]);
    const [sdk, own] = proxy.requests;
    expect(own?.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(own?.headers['openai-organization']).toBe(ENV.OPENAI_ORG_ID);
    expect(own?.headers['x-gateway-team']).toBe('search');
    expect(comparable(own?.headers ?? {})).toEqual(comparable(sdk?.headers ?? {}));
    expect(own?.body).toBe(sdk?.body);
  });

  it.each([
    [400, JSON.stringify({ error: { message: 'messages: too long', type: 'invalid_request_error', param: null, code: null } })],
    [422, JSON.stringify({ detail: 'model not loaded' })],
    [503, 'upstream is down'],
    [404, ''],
  ])('says a %i with that body as the openai client did', async (status, body) => {
    const url = await startRawStatusServer(cleanup, status, body);
    const errors: string[] = [];
    for (const [, client] of bothClients(url))
      errors.push(
        await callWith(client, url, stream).then(
          () => 'no error',
          (error: Error) => error.message,
        ),
      );
    expect(errors[0]).toMatch(new RegExp(`^model request failed after 1 attempt\\(s\\): HTTP ${status}`));
    expect(errors[1]).toBe(errors[0]);
  });
});
