/**
 * Model faults (issue 4, items 4–9), one test per fault: jobs whose model misbehaves, run
 * through the real Piscina pool and the real worker entry against the simulated model on
 * loopback (scripted faults per request number). Assertions are invariants — retried or not,
 * how the job ended, what the history holds, lower bounds on waits — never timing windows.
 * The loop-level versions of several faults are in test/tool-loop.test.ts.
 */
import { describe, expect, it } from 'vitest';
import type { ManagerEvents } from '../../src/main/jobs/manager.js';
import type { FaultKind } from '../../src/sim/index.js';
import {
  assertValidHistory,
  ended,
  makeConfig,
  makeManager,
  makeWorkspace,
  nextEvent,
  RESEARCH_TASK,
  retriesOf,
  runOneJob,
  startHoldingProxy,
  startSim,
  startStatusServer,
  toolMessagesOf,
  cleanupOf,
  waitFor,
} from '../helpers/index.js';

const ANSWER_TEXT = 'The retry backoff is implemented in src/retry.ts (exponential, capped at 8 s).';
const ANSWER = `${ANSWER_TEXT}\n<result status="ok" files_touched=""/>`;
const LONG_ANSWER_TEXT = 'A long answer about src/retry.ts. '.repeat(20).trim();

describe.concurrent('HTTP errors (item 4)', () => {
  it.for(['500', '502', '503'] as const)('HTTP %s is retried with exponential backoff and jitter, then the job ends ok', async (kind, context) => {
    const cleanups = cleanupOf(context);
    const { record, sim, events } = await runOneJob(cleanups, {
      sim: { script: [{ content: ANSWER }], faults: { 1: { kind }, 2: { kind } } },
      config: { maxRetries: 3 },
    });
    expect(record.status).toBe('ok');
    expect(record.resultText).toBe(ANSWER_TEXT);
    expect(sim.requests.map((r) => r.fault)).toEqual([kind, kind, undefined]);
    const retries = retriesOf(events);
    expect(retries.map((r) => r.attempt)).toEqual([1, 2]);
    for (const retry of retries) expect(retry.reason).toMatch(new RegExp(`^HTTP ${kind}: `));
    // Backoff 500 ms × 2^(attempt-1), times a jitter factor in [0.5, 1].
    expect(retries[0]?.delayMs).toBeGreaterThanOrEqual(250);
    expect(retries[0]?.delayMs).toBeLessThanOrEqual(500);
    expect(retries[1]?.delayMs).toBeGreaterThanOrEqual(500);
    expect(retries[1]?.delayMs).toBeLessThanOrEqual(1_000);
    // Each retry really waited its delay (a lower bound; 2 ms for clock rounding).
    retries.forEach((retry, i) => {
      const gap = (sim.requests[i + 1]?.receivedAt ?? 0) - (sim.requests[i]?.receivedAt ?? 0);
      expect(gap).toBeGreaterThanOrEqual(retry.delayMs - 2);
    });
    sim.assertScriptDone();
  });

  it('a permanent 503 fails the job after maxRetries, naming HTTP 503 and an excerpt of the body', async (context) => {
    const cleanups = cleanupOf(context);
    const { record, sim, events } = await runOneJob(cleanups, {
      sim: { script: [], faults: { 1: { kind: '503' }, 2: { kind: '503' } } },
      config: { maxRetries: 1 },
    });
    expect(record.status).toBe('failed');
    expect(record.stopReason).toBe('error');
    expect(record.error?.code).toBe('MODEL_REQUEST_FAILED');
    expect(record.error?.message).toContain('after 2 attempt(s): HTTP 503');
    // The excerpt of the last body the server sent.
    expect(record.error?.message).toContain('The server is overloaded (simulated fault at request 2).');
    expect(sim.requests).toHaveLength(2);
    expect(retriesOf(events)).toHaveLength(1);
  });

  // The sim never answers 400 or 401 to a well-formed request: a loopback stand-in does.
  it.for([400, 401])('HTTP %i is not retried: the job fails after one request', async (status, context) => {
    const cleanups = cleanupOf(context);
    const server = await startStatusServer(cleanups, status, () => `simulated ${status}`);
    const { record, events } = await runOneJob(cleanups, { config: { maxRetries: 3 }, baseUrl: () => server.url });
    expect(record.status).toBe('failed');
    expect(record.error?.message).toContain(`after 1 attempt(s): HTTP ${status}`);
    expect(record.error?.message).toContain(`simulated ${status}`);
    expect(server.hits).toBe(1);
    expect(retriesOf(events)).toEqual([]);
  });

  it('HTTP 404 (a base URL with a wrong path prefix) is not retried', async (context) => {
    const cleanups = cleanupOf(context);
    const { record, sim, events } = await runOneJob(cleanups, { config: { maxRetries: 3 }, baseUrl: (url) => `${url}/no-such-prefix` });
    expect(record.status).toBe('failed');
    expect(record.error?.message).toContain('after 1 attempt(s): HTTP 404');
    expect(record.error?.message).toContain('unknown route POST /v1/no-such-prefix/chat/completions');
    expect(retriesOf(events)).toEqual([]);
    // Not a chat route, so the sim records no chat request at all.
    expect(sim.requests).toHaveLength(0);
  });
});

