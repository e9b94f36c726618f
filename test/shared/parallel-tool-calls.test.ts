/**
 * `toolLimits.maxParallelToolCalls`: one assistant message with many tool calls runs them at
 * most N at once; every call still runs, and the results stay in the model's order. Concurrency
 * is observed by the tool itself (how many of its runs are in progress when one starts).
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { mapWithLimit, runToolLoop } from '../../src/shared/tool-loop.js';
import type { ToolDefinition } from '../../src/shared/tools/types.js';
import type { ScriptStep } from '../../src/sim/index.js';
import { useCleanup } from '../helpers/cleanup.js';
import { toolContextFor } from '../helpers/gates.js';
import { assertValidHistory, toolResults } from '../helpers/history.js';
import { startTestSim } from '../helpers/sim.js';

const cleanup = useCleanup();
const CALLS = 20;

/** A tool that records, from its own runs, how many overlap; each run waits on a timer so overlap is real. */
function probeTool() {
  const seen = { active: 0, peak: 0, started: [] as number[], finished: [] as number[] };
  const tool: ToolDefinition<{ i: number }> = {
    name: 'probe',
    description: 'records concurrency',
    parameters: z.strictObject({ i: z.number().int() }),
    gated: false,
    async run({ i }) {
      seen.active++;
      seen.peak = Math.max(seen.peak, seen.active);
      seen.started.push(i);
      await new Promise((resolve) => setTimeout(resolve, 5 + ((i * 7) % 5)));
      seen.active--;
      seen.finished.push(i);
      return `result ${i}`;
    },
  };
  return { tool, seen };
}

async function runBatch(maxParallelToolCalls?: number) {
  const script: ScriptStep[] = [
    { toolCalls: Array.from({ length: CALLS }, (_, i) => ({ name: 'probe', arguments: { i }, id: `call_${i}` })) },
    { content: 'all done' },
  ];
  const t = await startTestSim(cleanup, { script }, maxParallelToolCalls === undefined ? {} : { toolLimits: { maxParallelToolCalls } });
  const { tool, seen } = probeTool();
  const result = await runToolLoop({
    client: t.client,
    config: t.config,
    messages: [{ role: 'user', content: 'probe everything' }],
    tools: [tool],
    toolContext: toolContextFor(t.config),
  });
  t.sim.assertScriptDone();
  return { result, seen };
}

describe('maxParallelToolCalls', () => {
  it.each([1, 4, 7])('runs 20 calls of one message at most %i at once, all of them, results in call order', async (cap) => {
    const { result, seen } = await runBatch(cap);
    expect(result.stopReason).toBe('final');
    expect(seen.peak).toBe(cap);
    // Every call ran once; they start in the model's order.
    expect(seen.started).toEqual(Array.from({ length: CALLS }, (_, i) => i));
    expect([...seen.finished].sort((a, b) => a - b)).toEqual(seen.started);
    assertValidHistory(result.messages);
    const tools = result.messages.filter((m) => m.role === 'tool');
    expect(tools.map((m) => m.tool_call_id)).toEqual(Array.from({ length: CALLS }, (_, i) => `call_${i}`));
    expect([...toolResults(result.messages).values()]).toEqual(Array.from({ length: CALLS }, (_, i) => `result ${i}`));
  });

  it('defaults to 8', async () => {
    const { seen } = await runBatch();
    expect(seen.peak).toBe(8);
  });

  it('mapWithLimit keeps each result in its slot whatever order they finish in', async () => {
    const finishOrder: number[] = [];
    const out = await mapWithLimit([30, 10, 20, 0], 2, async (ms, i) => {
      await new Promise((resolve) => setTimeout(resolve, ms));
      finishOrder.push(i);
      return i * 10;
    });
    expect(out).toEqual([0, 10, 20, 30]);
    expect(finishOrder).toHaveLength(4);
    expect(await mapWithLimit([], 3, async () => 1)).toEqual([]);
  });
});

describe('maxParallelToolCalls and abort', () => {
  it('a call still waiting for a slot when the run is aborted never starts; every call still gets a result', async () => {
    const script: ScriptStep[] = [{ toolCalls: Array.from({ length: 6 }, (_, i) => ({ name: 'probe', arguments: { i }, id: `call_${i}` })) }];
    const t = await startTestSim(cleanup, { script }, { toolLimits: { maxParallelToolCalls: 2 } });
    const { tool, seen } = probeTool();
    const controller = new AbortController();
    const result = await runToolLoop({
      client: t.client,
      config: t.config,
      messages: [{ role: 'user', content: 'probe' }],
      tools: [tool],
      toolContext: toolContextFor(t.config),
      signal: controller.signal,
      // Abort as soon as the first two (the first slots) have started.
      onEvent: (e) => {
        if (e.type === 'tool_call' && e.callId === 'call_1') controller.abort();
      },
    });
    expect(result.stopReason).toBe('aborted');
    expect(seen.started).toEqual([0]);
    assertValidHistory(result.messages);
    expect(result.messages.filter((m) => m.role === 'tool')).toHaveLength(6);
  });
});
