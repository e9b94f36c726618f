/**
 * OpenTelemetry spans with the real SDK (in-memory exporter), through the real pool: the parent's
 * turn on this thread, its jobs in Piscina worker threads, their spans made here from the events
 * their ports carry. The tree's shape, nesting, usage attributes, and no secret in any attribute.
 */
import { threadId } from 'node:worker_threads';
import { ROOT_CONTEXT, context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider, type ReadableSpan } from '@opentelemetry/sdk-trace';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { AgentSession } from '../../../src/main/session/agent-session.js';
import { Deliveries } from '../../../src/main/delivery/deliveries.js';
import { CAPTURE_CONTENT_ENV, LoopSpans } from '../../../src/shared/tracing.js';
import { totalUsage } from '../../../src/shared/usage.js';
import { ended, makeConfig, makeManager, makeWorkspace, startSim, tempWorkspace, useCleanup, watchManager } from '../../helpers/index.js';

const cleanups = useCleanup();
const exporter = new InMemorySpanExporter();
const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
const contextManager = new AsyncLocalStorageContextManager();

beforeAll(() => {
  trace.setGlobalTracerProvider(provider);
  context.setGlobalContextManager(contextManager.enable());
});
afterAll(async () => {
  await provider.shutdown();
  trace.disable();
  context.disable();
});
afterEach(() => {
  exporter.reset();
  delete process.env[CAPTURE_CONTENT_ENV];
});

const LEAF = 'Where is the retry backoff implemented? Answer from the files in the workspace.';

const spans = () => exporter.getFinishedSpans();
const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;
const idOf = (span: ReadableSpan) => span.spanContext().spanId;
const jobSpan = (jobId: string) => spans().find((s) => s.name.startsWith('invoke_agent') && s.attributes['forkpool.job.id'] === jobId);
const childrenOf = (span: ReadableSpan) => spans().filter((s) => parentOf(s) === idOf(span));

/** The job's span has its loop under it: chat spans with usage, and its tool calls. */
function expectLoopUnder(span: ReadableSpan, model: string): void {
  const kids = childrenOf(span);
  const chats = kids.filter((s) => s.attributes['gen_ai.operation.name'] === 'chat');
  expect(chats.length).toBeGreaterThan(0);
  for (const chat of chats) {
    expect(chat.name).toBe(`chat ${model}`);
    expect(chat.attributes['gen_ai.request.model']).toBe(model);
    expect(chat.attributes['gen_ai.usage.input_tokens']).toBeGreaterThan(0);
    expect(chat.attributes['gen_ai.usage.output_tokens']).toBeGreaterThan(0);
    expect(chat.attributes['gen_ai.response.finish_reasons']).toEqual([expect.stringMatching(/^(stop|tool_calls)$/)]);
  }
  const tools = kids.filter((s) => s.attributes['gen_ai.operation.name'] === 'execute_tool');
  expect(tools.length).toBeGreaterThan(0);
  for (const tool of tools) {
    expect(tool.name).toBe(`execute_tool ${String(tool.attributes['gen_ai.tool.name'])}`);
    expect(tool.attributes['gen_ai.tool.call.id']).toEqual(expect.any(String));
  }
  // Usage on the job's span is the sum of its chat spans'.
  const sum = (key: string) => chats.reduce((n, s) => n + Number(s.attributes[key]), 0);
  expect(span.attributes['gen_ai.usage.input_tokens']).toBe(sum('gen_ai.usage.input_tokens'));
  expect(span.attributes['gen_ai.usage.output_tokens']).toBe(sum('gen_ai.usage.output_tokens'));
}

