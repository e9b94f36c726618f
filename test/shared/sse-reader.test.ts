/**
 * readEventStream, the chat-completions event-stream reader on the model call's path: what the
 * SDK's decoder would yield, whatever way the bytes are cut into reads.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { callModel, createModelClient } from '../../src/shared/model-call.js';
import { readEventStream } from '../../src/shared/sse-reader.js';
import { useCleanup } from '../helpers/cleanup.js';
import { testConfig } from '../helpers/config.js';

const cleanup = useCleanup();

function bodyOf(pieces: Uint8Array[]): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start(controller) {
      for (const piece of pieces) controller.enqueue(piece);
      controller.close();
    },
  });
}

/** The text as one read per `size` bytes (which cuts lines, \r\n pairs and UTF-8 characters). */
function cut(text: string, size: number): Uint8Array[] {
  const bytes = new TextEncoder().encode(text);
  const pieces: Uint8Array[] = [];
  for (let at = 0; at < bytes.length; at += size) pieces.push(bytes.slice(at, at + size));
  return pieces;
}

async function read(text: string, size: number): Promise<unknown[]> {
  const events: unknown[] = [];
  await readEventStream(bodyOf(cut(text, size)), new Headers(), (data) => events.push(data));
  return events;
}

const STREAM =
  ': keep-alive\r\n\r\n' +
  'data: {"n":1,"text":"héllo ✓"}\r\n\r\n' +
  'event: message\ndata:{"n":2}\n\n' +
  'data: {"n":\ndata: 3}\r\r' +
  'data: {"n":\r\ndata: 4}\r\n\r\n' +
  'data: [DONE]\n\n' +
  'data: {"n":"after done"}\n\n';

describe('readEventStream', () => {
  it.each([1, 2, 3, 5, 7, 1000])('yields the data events in order, skips comments, stops at [DONE] (reads of %i bytes)', async (size) => {
    expect(await read(STREAM, size)).toEqual([{ n: 1, text: 'héllo ✓' }, { n: 2 }, { n: 3 }, { n: 4 }]);
  });

  it('counts a last event that has no blank line after it', async () => {
    expect(await read('data: {"n":1}\n\ndata: {"n":2}', 4)).toEqual([{ n: 1 }, { n: 2 }]);
  });

  it('an error event or a payload with `error` is an APIError; a payload that is not JSON a SyntaxError', async () => {
    await expect(read('event: error\ndata: {"error":{"message":"overloaded"}}\n\n', 6)).rejects.toBeInstanceOf(OpenAI.APIError);
    await expect(read('data: {"error":{"message":"bad"}}\n\n', 6)).rejects.toBeInstanceOf(OpenAI.APIError);
    await expect(read('data: {"n":1}\n\ndata: {not json\n\n', 6)).rejects.toBeInstanceOf(SyntaxError);
  });
});

describe('a streamed model call after [DONE]', () => {
  it('reads on to the end of the body: ten calls in a row reuse the kept-alive connection', async () => {
    let connections = 0;
    const event = (delta: object, finish: string | null) =>
      `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    const server = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(event({ role: 'assistant', content: 'hi' }, null));
        res.write(event({}, 'stop'));
        res.write('data: [DONE]\n\n');
        // The end of the body comes in a packet of its own, a little after [DONE].
        setTimeout(() => res.end(), 30);
      });
    });
    server.on('connection', () => connections++);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    cleanup.add(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const config = testConfig({ baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, stream: true });
    const client = createModelClient(config);
    for (let i = 0; i < 10; i++) {
      const reply = await callModel({ client, config, params: { messages: [{ role: 'user', content: 'x' }] }, signal: new AbortController().signal });
      expect(reply.content).toBe('hi');
      // The previous body's end is read in the background: let it land before the next request.
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    // Cancelling the body at [DONE] closed the connection: a new one for every call (11 seen).
    // Not exactly 1: on a very loaded machine a drain can still be running at the next call.
    expect(connections).toBeLessThanOrEqual(3);
  });
});
