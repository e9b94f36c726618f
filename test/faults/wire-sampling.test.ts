/**
 * What each wire sends besides the history (issue 36 §3): `temperature` only where the model
 * takes it (OpenAI's reasoning models refuse it, and `max_tokens` on Chat Completions), and
 * Anthropic extended thinking, whose blocks go back unchanged with the next request of the tool
 * loop. Real jobs through the real pool against the simulator, which records every body and
 * refuses what the real APIs refuse (src/sim/wire-checks.ts).
 */
import { describe, expect, it } from 'vitest';
import type { RecordedRequest } from '../../src/sim/index.js';
import { DEFAULTS } from '../../src/shared/defaults.js';
import { ended, makeConfig, makeManager, makeWorkspace, RESEARCH_TASK, runOneJob, startSim, useCleanup } from '../helpers/index.js';

const cleanups = useCleanup();

type AnthropicBody = {
  temperature?: number;
  thinking?: unknown;
  max_tokens?: number;
  messages: Array<{ role: string; content: Array<{ type: string; thinking?: string; signature?: string; data?: string }> }>;
};
const bodyOf = (r: RecordedRequest | undefined) => r?.body as Record<string, unknown> & AnthropicBody;

describe('temperature and max tokens per model', () => {
  it.each([
    ['chat', 'o4-mini'],
    ['chat', 'gpt-5-mini'],
    ['responses', 'o3'],
    ['responses', 'gpt-5.1'],
  ] as const)('on the %s wire, %s (a reasoning model) gets no temperature, and the job ends ok', async (api, model) => {
    const { record, sim } = await runOneJob(cleanups, { config: { api, model } });
    expect(record.error?.message).toBeUndefined();
    expect(record.status).toBe('ok');
    expect(sim.requests.length).toBeGreaterThanOrEqual(3);
    for (const request of sim.requests) {
      expect(bodyOf(request)).not.toHaveProperty('temperature');
      // Chat Completions: the length bound under the name these models take.
      if (api === 'chat') expect([bodyOf(request).max_tokens, bodyOf(request).max_completion_tokens]).toEqual([undefined, DEFAULTS.maxTokens]);
    }
  });

  it.each(['chat', 'responses'] as const)('on the %s wire, another model gets the default 0, and a configured temperature is sent as set', async (api) => {
    const unset = await runOneJob(cleanups, { config: { api, model: 'gpt-4.1-mini' } });
    expect(unset.record.status).toBe('ok');
    expect(unset.sim.requests.map((r) => bodyOf(r).temperature)).toEqual(unset.sim.requests.map(() => 0));
    const set = await runOneJob(cleanups, { config: { api, model: 'gpt-4.1-mini', temperature: 0.7 } });
    expect(set.sim.requests.map((r) => bodyOf(r).temperature)).toEqual(set.sim.requests.map(() => 0.7));
  });

  it('a temperature the user set for a reasoning model is still sent, and the refusal names it', async () => {
    const { record } = await runOneJob(cleanups, { config: { api: 'responses', model: 'o3', temperature: 0.2 } });
    expect(record.status).toBe('failed');
    expect(record.error?.message).toMatch(/HTTP 400.*'temperature'/);
  });
});

