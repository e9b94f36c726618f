/**
 * Low-level HTTP helpers of the simulator: bodies, JSON and SSE writes, abortable waits.
 * Every wait takes the request's signal, so closing the server clears every timer at once.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';
import { errorBody } from './faults.js';

export class BodyTooLargeError extends Error {
  constructor(limit: number) {
    super(`request body exceeds ${limit} bytes`);
    this.name = 'BodyTooLargeError';
  }
}

export function readBody(req: IncomingMessage, limit: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        reject(new BodyTooLargeError(limit));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
    req.on('close', () => reject(new Error('request closed before its body was read')));
  });
}

/** Resolves after `ms` (at once for 0); rejects when `signal` aborts, clearing the timer. */
export async function sleep(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) throw signal.reason;
  if (ms <= 0) return;
  await delay(ms, undefined, { signal });
}

/** Resolves when `signal` aborts (the client went away or the server closed). */
export function waitForAbort(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
}

export function sendJson(res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(body)),
    ...headers,
  });
  res.end(body);
}

export function sendError(res: ServerResponse, status: number, message: string, type: string, code: string | null, headers: Record<string, string> = {}): void {
  sendJson(res, status, errorBody(status, message, type, code), headers);
}

export function startSse(res: ServerResponse, headers: Record<string, string>): void {
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    ...headers,
  });
  // Why: a stalled stream must show its headers to the client at once, not on the first write.
  res.flushHeaders();
}

/** Flushes what was written, then cuts the connection without ending the response. */
export function cutAfterFlush(res: ServerResponse, text: string): void {
  res.write(text, () => res.socket?.destroy());
}
