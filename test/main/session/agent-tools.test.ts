/**
 * Remy's `agent_<name>(task, background?)` through the real pool: the parent's model is
 * scripted on one sim, the peer's jobs answer from another (the plausible agent).
 */
import { describe, expect, it } from 'vitest';
import { AgentSession, type SessionEvents } from '../../../src/main/session/agent-session.js';
import { createModelClient } from '../../../src/shared/model-call.js';
import { BACKGROUND_RESULTS_OPEN } from '../../../src/shared/prompts.js';
import type { ScriptStep } from '../../../src/sim/index.js';
import type { ManagerEvents } from '../../../src/main/jobs/manager.js';
import type { LoopEvent } from '../../../src/shared/loop-events.js';
import { ChatController } from '../../../src/tui/controller.js';
import {
  agentConfig,
  messagesOf,
  toolNames,
  toolSchema,
  toolMessagesOf,
  useCleanup,
  RESEARCH_TASK,
  makeWorkspace,
  startSim,
  nextEvent,
} from '../../helpers/index.js';

const cleanups = useCleanup();
type ToolCallEvent = Extract<LoopEvent, { type: 'tool_call' }>;

async function setup(parentScript: ScriptStep[], options: { scoutBackground?: boolean } = {}) {
  const root = await makeWorkspace(cleanups);
  const jobsSim = await startSim(cleanups);
  const parentSim = await startSim(cleanups, { script: parentScript });
  const base = agentConfig(jobsSim, root, { agentTools: ['scout'] });
  const scout = { ...base.agents['scout']!, ...(options.scoutBackground === undefined ? {} : { background: options.scoutBackground }) };
  const config = { ...base, agents: { ...base.agents, scout } };
  const session = new AgentSession({
    config,
    closeExecutor: true,
    client: createModelClient({ baseUrl: parentSim.url, apiKey: 'k', requestTimeoutMs: 10_000 }),
  });
  cleanups.add(() => session.close({ timeoutMs: 2_000 }));
  return { session, parentSim, jobsSim };
}

