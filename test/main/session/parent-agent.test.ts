/**
 * The parent agent and its session against the scripted sim: answers, a history that stays
 * valid across turns, usage by role, the turn preamble, repeated prompts and the capped summary.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { describe, expect, it } from 'vitest';
import { ParentAgent, type ParentAgentOptions, type ParentEvent } from '../../../src/main/session/parent-agent.js';
import { Session } from '../../../src/main/session/session.js';
import type { ForkpoolConfigInput } from '../../../src/shared/config.js';
import { BACKGROUND_FOLLOWUP_PROMPT, PRIMARY_PROMPT_MARKER } from '../../../src/shared/prompts.js';
import type { ScriptStep } from '../../../src/sim/index.js';
import { assertValidHistory, startTestSim, tempWorkspace, toolResults, useCleanup, type TestSim } from '../../helpers/index.js';
import { textOf } from '../../../src/sim/reply.js';

const cleanup = useCleanup();

interface Agent extends TestSim {
  agent: ParentAgent;
  events: ParentEvent[];
}

async function startAgent(script: ScriptStep[], options: Partial<ParentAgentOptions> = {}, config: Partial<ForkpoolConfigInput> = {}): Promise<Agent> {
  const workspaceRoot = tempWorkspace({ 'a.txt': 'alpha line\n' }, cleanup);
  const t = await startTestSim(cleanup, { script }, { workspaceRoot, tools: ['read_file', 'list_dir', 'bash'], ...config });
  const events: ParentEvent[] = [];
  const agent = new ParentAgent({ config: t.config, client: t.client, onEvent: (e) => events.push(e), ...options });
  return { ...t, agent, events };
}

const messagesOf = (t: TestSim, i: number) => t.sim.requests[i]?.body.messages as ChatCompletionMessageParam[];
const lastUser = (messages: readonly ChatCompletionMessageParam[]) => messages.filter((m) => m.role === 'user').at(-1)?.content;

describe('ParentAgent.runTurn', () => {
  it('runs the tool loop and returns the answer', async () => {
    const t = await startAgent([{ toolCalls: [{ name: 'read_file', arguments: { path: 'a.txt' } }] }, { content: 'It says alpha.' }]);
    const result = await t.agent.runTurn('What does a.txt say?');
    expect(result).toMatchObject({ turn: 1, answer: 'It says alpha.', stopReason: 'final' });
    expect(result.error).toBeUndefined();
    expect([...toolResults(t.agent.session.messages).values()][0]).toContain('alpha line');
    const system = messagesOf(t, 0)[0];
    expect(system?.role).toBe('system');
    expect(textOf(system?.content)).toContain(PRIMARY_PROMPT_MARKER);
    expect(t.agent.busy).toBe(false);
    t.sim.assertScriptDone();
  });

  it('keeps a valid history across two turns and sends it whole with the next turn', async () => {
    const t = await startAgent([
      {
        toolCalls: [
          { name: 'list_dir', arguments: {}, id: 'c1' },
          { name: 'read_file', arguments: { path: 'a.txt' }, id: 'c2' },
        ],
      },
      { content: 'First answer.' },
      { content: 'Second answer.' },
    ]);
    await t.agent.runTurn('first question');
    const afterFirst = [...t.agent.session.messages];
    expect(afterFirst.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool', 'tool', 'assistant']);
    assertValidHistory(afterFirst);

    const second = await t.agent.runTurn('second question');
    expect(second).toMatchObject({ turn: 2, answer: 'Second answer.' });
    expect(t.agent.session.turns).toBe(2);
    const history = t.agent.session.messages;
    assertValidHistory(history);
    expect(history.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool', 'tool', 'assistant', 'user', 'assistant']);
    // The second turn's request carried the whole first turn, then the new input.
    expect(messagesOf(t, 2)).toEqual(JSON.parse(JSON.stringify([...afterFirst, { role: 'user', content: 'second question' }])));
    t.sim.assertScriptDone();
  });

  it('refuses a second turn while one runs with TURN_BUSY, and the first still ends', async () => {
    const t = await startAgent([{ content: 'the only answer' }]);
    const first = t.agent.runTurn('first');
    await expect(t.agent.runTurn('second')).rejects.toMatchObject({ name: 'ForkpoolError', code: 'TURN_BUSY' });
    await expect(first).resolves.toMatchObject({ turn: 1, answer: 'the only answer' });
    expect(t.agent.session.turns).toBe(1);
    t.sim.assertScriptDone();
  });

  it('books usage under its role, per model', async () => {
    const t = await startAgent(
      [
        { toolCalls: [{ name: 'list_dir', arguments: {} }], usage: { prompt_tokens: 100, completion_tokens: 10 } },
        { content: 'a', usage: { prompt_tokens: 120, completion_tokens: 5 } },
        { content: 'b', usage: { prompt_tokens: 50, completion_tokens: 1 } },
      ],
      {},
      { model: 'parent-model' },
    );
    const first = await t.agent.runTurn('one');
    expect(first.usage).toEqual({ 'parent-model': { promptTokens: 220, completionTokens: 15, totalTokens: 235, requests: 2 } });
    await t.agent.runTurn('two');
    expect(t.agent.session.usage()).toEqual({ primary: { 'parent-model': { promptTokens: 270, completionTokens: 16, totalTokens: 286, requests: 3 } } });
    expect(t.agent.session.totalUsage().requests).toBe(3);
  });

  it('books an escalation agent under "escalation"', async () => {
    const t = await startAgent([{ content: 'x', usage: { prompt_tokens: 3, completion_tokens: 2 } }], { role: 'escalation' });
    await t.agent.runTurn('hi');
    expect(Object.keys(t.agent.session.usage())).toEqual(['escalation']);
  });

  it('calls turnPreamble once per turn and puts its text before the input', async () => {
    const calls: number[] = [];
    const turnPreamble = (turn: number) => {
      calls.push(turn);
      return turn === 1 ? '<background_results>\nPREAMBLE FOR TURN 1\n</background_results>' : undefined;
    };
    const t = await startAgent([{ toolCalls: [{ name: 'list_dir', arguments: {} }] }, { content: 'first' }, { content: 'second' }], { turnPreamble });
    await t.agent.runTurn('the question');
    expect(calls).toEqual([1]);
    const expected = '<background_results>\nPREAMBLE FOR TURN 1\n</background_results>\n\nthe question';
    // Both model calls of the turn (before and after the tool call) saw the same user message.
    expect(lastUser(messagesOf(t, 0))).toBe(expected);
    expect(lastUser(messagesOf(t, 1))).toBe(expected);
    await t.agent.runTurn('next question');
    expect(calls).toEqual([1, 2]);
    expect(lastUser(messagesOf(t, 2))).toBe('next question');
    t.sim.assertScriptDone();
  });

  it('reports turn_start, loop events and turn_end, flagging a thrice-repeated prompt', async () => {
    const t = await startAgent([{ content: '1' }, { content: '2' }, { content: '3' }, { content: '4' }]);
    for (let i = 0; i < 3; i++) await t.agent.runTurn('same prompt');
    await t.agent.runTurn(BACKGROUND_FOLLOWUP_PROMPT, { followUp: true });
    const starts = t.events.filter((e): e is Extract<ParentEvent, { type: 'turn_start' }> => e.type === 'turn_start');
    expect(starts.map((s) => [s.turn, s.repeatedPrompt, s.followUp])).toEqual([
      [1, false, false],
      [2, false, false],
      [3, true, false],
      [4, false, true],
    ]);
    expect(t.events.filter((e) => e.type === 'turn_end')).toHaveLength(4);
    expect(t.events.some((e) => e.type === 'loop' && e.event.type === 'model_response')).toBe(true);
  });

  it('rejects a second turn while one runs', async () => {
    const t = await startAgent([{ content: 'slow' }]);
    t.sim.setOptions({ latencyMs: 200 });
    const first = t.agent.runTurn('one');
    expect(t.agent.busy).toBe(true);
    await expect(t.agent.runTurn('two')).rejects.toThrow('already running');
    await expect(first).resolves.toMatchObject({ answer: 'slow' });
  });

  it('ends an aborted turn with stopReason aborted and a valid history', async () => {
    const t = await startAgent([{ toolCalls: [{ name: 'list_dir', arguments: {} }] }, { content: 'never' }]);
    const controller = new AbortController();
    t.agent = new ParentAgent({
      config: t.config,
      client: t.client,
      onEvent: (e) => {
        // Abort as soon as the first tool result is in: the loop must stop before its next model call.
        if (e.type === 'loop' && e.event.type === 'tool_result') controller.abort();
      },
    });
    const result = await t.agent.runTurn('go', { signal: controller.signal });
    expect(result.stopReason).toBe('aborted');
    expect(t.sim.requests).toHaveLength(1);
    assertValidHistory(t.agent.session.messages);
  });

  it('rejects a turn when the workspace was removed after the config was loaded', async () => {
    const workspaceRoot = await mkdtemp(path.join(os.tmpdir(), 'forkpool-gone-'));
    const t = await startTestSim(cleanup, { script: [] }, { workspaceRoot });
    await rm(workspaceRoot, { recursive: true });
    const agent = new ParentAgent({ config: t.config, client: t.client });
    await expect(agent.runTurn('hi')).rejects.toThrow();
    expect(agent.busy).toBe(false);
    expect(t.sim.requests).toHaveLength(0);
  });
});

describe('Session', () => {
  const history = (session: Session, input: string, answer: string): ChatCompletionMessageParam[] => [
    ...session.messages,
    { role: 'user', content: input },
    { role: 'assistant', content: answer },
  ];
  const commit = (session: Session, input: string, answer = 'ok') => session.commitTurn(input, history(session, input, answer));

  it('flags the third identical prompt in a row, ignoring surrounding whitespace', () => {
    const session = new Session('system');
    expect(session.isRepeatedPrompt('again')).toBe(false);
    commit(session, 'again');
    expect(session.isRepeatedPrompt('again')).toBe(false);
    commit(session, ' again\n');
    expect(session.isRepeatedPrompt('again')).toBe(true);
    expect(session.isRepeatedPrompt('something else')).toBe(false);
    commit(session, 'something else');
    expect(session.isRepeatedPrompt('again')).toBe(false);
  });

  it('never flags the background follow-up prompt', () => {
    const session = new Session('system');
    for (let i = 0; i < 5; i++) {
      expect(session.isRepeatedPrompt(BACKGROUND_FOLLOWUP_PROMPT)).toBe(false);
      commit(session, BACKGROUND_FOLLOWUP_PROMPT);
    }
    expect(session.isRepeatedPrompt(`  ${BACKGROUND_FOLLOWUP_PROMPT}\n`)).toBe(false);
  });

  it('caps the summary to maxChars, keeping the first question and the last conclusion', () => {
    const session = new Session('system');
    for (let i = 0; i < 40; i++) commit(session, `question number ${i} ${'padding '.repeat(20)}`, `conclusion number ${i} ${'words '.repeat(30)}`);
    for (const max of [200, 500, 1_000]) {
      const summary = session.summary(max);
      expect(summary.length).toBeLessThanOrEqual(max);
      expect(summary.startsWith('User asked: question number 0')).toBe(true);
      expect(summary).toContain('characters omitted');
    }
    expect(session.summary(1_000).trimEnd().endsWith('words')).toBe(true);
    expect(session.summary(100_000)).toContain('Concluded: conclusion number 39');
  });

  it('summarises tool calls and replaces background result blocks', () => {
    const session = new Session('system');
    session.commitTurn('q', [
      ...session.messages,
      { role: 'user', content: '<background_results>\nsecret-ish long job text\n</background_results>\n\nWhat now?' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'c', type: 'function', function: { name: 'grep', arguments: '{"pattern":"x"}' } }] },
      { role: 'tool', tool_call_id: 'c', content: 'match' },
      { role: 'assistant', content: 'Done.' },
    ]);
    expect(session.summary(2_000).split('\n')).toEqual(['User asked: [background results] What now?', 'Used grep({"pattern":"x"})', 'Concluded: Done.']);
  });

  it('returns usage as a copy', () => {
    const session = new Session('system');
    session.addModelUsage('primary', 'm', { promptTokens: 1, completionTokens: 1, totalTokens: 2, requests: 1 });
    const copy = session.usage();
    copy.primary!.m!.requests = 99;
    expect(session.usage().primary?.m?.requests).toBe(1);
  });
});
