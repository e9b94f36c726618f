/**
 * `requestTimeoutMs` is a whole-request deadline, headers to last byte, for streamed responses
 * too: a server that drips data steadily (never idle long enough for the idle watchdog) is cut
 * off at the deadline and the request retried, per the retry policy.
 */
import { describe, expect, it } from 'vitest';
import { runToolLoop } from '../../src/shared/tool-loop.js';
import { createModelClient } from '../../src/shared/model-call.js';
import type { LoopEvent } from '../../src/shared/loop-events.js';
import { cleanupOf, type Cleanup } from '../helpers/cleanup.js';
import { toolContextFor } from '../helpers/gates.js';
import { startTestSim } from '../helpers/sim.js';

// The idle watchdog is far longer than the deadline: only the deadline can end the drip.
const TIMINGS = { requestTimeoutMs: 1_000, streamIdleTimeoutMs: 30_000 };

async function dripThenAnswer(cleanup: Cleanup, stream: boolean, maxRetries: number, timings: typeof TIMINGS = TIMINGS, dripIntervalMs = 10) {
  const t = await startTestSim(
    cleanup,
    { script: [{ content: 'after the drip' }], faults: { 1: { kind: 'slow_drip', dripIntervalMs } } },
    { stream, maxRetries, ...timings },
  );
  const events: LoopEvent[] = [];
  const result = await runToolLoop({
    client: t.client,
    config: t.config,
    messages: [{ role: 'user', content: 'hi' }],
    tools: [],
    toolContext: toolContextFor(t.config),
    onEvent: (e) => events.push(e),
  });
  return { ...t, result, retries: events.filter((e): e is Extract<LoopEvent, { type: 'retry' }> => e.type === 'retry') };
}

// Side by side (concurrent): each test has its own sim and cleanup list; a 1 s deadline against a 30 s
// watchdog is no race a busy neighbour can turn.
describe.concurrent.each([true, false])('a response that drips steadily past requestTimeoutMs (stream=%s)', (stream) => {
  it('is cut off at the deadline and retried; the retry answers', async (context) => {
    const cleanup = cleanupOf(context);
    const { result, sim, retries } = await dripThenAnswer(cleanup, stream, 1);
    expect(result.stopReason).toBe('final');
    expect(result.finalText).toBe('after the drip');
    expect(sim.requests.map((r) => r.fault)).toEqual(['slow_drip', undefined]);
    // The deadline, not the idle watchdog, ended it.
    expect(retries).toHaveLength(1);
    expect(retries[0]?.reason).toBe('request timed out after 1000 ms (headers to last byte)');
    // The stream was live (data kept coming) when it was cut: this is not a stall.
    if (stream) expect(sim.requests[0]?.chunks).toBeGreaterThanOrEqual(2);
  }, 20_000);

  it('with no retries left, ends with MODEL_REQUEST_FAILED caused by a TimeoutError carrying timeoutMs', async (context) => {
    const cleanup = cleanupOf(context);
    const { result, sim } = await dripThenAnswer(cleanup, stream, 0);
    expect(result.stopReason).toBe('error');
    expect(result.error).toMatchObject({
      code: 'MODEL_REQUEST_FAILED',
      message: 'model request failed after 1 attempt(s): request timed out after 1000 ms (headers to last byte)',
      cause: { name: 'TimeoutError', code: 'MODEL_REQUEST_FAILED', timeoutMs: 1_000 },
    });
    expect(sim.requests.map((r) => r.fault)).toEqual(['slow_drip']);
  }, 20_000);
});

// Alone: a 20 ms drip against a 300 ms watchdog must not stall beside busy neighbours.
describe('the idle watchdog is pushed back by every chunk', () => {
  it('a stream dripping every 20 ms for longer than streamIdleTimeoutMs (300 ms) is not a stall: only the deadline ends it', async (context) => {
    const cleanup = cleanupOf(context);
    const { result, sim, retries } = await dripThenAnswer(cleanup, true, 1, { requestTimeoutMs: 1_500, streamIdleTimeoutMs: 300 }, 20);
    expect(result.finalText).toBe('after the drip');
    // A watchdog armed once and never pushed back would say "stream sent nothing for 300 ms".
    expect(retries.map((e) => e.reason)).toEqual(['request timed out after 1500 ms (headers to last byte)']);
    expect(sim.requests[0]?.chunks).toBeGreaterThanOrEqual(2);
  }, 20_000);
});

// The SDK's timer (the client's `timeout`, up to the headers) and our first-byte clock cover the
// same span (`firstByteTimeoutMs`); on a busy thread either may fire first. Here the client's is
// the shorter, so the SDK's always wins: the reason is the same sentence (it was once a bare
// "request timed out", which CI saw on Node 26 when the SDK's timer happened to fire first).
describe.concurrent.each([true, false])('a server that never sends headers, the SDK timer first (stream=%s)', (stream) => {
  it('says the deadline the same way, with the span that ran out', async (context) => {
    const cleanup = cleanupOf(context);
    const t = await startTestSim(
      cleanup,
      { script: [{ content: 'after the hang' }], faults: { 1: { kind: 'hang_before_headers' } } },
      { stream, maxRetries: 1, firstByteTimeoutMs: 30_000 },
    );
    const events: LoopEvent[] = [];
    const result = await runToolLoop({
      client: createModelClient({ ...t.config, firstByteTimeoutMs: 300 }),
      config: t.config,
      messages: [{ role: 'user', content: 'hi' }],
      tools: [],
      toolContext: toolContextFor(t.config),
      onEvent: (e) => events.push(e),
    });
    expect(result.finalText).toBe('after the hang');
    const retries = events.filter((e): e is Extract<LoopEvent, { type: 'retry' }> => e.type === 'retry');
    expect(retries.map((e) => e.reason)).toEqual(['no response within 300 ms of sending (firstByteTimeoutMs)']);
  }, 20_000);
});