describe('agent_<name> tools', () => {
  it('foreground: the call waits for the peer job and returns its answer, delivered there and never again', async () => {
    const { session, parentSim } = await setup([
      { toolCalls: [{ id: 'call-fg', name: 'agent_scout', arguments: { task: RESEARCH_TASK } }] },
      { content: 'The scout says retry.ts.' },
    ]);
    const turns: Array<SessionEvents['turn-result'][0]> = [];
    session.on('turn-result', (t) => turns.push(t));
    const calls: ToolCallEvent[] = [];
    session.on('parent', (e) => (e.type === 'loop' && e.event.type === 'tool_call' ? calls.push(e.event) : undefined));
    const result = await session.submit('Ask the scout.');
    // A foreground call's tool_call event does not say background (issue 38, C7).
    expect(calls.map((c) => [c.callId, c.background])).toEqual([['call-fg', undefined]]);
    expect(result.answer).toBe('The scout says retry.ts.');
    // The job ended before the call returned: it is done and delivered in turn 1.
    const [job] = session.manager.jobs();
    expect(job).toMatchObject({ state: 'ended', status: 'ok', agent: 'scout', parentToolId: 'call-fg', deliveredInTurn: 1 });
    expect(job?.backgrounded).toBeUndefined();
    expect(toolNames(parentSim.requests[0]!)).toContain('agent_scout');
    const answer = toolMessagesOf(parentSim.requests[1]!.body)[0] as string;
    expect(answer).toContain(`job ${job?.id}, status ok`);
    expect(answer).toContain('retry.ts');
    await session.onIdle();
    expect(turns).toHaveLength(1);
    parentSim.assertScriptDone();
  });

  it('background: the call returns at the first text turn, the job is marked backgrounded, its events carry the call id, and its final result is delivered once', async () => {
    const { session, parentSim } = await setup([
      { toolCalls: [{ id: 'call-bg', name: 'agent_scout', arguments: { task: RESEARCH_TASK, background: true } }] },
      { content: 'The scout is on it.' },
      { content: 'The scout found retry.ts.' },
    ]);
    const progressIds = new Set<string | undefined>();
    session.manager.on('progress', (p) => progressIds.add(p.parentToolId));
    const backgrounded: string[] = [];
    session.manager.on('backgrounded', (r) => backgrounded.push(r.id));
    const calls: ToolCallEvent[] = [];
    session.on('parent', (e) => (e.type === 'loop' && e.event.type === 'tool_call' ? calls.push(e.event) : undefined));
    const chat = new ChatController({ session, closeTimeoutMs: 2_000 });
    const followUp = nextEvent<SessionEvents, 'turn-result'>(session, 'turn-result', (t) => t.followUp);
    const first = await session.submit('Ask the scout in the background.');
    expect(first.answer).toBe('The scout is on it.');
    // The call's tool_call event says background: true, and the chat shows it (issue 38, C7).
    expect(calls.map((c) => [c.callId, c.name, c.background])).toEqual([['call-bg', 'agent_scout', true]]);
    expect(chat.entries.filter((e) => e.kind === 'tool').map((e) => e.text)).toEqual([expect.stringMatching(/^ {2}▸ agent_scout\(.*\) ⇢ background$/)]);
    const early = toolMessagesOf(parentSim.requests[1]!.body)[0] as string;
    expect(early).toMatch(/is working in the background \(backgrounded\)/);
    expect(early).toContain('| Looking for');
    await followUp;
    await session.onIdle();
    const [job] = session.manager.jobs();
    expect(job).toMatchObject({ state: 'ended', status: 'ok', backgrounded: true, parentToolId: 'call-bg', deliveredInTurn: 2 });
    expect(backgrounded).toEqual([job?.id]);
    expect([...progressIds]).toEqual(['call-bg']);
    const withResult = parentSim.requests.filter((r) => messagesOf(r).some((m) => m.role === 'user' && String(m.content).includes(`job ${job?.id}`)));
    expect(withResult).toHaveLength(1);
    expect(String(messagesOf(withResult[0]!).at(-1)?.content)).toContain(BACKGROUND_RESULTS_OPEN);
    parentSim.assertScriptDone();
  });

  it("two identical agent_<name> calls are two jobs, each its own call's (never one joined by de-duplication)", async () => {
    const { session, parentSim } = await setup([
      {
        toolCalls: [
          { id: 'call-a', name: 'agent_scout', arguments: { task: RESEARCH_TASK } },
          { id: 'call-b', name: 'agent_scout', arguments: { task: RESEARCH_TASK } },
        ],
      },
      { content: 'Both scouts answered.' },
    ]);
    await session.submit('Ask the scout twice.');
    await session.onIdle();
    const jobs = session.manager.jobs();
    expect(jobs.map((j) => j.parentToolId).sort()).toEqual(['call-a', 'call-b']);
    for (const job of jobs) expect(job).toMatchObject({ status: 'ok', deliveredInTurn: 1 });
    parentSim.assertScriptDone();
  });

  it('aborting the parent turn during a foreground call cancels the peer job', async () => {
    const root = await makeWorkspace(cleanups);
    const jobsSim = await startSim(cleanups, { latencyMs: 60_000 });
    const parentSim = await startSim(cleanups, { script: [{ toolCalls: [{ name: 'agent_scout', arguments: { task: RESEARCH_TASK } }] }] });
    const config = agentConfig(jobsSim, root, { agentTools: ['scout'] });
    const session = new AgentSession({
      config,
      closeExecutor: true,
      client: createModelClient({ baseUrl: parentSim.url, apiKey: 'k', requestTimeoutMs: 10_000 }),
    });
    cleanups.add(() => session.close({ timeoutMs: 2_000 }));
    const abort = new AbortController();
    session.manager.on('started', () => abort.abort(new Error('person pressed stop')));
    const result = await session.submit('Ask the scout.', { signal: abort.signal });
    expect(result.stopReason).toBe('aborted');
    const [job] = session.manager.jobs();
    const record = job?.state === 'ended' ? job : (await nextEvent<ManagerEvents, 'done'>(session.manager, 'done'))[0];
    expect(record?.status).toBe('cancelled');
  });

  it('agents.<name>.background: false: its tool has no background parameter, and a call passing it is a tool error that starts no job', async () => {
    const { session, parentSim } = await setup(
      [
        { toolCalls: [{ id: 'call-bg', name: 'agent_scout', arguments: { task: RESEARCH_TASK, background: true } }] },
        { toolCalls: [{ id: 'call-fg', name: 'agent_scout', arguments: { task: RESEARCH_TASK } }] },
        { content: 'The scout says retry.ts.' },
      ],
      { scoutBackground: false },
    );
    const result = await session.submit('Ask the scout in the background.');
    expect(result.answer).toBe('The scout says retry.ts.');
    const schema = toolSchema(parentSim.requests[0]!, 'agent_scout');
    expect(Object.keys(schema.properties)).toEqual(['task']);
    const refused = toolMessagesOf(parentSim.requests[1]!.body)[0] as string;
    expect(refused).toMatch(/background/);
    expect(refused).toMatch(/error|invalid|unrecognized/i);
    // Only the second (foreground) call started a job, and it answered in place.
    const jobs = session.manager.jobs();
    expect(jobs).toHaveLength(1);
    expect(jobs[0]).toMatchObject({ status: 'ok', parentToolId: 'call-fg' });
    expect(toolMessagesOf(parentSim.requests[2]!.body).at(-1)).toContain('retry.ts');
    parentSim.assertScriptDone();
  });

  it('an agent without background: false keeps its background parameter', async () => {
    const { session, parentSim } = await setup([{ content: 'Nothing to ask.' }]);
    await session.submit('Hello.');
    expect(Object.keys(toolSchema(parentSim.requests[0]!, 'agent_scout').properties).sort()).toEqual(['background', 'task']);
  });
});
