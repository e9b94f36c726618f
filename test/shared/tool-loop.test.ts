/**
 * runToolLoop against the simulated model, through the real `openai` client: scripted replies,
 * tool errors the model can read, stops (budget, loop, abort, model failure) and retries.
 */
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createModelClient, type RateGate } from '../../src/shared/model-call.js';
import { runToolLoop, type ToolLoopOptions, type ToolLoopResult } from '../../src/shared/tool-loop.js';
import type { LoopEvent } from '../../src/shared/loop-events.js';
import { builtinTools } from '../../src/shared/tools/index.js';
import type { PermissionGate, ToolDefinition } from '../../src/shared/tools/types.js';
import type { ForkpoolConfigInput } from '../../src/shared/config.js';
import type { ScriptStep, SimServerOptions } from '../../src/sim/index.js';
import { useCleanup, waitFor } from '../helpers/cleanup.js';
import { tempWorkspace, testConfig } from '../helpers/config.js';
import { recordingGate, toolContextFor } from '../helpers/gates.js';
import { assertValidHistory, toolResults } from '../helpers/history.js';
import { startTestSim, type TestSim } from '../helpers/sim.js';

const cleanup = useCleanup();
const FILES = { 'a.txt': 'alpha line\n', 'notes/b.md': '# beta\n' };
const TOOLS = builtinTools(['read_file', 'list_dir', 'grep', 'bash']);

interface Run extends TestSim {
  result: ToolLoopResult;
  events: LoopEvent[];
}

/** Starts a sim with `sim` options, runs the loop on one user message, returns everything. */
async function runLoop(
  sim: SimServerOptions,
  config: Partial<ForkpoolConfigInput> = {},
  extra: { gate?: PermissionGate; signal?: AbortSignal; rateGate?: RateGate; onStart?: (t: TestSim) => void } = {},
): Promise<Run> {
  const t = await startTestSim(cleanup, sim, { workspaceRoot: tempWorkspace(FILES, cleanup), ...config });
  extra.onStart?.(t);
  const events: LoopEvent[] = [];
  const options: ToolLoopOptions = {
    client: t.client,
    config: t.config,
    messages: [
      { role: 'system', content: 'You are a test agent.' },
      { role: 'user', content: 'Look at the workspace.' },
    ],
    tools: TOOLS,
    toolContext: toolContextFor(t.config, extra.gate),
    signal: extra.signal,
    rateGate: extra.rateGate,
    onEvent: (e) => events.push(e),
  };
  const result = await runToolLoop(options);
  return { ...t, result, events };
}

const call = (name: string, args: string | Record<string, unknown>, id?: string) => ({ name, arguments: args, ...(id ? { id } : {}) });
const toolMessages = (messages: readonly ChatCompletionMessageParam[]) => [...toolResults(messages).values()];

describe.each([true, false])('runToolLoop with stream=%s', (stream) => {
  it('returns the final answer of a one-step script', async () => {
    const { result, sim } = await runLoop({ script: [{ content: 'The answer is 42.' }] }, { stream });
    expect(result.stopReason).toBe('final');
    expect(result.finalText).toBe('The answer is 42.');
    expect(result.iterations).toBe(1);
    expect(result.error).toBeUndefined();
    expect(result.messages.at(-1)).toEqual({ role: 'assistant', content: 'The answer is 42.' });
    expect(sim.requests[0]?.body.stream ?? false).toBe(stream);
    expect(sim.requests[0]?.body.tools.map((t: { function: { name: string } }) => t.function.name)).toEqual(['read_file', 'list_dir', 'grep', 'bash']);
    sim.assertScriptDone();
  });

  it('runs parallel tool calls of one message and answers every call id in order', async () => {
    const script: ScriptStep[] = [
      { content: 'Checking two things.', toolCalls: [call('read_file', { path: 'a.txt' }, 'c_read'), call('list_dir', { path: 'notes' }, 'c_list')] },
      { toolCalls: [call('grep', { pattern: 'alpha' }, 'c_grep'), call('read_file', { path: 'notes/b.md' }, 'c_read2')] },
      { content: 'Done.' },
    ];
    const { result, sim, events } = await runLoop({ script }, { stream });
    expect(result.stopReason).toBe('final');
    expect(result.finalText).toBe('Done.');
    expect(result.iterations).toBe(3);
    assertValidHistory(result.messages);
    const results = toolResults(result.messages);
    expect([...results.keys()]).toEqual(['c_read', 'c_list', 'c_grep', 'c_read2']);
    expect(results.get('c_read')).toContain('alpha line');
    expect(results.get('c_list')).toContain('b.md');
    expect(results.get('c_grep')).toContain('a.txt');
    expect(results.get('c_read2')).toContain('# beta');
    // The model saw both results of the first batch before its second message.
    const second = sim.requests[1]?.body.messages as ChatCompletionMessageParam[];
    assertValidHistory(second);
    expect(second.filter((m) => m.role === 'tool').map((m) => (m as { tool_call_id: string }).tool_call_id)).toEqual(['c_read', 'c_list']);
    expect(events.filter((e) => e.type === 'tool_result').every((e) => e.type === 'tool_result' && e.ok)).toBe(true);
    sim.assertScriptDone();
  });

  it('answers bad JSON arguments with an "Error" tool result and continues', async () => {
    const script = [{ toolCalls: [call('read_file', '{"path": "a.t', 'c_bad')] }, { content: 'Recovered.' }];
    const { result, sim, events } = await runLoop({ script }, { stream });
    expect(result.stopReason).toBe('final');
    expect(result.finalText).toBe('Recovered.');
    const text = toolResults(result.messages).get('c_bad') ?? '';
    expect(text.startsWith('Error')).toBe(true);
    expect(text).toContain('not valid JSON');
    expect(events).toContainEqual(expect.objectContaining({ type: 'tool_result', callId: 'c_bad', ok: false }));
    assertValidHistory(result.messages);
    sim.assertScriptDone();
  });
});

