/**
 * A streamed answer far past `maxResponseChars` in one server-sent event (a 100 MB `data:`
 * line): the job, through the real pool and worker, stops reading at the cap with
 * MODEL_RESPONSE_TOO_LARGE and asks once. It used to read the line whole (rescanning it on
 * every read), see no event, and fail as "stream sent nothing" after every retry.
 */
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { retriesOf, runOneJob, useCleanup, waitFor, type Cleanup } from '../helpers/index.js';

const cleanups = useCleanup();

/**
 * What the server would send of its one endless event: the 100 MB, far more than the cap
 * lets through and than loopback's socket buffers hold (a client that stopped reading stops it).
 */
const EVENT_BYTES = 100 * 1024 * 1024;

interface EndlessEventServer {
  url: string;
  hits: number;
  /** Bytes of the event written before the client went away (or all of them). */
  sent: number;
  /** The client closed the connection before the event was all sent. */
  cutByClient: boolean;
}

/** Answers every request with one `data:` line of EVENT_BYTES of content, then holds the connection open. */
async function startEndlessEventServer(cleanups: Cleanup): Promise<EndlessEventServer> {
  const state: EndlessEventServer = { url: '', hits: 0, sent: 0, cutByClient: false };
  const piece = 'x'.repeat(64 * 1024);
  const server = createServer((req, res) => {
    state.hits++;
    req.resume();
    req.on('end', () => void sendEndlessEvent(res));
  });
  async function sendEndlessEvent(res: ServerResponse): Promise<void> {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('data: {"id":"c1","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,"delta":{"content":"');
    let closed = false;
    let wake = () => {};
    res.on('close', () => ((closed = true), wake()));
    while (state.sent < EVENT_BYTES && !closed) {
      state.sent += piece.length;
      // Back-pressure: write on only when the client reads (a client that stops reading stops us).
      if (!res.write(piece)) await new Promise<void>((resolve) => ((wake = resolve), res.once('drain', resolve)));
    }
    if (closed && state.sent < EVENT_BYTES) state.cutByClient = true;
    // Then nothing more: the event never ends.
  }
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  cleanups.add(() => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))));
  return state;
}

describe('a streamed answer past maxResponseChars', () => {
  it('one endless event is stopped as it arrives: MODEL_RESPONSE_TOO_LARGE on the first attempt, not a stall after every retry', async () => {
    const server = await startEndlessEventServer(cleanups);
    const { record, events } = await runOneJob(cleanups, {
      // The idle watchdog is far off: only the cap may end the read (before the fix it ended it, after every retry).
      config: { stream: true, maxResponseChars: 1_000, maxRetries: 1, streamIdleTimeoutMs: 10_000 },
      baseUrl: () => server.url,
    });
    expect(record.status).toBe('failed');
    expect(record.error?.code).toBe('MODEL_RESPONSE_TOO_LARGE');
    expect(record.error?.message).toContain('maxResponseChars (1000');
    expect(retriesOf(events)).toEqual([]);
    expect(server.hits).toBe(1);
    // The read was given up at the cap: the server never got to send the rest of its event. The
    // server hears of the closed connection after the job has ended (another turn of its loop).
    await waitFor(() => server.cutByClient || server.sent >= EVENT_BYTES, 'the server to see the connection closed or its event all sent');
    expect(server.cutByClient).toBe(true);
    expect(server.sent).toBeLessThan(EVENT_BYTES);
  }, 90_000);
});