describe('traces', () => {
  it("the parent's turn → its spawn calls → one invoke_agent per job (run in a worker thread) → its chat and execute_tool spans, one trace", async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups);
    const config = makeConfig(sim, root);
    const session = new AgentSession({ config, closeExecutor: true });
    watchManager(session.manager);
    cleanups.add(() => session.close({ timeoutMs: 2_000 }));
    await session.submit(['Please research these for me:', '1. Where is the retry backoff implemented?', '2. Where is the LruCache class defined?'].join('\n'));
    await session.manager.onIdle();
    const jobs = session.manager.jobs();
    expect(jobs.length).toBe(2);

    const [turn] = spans().filter((s) => s.attributes['forkpool.turn'] === 1);
    expect(turn).toBeDefined();
    expect(turn?.name).toBe('invoke_agent primary');
    expect(turn?.attributes['gen_ai.operation.name']).toBe('invoke_agent');
    const traceId = turn?.spanContext().traceId;
    const spawnCalls = childrenOf(turn as ReadableSpan).filter((s) => s.name === 'execute_tool spawn_background_agent');
    expect(spawnCalls).toHaveLength(2);
    for (const record of jobs) {
      const span = jobSpan(record.id);
      expect(span, `the span of job ${record.id}`).toBeDefined();
      const job = span as ReadableSpan;
      // A child of the call that spawned it, whose call id the job's record names.
      const call = spawnCalls.find((s) => idOf(s) === parentOf(job));
      expect(call?.attributes['gen_ai.tool.call.id']).toBe(record.parentToolId);
      expect(job.spanContext().traceId).toBe(traceId);
      expect(job.attributes).toMatchObject({
        'gen_ai.operation.name': 'invoke_agent',
        'forkpool.job.id': record.id,
        'forkpool.job.label': record.label,
        'forkpool.job.agent': 'fork',
        'forkpool.job.status': 'ok',
        'forkpool.job.delivery': 'parent_turn',
        'forkpool.job.wave': 1,
      });
      expect(job.attributes['gen_ai.usage.input_tokens']).toBe(totalUsage(record.usage).promptTokens);
      // It ran in a worker thread, not this one.
      const started = job.events.find((e) => e.name === 'started');
      expect(started?.attributes?.['thread.id']).toEqual(expect.any(Number));
      expect(started?.attributes?.['thread.id']).not.toBe(threadId);
      expectLoopUnder(job, config.model);
      for (const s of childrenOf(job)) expect(s.spanContext().traceId).toBe(traceId);
    }
    // Nothing is orphaned: every span but the turn has its parent among the spans.
    const ids = new Set(spans().map(idOf));
    for (const s of spans()) if (s !== turn) expect(ids.has(parentOf(s) ?? ''), `${s.name} has its parent`).toBe(true);
  });

  it('nested jobs nest: a child under its parent job’s spawn call, a grandchild under the child’s; the top under the host’s active span', async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups);
    const config = makeConfig(sim, root, { maxDepth: 3 });
    const manager = makeManager(config, cleanups);
    const host = trace.getTracer('host').startSpan('POST /research');
    const top = context.with(trace.setSpan(ROOT_CONTEXT, host), () => manager.spawn({ task: `Delegate: Delegate: ${LEAF}`, label: 'top', wave: 1 }));
    new Deliveries(manager).sealWave(1);
    await ended(manager, top.id);
    host.end();
    const jobs = manager.jobs();
    expect(jobs).toHaveLength(3);
    const byDepth = (depth: number) => jobs.find((j) => (j.depth ?? 1) === depth) as (typeof jobs)[number];
    const [a, b, c] = [1, 2, 3].map((depth) => jobSpan(byDepth(depth).id) as ReadableSpan) as [ReadableSpan, ReadableSpan, ReadableSpan];
    expect(parentOf(a)).toBe(host.spanContext().spanId);
    for (const [parent, child] of [
      [a, b],
      [b, c],
    ] as const) {
      const call = spans().find((s) => idOf(s) === parentOf(child));
      expect(call?.name).toBe('execute_tool spawn_background_agent');
      expect(parentOf(call as ReadableSpan)).toBe(idOf(parent));
      expect(child.attributes['forkpool.job.delivery']).toBe('parent_job');
    }
    expect(c.attributes['forkpool.job.depth']).toBe(3);
    for (const s of [a, b, c]) expect(s.spanContext().traceId).toBe(host.spanContext().traceId);
    expectLoopUnder(c, config.model);
  });

  it('message contents only when opted in, and then with no secret: a key in the task and in a file a job reads is in no attribute', async () => {
    const secret = 'sk-planted-0123456789abcdefSECRET';
    const root = tempWorkspace({ 'notes/key.txt': `the deploy key is ${secret}\n`, 'src/a.ts': 'export const a = 1;\n' }, cleanups);
    const sim = await startSim(cleanups);
    const config = makeConfig(sim, root, {}, { apiKey: secret });
    const task = `Summarise notes/key.txt (it holds ${secret}). [sim-read: notes/key.txt]`;
    const run = async () => {
      const manager = makeManager(config, cleanups);
      const job = manager.spawn({ task, label: 'key' });
      return ended(manager, job.id);
    };
    // Off by default: no content attribute at all.
    await run();
    const contentKeys = ['gen_ai.input.messages', 'gen_ai.output.messages', 'gen_ai.tool.call.arguments', 'gen_ai.tool.call.result'];
    expect(
      spans()
        .flatMap((s) => Object.keys(s.attributes))
        .filter((k) => contentKeys.includes(k)),
    ).toEqual([]);
    exporter.reset();

    process.env[CAPTURE_CONTENT_ENV] = 'true';
    const record = await run();
    expect(record.status).toBe('ok');
    const captured = spans().flatMap((s) => Object.entries(s.attributes).filter(([k]) => contentKeys.includes(k)));
    // Captured (the task, the read's arguments and result, the answer), each redacted.
    expect(captured.map(([k]) => k)).toEqual(expect.arrayContaining(contentKeys));
    expect(JSON.stringify(captured)).toContain('notes/key.txt');
    for (const s of spans()) {
      for (const [key, value] of Object.entries(s.attributes)) expect(String(value), `${s.name} ${key}`).not.toContain(secret);
      for (const e of s.events) expect(JSON.stringify(e.attributes ?? {})).not.toContain(secret);
    }
  });

  it("a worker's malformed events (checked for their type only) never throw on the main thread and make no broken span", () => {
    const loop = new LoopSpans(ROOT_CONTEXT, { model: 'm', capture: true, redact: (t) => t });
    const odd = (event: Record<string, unknown>) => loop.event(event as never);
    expect(() => {
      odd({ type: 'model_request', iteration: 'x' });
      odd({ type: 'model_response', iteration: 1, model: 7 });
      odd({ type: 'assistant_text', text: { not: 'text' } });
      odd({ type: 'tool_call', callId: 'c1', name: null, args: 42 });
      odd({ type: 'tool_result', callId: 'c1', output: 42, ms: 'slow' });
      odd({ type: 'retry' });
      loop.close();
    }).not.toThrow();
    const chat = spans().find((s) => s.name === 'chat m');
    expect(chat?.attributes['gen_ai.usage.input_tokens']).toBeUndefined();
  });
});