describe('runToolLoop tool errors', () => {
  it('answers an unknown tool with an error naming the available tools, and continues', async () => {
    const { result, sim } = await runLoop({ script: [{ toolCalls: [call('no_such_tool', { q: 1 })] }, { content: 'ok' }] });
    expect(result.stopReason).toBe('final');
    const [text] = toolMessages(result.messages);
    expect(text).toMatch(/^Error: unknown tool "no_such_tool"/);
    expect(text).toContain('read_file');
    sim.assertScriptDone();
  });

  it('answers arguments that fail the tool schema with an error, and continues', async () => {
    const script = [{ toolCalls: [call('read_file', { path: 42 }), call('list_dir', { path: '.', bogus: true })] }, { content: 'ok' }];
    const { result, sim } = await runLoop({ script });
    expect(result.stopReason).toBe('final');
    const texts = toolMessages(result.messages);
    expect(texts).toHaveLength(2);
    expect(texts[0]).toMatch(/^Error: invalid arguments for read_file/);
    expect(texts[1]).toMatch(/^Error: invalid arguments for list_dir/);
    sim.assertScriptDone();
  });

  it('denies a gated tool the gate refuses, without running it, and continues', async () => {
    const gate = recordingGate(false);
    const ws = tempWorkspace(FILES, cleanup);
    const script = [{ toolCalls: [call('bash', { command: 'touch created-by-bash' })] }, { content: 'Did without it.' }];
    const { result, sim } = await runLoop({ script }, { workspaceRoot: ws }, { gate });
    expect(result.stopReason).toBe('final');
    expect(result.finalText).toBe('Did without it.');
    expect(toolMessages(result.messages)[0]).toMatch(/^Error: permission denied: "bash"/);
    expect(gate.requests).toMatchObject([{ tool: 'bash', summary: 'bash: touch created-by-bash' }]);
    const { existsSync } = await import('node:fs');
    expect(existsSync(`${ws}/created-by-bash`)).toBe(false);
    sim.assertScriptDone();
  });

  it('runs a gated tool the gate allows', async () => {
    const gate = recordingGate(true);
    const { result } = await runLoop({ script: [{ toolCalls: [call('bash', { command: 'echo hi-from-bash' })] }, { content: 'ok' }] }, {}, { gate });
    expect(toolMessages(result.messages)[0]).toContain('hi-from-bash');
    expect(gate.requests).toHaveLength(1);
  });
});