describe('Anthropic extended thinking', () => {
  it.each([true, false])(
    "stream %s: sent as thinking {type, budget_tokens} without temperature; each answer's thinking blocks go back unchanged before its tool calls, never in the answer",
    async (stream) => {
      const { record, sim, events } = await runOneJob(cleanups, { config: { api: 'anthropic', stream, thinking: { budgetTokens: 2048 } } });
      expect(record.error?.message).toBeUndefined();
      expect(record.status).toBe('ok');
      expect(sim.requests.length).toBeGreaterThanOrEqual(3);
      for (const request of sim.requests) {
        expect(bodyOf(request).thinking).toEqual({ type: 'enabled', budget_tokens: 2048 });
        expect(bodyOf(request)).not.toHaveProperty('temperature');
      }
      // Request n+1 carries answer n's blocks, first in that assistant turn, as the sim signed them.
      const assistantTurns = bodyOf(sim.requests.at(-1)).messages.filter((m) => m.role === 'assistant');
      expect(assistantTurns.length).toBe(sim.requests.length - 1);
      assistantTurns.forEach((turn, i) => {
        expect(turn.content.slice(0, 2).map((b) => b.type)).toEqual(['thinking', 'redacted_thinking']);
        expect(turn.content[0]?.thinking).toBe(`(sim thinking for msg_sim_${i + 1}: which tool next, and why)`);
        expect(turn.content[0]?.signature).toMatch(/^sim-sig-[0-9a-f]{32}$/);
        expect(turn.content[1]?.data).toBe(`sim-redacted-msg_sim_${i + 1}`);
        expect(turn.content.some((b) => b.type === 'tool_use')).toBe(true);
      });
      // Never shown as the answer: not in the result, nor in any event the job emitted.
      expect(record.resultText).not.toContain('sim thinking');
      expect(JSON.stringify(events)).not.toMatch(/sim thinking|sim-redacted|sim-sig-/);
    },
  );

  it("an agent's own thinking applies to its jobs only; a budget not below maxTokens is a config error naming the field", async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups);
    const agents = { thinker: { description: 'thinks', thinking: { budgetTokens: 1024 } } };
    const manager = makeManager(makeConfig(sim, root, { maxConcurrent: 1 }, { api: 'anthropic', agents }), cleanups);
    const plain = await ended(manager, manager.spawn({ task: RESEARCH_TASK, label: 'plain' }).id);
    const plainRequests = sim.requests.length;
    const thinker = await ended(manager, manager.spawn({ task: RESEARCH_TASK, label: 'thinker', agent: 'thinker' }).id);
    expect([plain.status, thinker.status]).toEqual(['ok', 'ok']);
    expect(sim.requests.slice(0, plainRequests).map((r) => bodyOf(r).thinking)).toEqual(sim.requests.slice(0, plainRequests).map(() => undefined));
    expect(sim.requests.slice(plainRequests).map((r) => bodyOf(r).thinking)).toEqual(
      sim.requests.slice(plainRequests).map(() => ({ type: 'enabled', budget_tokens: 1024 })),
    );
    const overbudget = { description: 'thinks too long', maxTokens: 2000, thinking: { budgetTokens: 4000 } };
    expect(() => makeConfig(sim, root, {}, { api: 'anthropic', agents: { overbudget } })).toThrow(
      /agents\.overbudget\.thinking\.budgetTokens.*below agents\.overbudget\.maxTokens \(2000\).*4000/,
    );
    expect(() => makeConfig(sim, root, {}, { api: 'anthropic', maxTokens: 1500, thinking: { budgetTokens: 1500 } })).toThrow(
      /thinking\.budgetTokens.*below maxTokens \(1500\)/,
    );
  });

  it('the simulator, as the real API, refuses a tool-use turn that lost its thinking block, and a block whose text was changed', async () => {
    const sim = await startSim(cleanups);
    const post = async (assistant: unknown[]) => {
      const response = await fetch(`${sim.url}/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
        body: JSON.stringify({
          model: 'claude-sonnet-4-5',
          max_tokens: 4096,
          thinking: { type: 'enabled', budget_tokens: 1024 },
          messages: [
            { role: 'user', content: 'Find the retry code.' },
            { role: 'assistant', content: [...assistant, { type: 'tool_use', id: 't1', name: 'grep', input: { pattern: 'retry' } }] },
            { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'src/retry.ts' }] },
          ],
        }),
      });
      return { status: response.status, text: await response.text() };
    };
    const lost = await post([]);
    expect(lost.status).toBe(400);
    expect(lost.text).toContain('a final `assistant` message must start with a thinking block');
    const thinking = '(sim thinking for msg_sim_1: which tool next, and why)';
    expect((await post([{ type: 'thinking', thinking: `${thinking} (edited)`, signature: `sim-sig-${'0'.repeat(32)}` }])).text).toContain(
      'Invalid `signature` in `thinking` block',
    );
    // The blocks the sim itself sent, unchanged: taken.
    const first = (await (
      await fetch(`${sim.url}/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
        body: JSON.stringify({
          model: 'claude-sonnet-4-5',
          max_tokens: 4096,
          thinking: { type: 'enabled', budget_tokens: 1024 },
          messages: [{ role: 'user', content: 'hi' }],
        }),
      })
    ).json()) as { content: Array<{ type: string }> };
    const blocks = first.content.filter((b) => b.type === 'thinking' || b.type === 'redacted_thinking');
    expect(blocks.map((b) => b.type)).toEqual(['thinking', 'redacted_thinking']);
    expect((await post(blocks)).status).toBe(200);
  });
});