describe.concurrent('429 with Retry-After (item 5)', () => {
  it('429 with Retry-After: the retried request arrives no sooner than Retry-After', async (context) => {
    const cleanups = cleanupOf(context);
    const { record, sim, events } = await runOneJob(cleanups, {
      sim: { script: [{ content: ANSWER }], faults: { 1: { kind: '429', retryAfterSeconds: 1 } } },
      config: { maxRetries: 2 },
    });
    expect(record.status).toBe('ok');
    expect(sim.requests.map((r) => r.fault)).toEqual(['429', undefined]);
    const [limited, retried] = sim.requests;
    expect((retried?.receivedAt ?? 0) - (limited?.receivedAt ?? 0)).toBeGreaterThanOrEqual(1_000);
    expect(retriesOf(events)[0]?.delayMs).toBeGreaterThanOrEqual(1_000);
  });

  it('429 with Retry-After slows the whole executor: a concurrent job sends nothing before the deadline', async (context) => {
    const cleanups = cleanupOf(context);
    const RETRY_AFTER_MS = 1_500;
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups, { latencyMs: 0, faults: { 2: { kind: '429', retryAfterSeconds: RETRY_AFTER_MS / 1000 } } });
    // B's first answer is held back (by events, not latency) until A has had its 429 and said so:
    // B is in flight while the gate closes, and asks again only after it has closed.
    const proxy = await startHoldingProxy(cleanups, sim.url, (body) => body.includes('(job B)'));
    const manager = makeManager(makeConfig(sim, root, { maxConcurrent: 2 }, { maxRetries: 2, baseUrl: proxy.url }), cleanups);
    const b = manager.spawn({ task: `${RESEARCH_TASK} (job B)`, label: 'B' });
    // A net against a hang (this file's tests run side by side: a thread may start slowly).
    await waitFor(() => sim.requests.length >= 1 && proxy.held() === 1, "job B's first request, answered and held", { timeoutMs: 50_000 });
    const a = manager.spawn({ task: `${RESEARCH_TASK} (job A)`, label: 'A' });
    // Subscribed in the same tick as the spawn: no progress event can have arrived yet.
    const aRetried = nextEvent<ManagerEvents, 'progress'>(manager, 'progress', ({ jobId, event }) => jobId === a.id && event.type === 'retry');
    await aRetried;
    proxy.release();
    const records = await Promise.all([ended(manager, a.id), ended(manager, b.id)]);
    for (const record of records) expect(['ok', 'partial']).toContain(record.status);

    // The sim's request log: B first, then A's 429, then everything after it not before the deadline.
    const jobOf = (r: { body: { messages: unknown[] } }) => (JSON.stringify(r.body.messages[1]).includes('(job A)') ? 'A' : 'B');
    const [first, limited] = sim.requests;
    if (!first || !limited) throw new Error('expected at least two requests');
    expect(jobOf(first)).toBe('B');
    expect(limited.fault).toBe('429');
    expect(jobOf(limited)).toBe('A');
    const deadline = limited.receivedAt + RETRY_AFTER_MS;
    const after = sim.requests.filter((r) => r.n > limited.n);
    expect(after.filter((r) => jobOf(r) === 'B').length).toBeGreaterThan(0);
    // A lower bound only: a loaded machine can make requests later, never earlier.
    for (const r of after) expect(r.receivedAt, `request ${r.n} (job ${jobOf(r)})`).toBeGreaterThanOrEqual(deadline);
  });
});