describe('runToolLoop stops', () => {
  it('ends with budget_exceeded at the iteration cap and keeps what it found', async () => {
    const { result, sim, events } = await runLoop({ endlessToolCalls: true }, { maxIterations: 3 });
    expect(result.stopReason).toBe('budget_exceeded');
    expect(result.iterations).toBe(3);
    expect(sim.requests).toHaveLength(3);
    expect(events.filter((e) => e.type === 'model_request')).toHaveLength(3);
    expect(result.finalText).toContain('Tool calls made before stopping (3)');
    expect(result.finalText).toContain('list_dir(');
    expect(result.error?.message).toContain('iteration cap of 3');
    assertValidHistory(result.messages);
  });

  it('warns on a repeated identical call, then stops with loop_detected', async () => {
    const same = { toolCalls: [call('read_file', { path: 'a.txt' })] };
    const { result, sim, events } = await runLoop({ script: [same, same, same] }, { loopWarnAfter: 2, loopStopAfter: 3 });
    expect(result.stopReason).toBe('loop_detected');
    expect(result.iterations).toBe(3);
    const texts = toolMessages(result.messages);
    expect(texts).toHaveLength(3);
    expect(texts[0]).not.toContain('[forkpool]');
    expect(texts[1]).toContain('with these same arguments 2 times in a row');
    expect(events.filter((e) => e.type === 'loop_warning')).toEqual([{ type: 'loop_warning', name: 'read_file', repeats: 2 }]);
    // The warning reached the model with the second result.
    expect(JSON.stringify(sim.requests[2]?.body.messages)).toContain('same arguments 2 times');
    expect(result.finalText).toContain('read_file(');
    assertValidHistory(result.messages);
    sim.assertScriptDone();
  });

  it.each([true, false])(
    'aborts a request that hangs before headers (stream=%s)',
    async (stream) => {
      const controller = new AbortController();
      const pending = runLoop(
        { script: [], faults: { 1: { kind: 'hang_before_headers' } } },
        { stream, firstByteTimeoutMs: 60_000 },
        {
          signal: controller.signal,
          onStart: ({ sim }) => {
            const abort = () => controller.abort(new Error('user pressed stop'));
            waitFor(() => sim.requests.length >= 1, 'the request to reach the sim').then(abort, abort);
          },
        },
      );
      const { result } = await pending;
      expect(result.stopReason).toBe('aborted');
      expect(result.error?.code).toBe('ABORTED');
      expect(result.iterations).toBe(1);
    },
    15_000,
  );

  it('a turn past turnTimeoutMs aborts the tools it called (each still answered) and ends with TURN_TIMEOUT; the next model call is never made', async () => {
    const t = await startTestSim(
      cleanup,
      {
        script: [{ content: 'Waiting on both.', toolCalls: [call('wait_for_abort', {}, 'w1'), call('wait_for_abort', {}, 'w2')] }, { content: 'never asked' }],
      },
      { workspaceRoot: tempWorkspace(FILES, cleanup), turnTimeoutMs: 2_000, toolLimits: { toolTimeoutMs: 600_000 } },
    );
    const reasons: unknown[] = [];
    // A tool that never ends by itself: only its signal stops it.
    const waitForAbort: ToolDefinition = {
      name: 'wait_for_abort',
      description: 'Waits until it is aborted.',
      parameters: z.object({}),
      gated: false,
      run: (_args, ctx) =>
        new Promise((_, reject) =>
          ctx.signal.addEventListener(
            'abort',
            () => {
              reasons.push(ctx.signal.reason);
              reject(new Error('stopped'));
            },
            { once: true },
          ),
        ),
    };
    const result = await runToolLoop({
      client: t.client,
      config: t.config,
      messages: [{ role: 'user', content: 'Wait.' }],
      tools: [waitForAbort],
      toolContext: toolContextFor(t.config),
    });
    expect(result.stopReason).toBe('error');
    expect(result.error).toMatchObject({ code: 'TURN_TIMEOUT', timeoutMs: 2_000 });
    expect(reasons).toEqual([expect.objectContaining({ code: 'TURN_TIMEOUT' }), expect.objectContaining({ code: 'TURN_TIMEOUT' })]);
    expect(t.sim.requests).toHaveLength(1);
    expect(result.finalText).toContain('Waiting on both.');
    assertValidHistory(result.messages);
  });

  it('turnTimeoutMs 0 sets no deadline: a turn longer than any short timeout still ends final', async () => {
    const { result } = await runLoop({ script: [{ content: 'Done.' }], latencyMs: 400 }, { turnTimeoutMs: 0 });
    expect(result).toMatchObject({ stopReason: 'final', finalText: 'Done.' });
  });

  it('returns aborted at once for a signal aborted before the start, without a request', async () => {
    const controller = new AbortController();
    controller.abort();
    const { result, sim } = await runLoop({ script: [] }, {}, { signal: controller.signal });
    expect(result.stopReason).toBe('aborted');
    expect(result.iterations).toBe(0);
    expect(sim.requests).toHaveLength(0);
  });
});

