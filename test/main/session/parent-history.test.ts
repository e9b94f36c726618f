/**
 * The parent's history stays bounded (issue 8 §5): past `parentHistoryMaxTokens` its oldest
 * whole turns are folded into the capped session summary, kept right after the system prompt,
 * and the model keeps receiving that summary.
 */
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { describe, expect, it } from 'vitest';
import { ParentAgent } from '../../../src/main/session/parent-agent.js';
import { FOLDED_SUMMARY_HEADER, Session } from '../../../src/main/session/session.js';
import { PRIMARY_PROMPT_MARKER } from '../../../src/shared/prompts.js';
import { assertValidHistory, startTestSim, useCleanup } from '../../helpers/index.js';
import { promptTokens, textOf } from '../../../src/sim/reply.js';

const cleanup = useCleanup();
const BUDGET = 2_000;
const SUMMARY_CHARS = 1_000;

describe('ParentAgent history budget', () => {
  it('200 turns against the sim stay under the budget, and the model still gets the summary', async () => {
    const t = await startTestSim(
      cleanup,
      {},
      { parentHistoryMaxTokens: BUDGET, sessionSummaryMaxChars: SUMMARY_CHARS, tools: ['read_file', 'list_dir', 'find_files', 'grep'] },
    );
    const agent = new ParentAgent({ config: t.config, client: t.client });
    for (let turn = 0; turn < 200; turn++) {
      const result = await agent.runTurn(`question ${turn}: where does the tool loop stop?`);
      expect(result.stopReason).toBe('final');
      // The invariant, after every turn: under budget, and still a valid history.
      expect(agent.session.estimatedTokens()).toBeLessThanOrEqual(BUDGET);
      assertValidHistory(agent.session.messages);
    }
    expect(agent.session.turns).toBe(200);
    expect(agent.session.foldedTurns).toBeGreaterThan(150);

    // What the model was sent last: the system prompt intact, then the summary, then recent turns.
    const last = t.sim.requests.at(-1)?.body.messages as ChatCompletionMessageParam[];
    expect(textOf(last[0]?.content)).toContain(PRIMARY_PROMPT_MARKER);
    expect(last[1]?.role).toBe('system');
    const summary = textOf(last[1]?.content);
    expect(summary.startsWith(FOLDED_SUMMARY_HEADER)).toBe(true);
    expect(summary.length).toBeLessThanOrEqual(FOLDED_SUMMARY_HEADER.length + 1 + SUMMARY_CHARS);
    // Capped head and tail: the first question survives, and so does a recently folded one.
    expect(summary).toContain('User asked: question 0:');
    expect(summary).toContain(`User asked: question ${200 - 1 - last.filter((m) => m.role === 'user').length}:`);
    expect(last.filter((m) => m.role === 'user').at(-1)?.content).toBe('question 199: where does the tool loop stop?');

    // Every request the model got was bounded: none past the budget plus one turn's own growth,
    // in the endpoint's own count (the budget counts in it once usage has taught the ratio).
    const sizes = t.sim.requests.map((r) => promptTokens(r.body));
    const late = sizes.slice(-100);
    expect(Math.max(...late)).toBeLessThanOrEqual(BUDGET * 1.5);
    // The full_context hand-off is the same capped digest.
    expect(agent.summary().length).toBeLessThanOrEqual(SUMMARY_CHARS);
    expect(agent.summary()).toContain('User asked: question 0:');
  }, 120_000);
});

describe('Session folding', () => {
  const toolTurn = (i: number, size: number): ChatCompletionMessageParam[] => [
    { role: 'user', content: `question ${i}` },
    {
      role: 'assistant',
      content: null,
      tool_calls: [
        { id: `c${i}a`, type: 'function', function: { name: 'grep', arguments: `{"pattern":"p${i}"}` } },
        { id: `c${i}b`, type: 'function', function: { name: 'list_dir', arguments: '{}' } },
      ],
    },
    { role: 'tool', tool_call_id: `c${i}a`, content: 'x'.repeat(size) },
    { role: 'tool', tool_call_id: `c${i}b`, content: 'y'.repeat(size) },
    { role: 'assistant', content: `answer ${i}` },
  ];

  it('folds whole turns only: the system prompt stays first, every tool call keeps its result', () => {
    const session = new Session('SYSTEM PROMPT', { historyMaxTokens: 1_000, summaryMaxChars: 400 });
    for (let i = 0; i < 30; i++) {
      session.commitTurn(`question ${i}`, [...session.messages, ...toolTurn(i, 300)]);
      assertValidHistory(session.messages);
      expect(session.messages[0]).toEqual({ role: 'system', content: 'SYSTEM PROMPT' });
      expect(session.estimatedTokens()).toBeLessThanOrEqual(1_000);
      // After the prefix, the history starts at a user message: no turn was cut in two.
      const firstTurn = session.messages.findIndex((m) => m.role === 'user');
      expect(session.messages.slice(1, firstTurn).every((m) => m.role === 'system')).toBe(true);
    }
    expect(session.foldedTurns).toBeGreaterThan(20);
    expect(session.messages.filter((m) => m.role === 'system')).toHaveLength(2);
    expect(textOf(session.messages[1]?.content)).toContain('Used grep({"pattern":"p0"})');
  });

  it('leaves a history under its budget untouched', () => {
    const session = new Session('s', { historyMaxTokens: 100_000 });
    const history = [...session.messages, ...toolTurn(1, 100), ...toolTurn(2, 100)];
    session.commitTurn('question 2', history);
    expect(session.messages).toEqual(history);
    expect(session.foldedTurns).toBe(0);
  });

  it('always keeps the latest turn whole, even when it alone is over the budget', () => {
    const session = new Session('s', { historyMaxTokens: 1_000 });
    session.commitTurn('q0', [...session.messages, ...toolTurn(0, 100)]);
    session.commitTurn('q1', [...session.messages, ...toolTurn(1, 5_000)]);
    expect(session.messages.slice(2)).toEqual(toolTurn(1, 5_000));
    expect(session.foldedTurns).toBe(1);
  });
});