describe.concurrent('broken bodies (item 6)', () => {
  const NAMES: Record<string, string> = { bad_json: 'a body that is not JSON', truncated_stream: 'a truncated body / a stream cut off' };
  it.for([
    ['bad_json', true],
    ['bad_json', false],
    ['truncated_stream', true],
    ['truncated_stream', false],
  ] as const)('%s (stream=%s) is a retryable transport error: retried, the job ends ok', async ([kind, stream]: readonly [FaultKind, boolean], context) => {
    const cleanups = cleanupOf(context);
    const { record, sim, events } = await runOneJob(cleanups, {
      sim: { script: [{ content: `${LONG_ANSWER_TEXT}\n<result status="ok" files_touched=""/>` }], faults: { 1: { kind } } },
      config: { stream, maxRetries: 2 },
    });
    expect(record.status, NAMES[kind]).toBe('ok');
    expect(record.resultText).toBe(LONG_ANSWER_TEXT);
    expect(sim.requests.map((r) => r.fault)).toEqual([kind, undefined]);
    expect(retriesOf(events)).toHaveLength(1);
  });
});

describe.concurrent('bad tool calls (item 7)', () => {
  it('malformed tool arguments: a tool error goes back to the model, the history stays valid, the job ends ok', async (context) => {
    const cleanups = cleanupOf(context);
    const { record, sim } = await runOneJob(cleanups, { sim: { script: [{ content: ANSWER }], faults: { 1: { kind: 'malformed_tool_args' } } } });
    expect(record.status).toBe('ok');
    const next = sim.requests[1]?.body;
    assertValidHistory(next.messages);
    const [result] = toolMessagesOf(next);
    expect(result).toMatch(/^Error: arguments for \w+ are not valid JSON/);
  });

  it('an unknown tool: a tool error naming the available tools goes back to the model, the job ends ok', async (context) => {
    const cleanups = cleanupOf(context);
    const { record, sim } = await runOneJob(cleanups, { sim: { script: [{ content: ANSWER }], faults: { 1: { kind: 'unknown_tool' } } } });
    expect(record.status).toBe('ok');
    const next = sim.requests[1]?.body;
    assertValidHistory(next.messages);
    expect(toolMessagesOf(next)).toEqual([expect.stringMatching(/^Error: unknown tool "no_such_tool"\. Available tools: .*read_file/)]);
  });
});