describe.each([true, false])('runToolLoop usage and retries with stream=%s', (stream) => {
  it('sums usage per model, keyed by the model the server names', async () => {
    const script = [
      { toolCalls: [call('list_dir', {})], usage: { prompt_tokens: 10, completion_tokens: 5 } },
      { content: 'done', usage: { prompt_tokens: 7, completion_tokens: 3 } },
    ];
    const { result } = await runLoop({ script }, { stream, model: 'model-under-test' });
    expect(result.usage).toEqual({ 'model-under-test': { promptTokens: 17, completionTokens: 8, totalTokens: 25, requests: 2 } });
  });

  it('retries a 500 once and then answers', async () => {
    const { result, sim, events } = await runLoop({ script: [{ content: 'after the 500' }], faults: { 1: { kind: '500' } } }, { stream, maxRetries: 2 });
    expect(result.stopReason).toBe('final');
    expect(result.finalText).toBe('after the 500');
    const retries = events.filter((e) => e.type === 'retry');
    expect(retries).toHaveLength(1);
    expect(retries[0]).toMatchObject({ attempt: 1, reason: expect.stringContaining('HTTP 500') });
    expect(sim.requests.map((r) => r.fault)).toEqual(['500', undefined]);
    sim.assertScriptDone();
  });

  it('honours Retry-After of a 429 and pauses the shared rate gate', async () => {
    const paused: number[] = [];
    const rateGate: RateGate = { wait: async () => {}, pauseFor: (ms) => void paused.push(ms) };
    const script: ScriptStep[] = [{ fault: { kind: '429', retryAfterSeconds: 0.05 } }, { content: 'after the 429' }];
    const { result, events } = await runLoop({ script }, { stream }, { rateGate });
    expect(result.stopReason).toBe('final');
    const retries = events.filter((e): e is Extract<LoopEvent, { type: 'retry' }> => e.type === 'retry');
    expect(retries).toHaveLength(1);
    expect(retries[0]?.reason).toContain('HTTP 429');
    expect(retries[0]?.delayMs).toBeGreaterThanOrEqual(50);
    expect(paused).toEqual([50]);
  });

  it('ends with error MODEL_REQUEST_FAILED naming HTTP 500 when every attempt fails', async () => {
    const faults = { 1: { kind: '500' as const }, 2: { kind: '500' as const } };
    const { result, sim, events } = await runLoop({ script: [], faults }, { stream, maxRetries: 1 });
    expect(result.stopReason).toBe('error');
    expect(result.error?.code).toBe('MODEL_REQUEST_FAILED');
    expect(result.error?.message).toContain('HTTP 500');
    expect(result.error?.message).toContain('after 2 attempt(s)');
    expect(sim.requests).toHaveLength(2);
    expect(events.filter((e) => e.type === 'retry')).toHaveLength(1);
  });

  it('does not retry a 4xx other than 408/409/429 (a 404 from a wrong base URL)', async () => {
    const { sim } = await startTestSim(cleanup, { script: [] });
    const config = testConfig({ stream, maxRetries: 3, baseUrl: `${sim.url}/no-such-prefix`, workspaceRoot: tempWorkspace({}, cleanup) });
    const events: LoopEvent[] = [];
    const client = createModelClient(config);
    const result = await runToolLoop({
      client,
      config,
      messages: [{ role: 'user', content: 'hi' }],
      tools: [],
      toolContext: toolContextFor(config),
      onEvent: (e) => events.push(e),
    });
    expect(result.stopReason).toBe('error');
    expect(result.error?.message).toContain('after 1 attempt(s): HTTP 404');
    expect(events.filter((e) => e.type === 'retry')).toHaveLength(0);
  });

  it('retries a truncated response', async () => {
    const script: ScriptStep[] = [{ content: 'A long answer '.repeat(20) }];
    const { result, sim, events } = await runLoop({ script, faults: { 1: { kind: 'truncated_stream' } } }, { stream });
    expect(result.stopReason).toBe('final');
    expect(result.finalText).toBe('A long answer '.repeat(20));
    expect(events.filter((e) => e.type === 'retry')).toHaveLength(1);
    expect(sim.requests).toHaveLength(2);
  });

  it('retries a malformed (non-JSON) body', async () => {
    const { result, events } = await runLoop({ script: [{ content: 'fine' }], faults: { 1: { kind: 'bad_json' } } }, { stream });
    expect(result.stopReason).toBe('final');
    expect(events.filter((e) => e.type === 'retry')).toHaveLength(1);
  });

  it('never hangs on a response that stalls mid-body: retried, then answered', async () => {
    const script: ScriptStep[] = [{ content: 'after the stall' }];
    const { result, sim, events } = await runLoop(
      { script, faults: { 1: { kind: 'stall_mid_stream' } } },
      { stream, streamIdleTimeoutMs: 300, requestTimeoutMs: 1_000 },
    );
    expect(result.stopReason).toBe('final');
    expect(result.finalText).toBe('after the stall');
    const retries = events.filter((e): e is Extract<LoopEvent, { type: 'retry' }> => e.type === 'retry');
    expect(retries).toHaveLength(1);
    expect(retries[0]?.reason).toContain(stream ? 'stream sent nothing for 300 ms' : 'request timed out after 1000 ms');
    expect(sim.requests).toHaveLength(2);
  }, 20_000);
});