describe.concurrent('hangs and stalls (item 8)', () => {
  // Each timeout must fire on the fault and must NOT fire on the healthy retry, which a loaded
  // machine can slow down a lot: generous limits (seconds, not hundreds of ms) keep the second half true.
  const REQUEST_TIMEOUT_MS = 4_000;
  const IDLE_TIMEOUT_MS = 3_000;

  it.for([true, false])('a hang before headers (stream=%s): the first-byte timeout fires and the retry succeeds', async (stream, context) => {
    const cleanups = cleanupOf(context);
    const { record, sim, events } = await runOneJob(cleanups, {
      sim: { script: [{ content: ANSWER }], faults: { 1: { kind: 'hang_before_headers' } } },
      config: { stream, firstByteTimeoutMs: REQUEST_TIMEOUT_MS, maxRetries: 1 },
    });
    expect(record.status, JSON.stringify({ error: record.error, faults: sim.requests.map((r) => r.fault), events })).toBe('ok');
    expect(sim.requests.map((r) => r.fault)).toEqual(['hang_before_headers', undefined]);
    expect(retriesOf(events).map((r) => r.reason)).toEqual([`no response within ${REQUEST_TIMEOUT_MS} ms of sending (firstByteTimeoutMs)`]);
    // No gap check between the sim's receipts: the timeout's clock starts in the worker before
    // the sim sees the request, so under load the gap can be shorter than the timeout. The
    // worker's own report (the retry reason above) says the timeout fired.
  });

  it('a stream that stalls after its headers (keep-alives only): the idle watchdog aborts it and the retry succeeds', async (context) => {
    const cleanups = cleanupOf(context);
    const { record, sim, events } = await runOneJob(cleanups, {
      sim: { script: [{ content: ANSWER }], faults: { 1: { kind: 'stall_mid_stream' } } },
      config: { stream: true, streamIdleTimeoutMs: IDLE_TIMEOUT_MS, requestTimeoutMs: 60_000, maxRetries: 1 },
    });
    expect(record.status).toBe('ok');
    expect(sim.requests.map((r) => r.fault)).toEqual(['stall_mid_stream', undefined]);
    expect(retriesOf(events).map((r) => r.reason)).toEqual([expect.stringContaining(`stream sent nothing for ${IDLE_TIMEOUT_MS} ms`)]);
  });

  it('a non-streamed body that stalls after its headers: the request timeout (headers to last byte) aborts it and the retry succeeds', async (context) => {
    const cleanups = cleanupOf(context);
    const { record, events } = await runOneJob(cleanups, {
      sim: { script: [{ content: ANSWER }], faults: { 1: { kind: 'stall_mid_stream' } } },
      config: { stream: false, requestTimeoutMs: REQUEST_TIMEOUT_MS, maxRetries: 1 },
    });
    expect(record.status).toBe('ok');
    expect(retriesOf(events).map((r) => r.reason)).toEqual([expect.stringContaining(`request timed out after ${REQUEST_TIMEOUT_MS} ms`)]);
  });

  it.for(['hang_before_headers', 'stall_mid_stream'] as const)(
    'the job deadline holds over a model that does %s on every try: timed_out',
    async (kind, context) => {
      const cleanups = cleanupOf(context);
      // Request and idle timeouts far beyond the job's 0.6 s: only the job deadline can end it.
      const { record } = await runOneJob(cleanups, {
        sim: { faultRate: 1, faultKinds: [kind] },
        config: { requestTimeoutMs: 60_000, streamIdleTimeoutMs: 60_000, maxRetries: 10 },
        background: { timeoutMinutes: 0.01, cancelGraceMs: 10_000 },
      });
      expect(record.status).toBe('timed_out');
      // The HTTP call in flight was aborted by the cooperative cancel: no hard stop was needed.
      expect(record.endedBy).toBe('cooperative');
      expect(record.stopReason).toBe('aborted');
    },
  );
});

describe.concurrent('endless tool calls (item 9)', () => {
  it('endless tool calls: the turn budget ends the job as partial with budget_exceeded, keeping what it found', async (context) => {
    const cleanups = cleanupOf(context);
    // maxIterations is the parent's: a lower one does not cut a job short of its maxTurns.
    const { record, sim } = await runOneJob(cleanups, {
      sim: { endlessToolCalls: true },
      config: { maxIterations: 2 },
      background: { budget: { maxTurns: 4 } },
    });
    expect(record.status).toBe('partial');
    expect(record.stopReason).toBe('budget_exceeded');
    expect(record.budgetExceeded).toBe('maxTurns');
    expect(record.endedBy).toBe('completed');
    expect(record.error?.code).toBe('BUDGET_EXCEEDED');
    expect(record.resultText).toContain('Tool calls made before stopping (4)');
    expect(record.resultText).toContain('list_dir(');
    expect(sim.requests).toHaveLength(4);
  });
});
