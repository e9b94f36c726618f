/**
 * wait_background_agents through a real AgentSession, its jobs in the real pool on the sim: a
 * result the wait returned is delivered exactly once (never again in a later turn's
 * `<background_results>` block, no follow-up for it); `any` returns at the first ending with a
 * line for the job still running; the timeout says so; a result delivered earlier is named, not
 * repeated; an unknown job or another job's child is a tool error and nothing waits; an abort
 * (Esc) ends the wait.
 */
import { describe, expect, it } from 'vitest';
import { AgentSession } from '../../../src/main/session/agent-session.js';
import { parentJobTools } from '../../../src/main/session/parent-tools.js';
import { waitToolMaxMs } from '../../../src/main/session/wait-tool.js';
import { ForkpoolError, ToolError } from '../../../src/shared/errors.js';
import { createModelClient } from '../../../src/shared/model-call.js';
import { BACKGROUND_RESULTS_OPEN } from '../../../src/shared/prompts.js';
import type { ForkpoolConfig } from '../../../src/shared/config.js';
import type { ToolDefinition } from '../../../src/shared/tools/types.js';
import {
  RESEARCH_TASK,
  ended,
  fixtureExecutor,
  makeConfig,
  makeWorkspace,
  messagesOf,
  startSim,
  startedJob,
  toolResultsSent,
  useCleanup,
  waitFor,
  watchManager,
} from '../../helpers/index.js';

const cleanups = useCleanup();

function contextWith(signal: AbortSignal) {
  return { workspaceRoot: '/', limits: {} as never, signal, permissions: { check: async () => false }, env: {} };
}

/** A session whose jobs run in the fault fixture's pool (real jobs on the sim, `FAULT:` tasks misbehave), and its wait tool for turn 7. */
async function sessionWithWaitTool(
  background: Parameters<typeof makeConfig>[2] = {},
): Promise<{ session: AgentSession; wait: ToolDefinition; config: ForkpoolConfig }> {
  const root = await makeWorkspace(cleanups);
  const sim = await startSim(cleanups);
  const config = makeConfig(sim, root, { maxConcurrent: 3, cancelGraceMs: 100, ...background });
  const session = new AgentSession({ config, executor: fixtureExecutor(config, cleanups) });
  watchManager(session.manager);
  cleanups.add(() => session.close({ timeoutMs: 2_000 }));
  const tools = parentJobTools({
    config,
    manager: session.manager,
    deliveries: session.deliveries,
    activity: session.activity,
    currentTurn: () => 7,
    spawnFromAgent: () => {
      throw new Error('unused');
    },
    spawnForAgentTool: () => {
      throw new Error('unused');
    },
  });
  return { session, wait: tools.find((t) => t.name === 'wait_background_agents') as ToolDefinition, config };
}

async function toolError(promise: Promise<unknown>): Promise<ForkpoolError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(ForkpoolError);
  return error as ForkpoolError;
}

describe('wait_background_agents in a parent turn', () => {
  it('returns the result in the tool call, and no later turn or follow-up delivers it again (exactly once)', async () => {
    const root = await makeWorkspace(cleanups);
    const jobsSim = await startSim(cleanups);
    const parentSim = await startSim(cleanups, {
      script: [
        { toolCalls: [{ name: 'spawn_background_agent', arguments: { task: RESEARCH_TASK, label: 'retry research' } }] },
        { toolCalls: [{ name: 'wait_background_agents', arguments: { timeout_ms: 30_000 } }] },
        { content: 'Turn one answered from the waited result.' },
        { content: 'Turn two answered.' },
      ],
    });
    const session = new AgentSession({
      config: makeConfig(jobsSim, root),
      closeExecutor: true,
      client: createModelClient({ baseUrl: parentSim.url, apiKey: 'k', requestTimeoutMs: 10_000 }),
    });
    watchManager(session.manager);
    cleanups.add(() => session.close({ timeoutMs: 2_000 }));
    const followUps: unknown[] = [];
    session.on('follow-up', (event) => followUps.push(event));

    const first = await session.submit('Find the retry backoff, and wait for it.');
    expect(first.answer).toBe('Turn one answered from the waited result.');
    await session.onIdle();
    const job = session.manager.get('bg-1');
    expect(job).toMatchObject({ state: 'ended', status: 'ok', deliveredInTurn: 1 });
    const waited = [...toolResultsSent(parentSim).values()].find((text) => text.startsWith('Waited '));
    expect(waited).toBeDefined();
    expect(waited).toContain(BACKGROUND_RESULTS_OPEN);
    expect(waited).toContain('[Background agent "retry research" completed');
    expect(waited).toMatch(/1 ended, 0 still running/);

    await session.submit('And now?');
    await session.onIdle();
    expect(followUps).toEqual([]);
    expect(parentSim.requests).toHaveLength(4);
    // Turn two's input carries no results block, and no request but the tool's answer ever showed the result.
    const turnTwo = messagesOf(parentSim.requests[3]!);
    expect(String(turnTwo.filter((m) => m.role === 'user').at(-1)?.content)).not.toContain(BACKGROUND_RESULTS_OPEN);
    for (const request of parentSim.requests)
      for (const message of messagesOf(request))
        if (message.role !== 'tool') expect(JSON.stringify(message.content ?? '')).not.toContain('[Background agent "retry research"');
    expect(session.manager.get('bg-1')?.deliveredInTurn).toBe(1);
    parentSim.assertScriptDone();
  });
});

describe('wait_background_agents: Esc in a parent turn', () => {
  it('cancelling the turn ends the wait at once: the turn stops aborted, the wait leaves no listener, the job runs on undelivered', async () => {
    const root = await makeWorkspace(cleanups);
    const jobsSim = await startSim(cleanups);
    const parentSim = await startSim(cleanups, {
      script: [
        { toolCalls: [{ name: 'spawn_background_agent', arguments: { task: 'FAULT:ignore_cancel', label: 'stuck' } }] },
        { toolCalls: [{ name: 'wait_background_agents', arguments: { timeout_ms: 50_000 } }] },
      ],
    });
    const config = makeConfig(jobsSim, root, { cancelGraceMs: 100 });
    const session = new AgentSession({
      config,
      executor: fixtureExecutor(config, cleanups),
      client: createModelClient({ baseUrl: parentSim.url, apiKey: 'k', requestTimeoutMs: 10_000 }),
    });
    watchManager(session.manager);
    cleanups.add(() => session.close({ timeoutMs: 2_000 }));
    const listeners = session.manager.listenerCount('done');
    const turn = session.submit('Start it and wait.');
    await waitFor(() => session.manager.listenerCount('done') > listeners, 'the wait under way');
    expect(session.cancelTurn('Esc')).toBe(true);
    const result = await turn;
    expect(result.stopReason).toBe('aborted');
    // The wait's own listener is gone with the turn (not left until its 50 s pass).
    expect(session.manager.listenerCount('done')).toBe(listeners);
    expect(session.manager.get('bg-1')?.state).not.toBe('ended');
    expect(session.manager.get('bg-1')?.deliveredInTurn).toBeUndefined();
    parentSim.assertScriptDone();
  });
});

describe('wait_background_agents: modes, timeout, refusals, abort', () => {
  it('any returns at the first ending with a line for the one still running; the timeout says so; a delivered result is named, not repeated', async () => {
    const { session, wait } = await sessionWithWaitTool();
    const signal = new AbortController().signal;
    const quick = session.manager.spawn({ task: RESEARCH_TASK, label: 'quick', wave: 99 });
    const long = session.manager.spawn({ task: 'FAULT:finish_on_cancel', label: 'long', wave: 99 });
    // Running, not queued, when the wait returns (its line names the state it is in).
    await startedJob(session.manager, long.id);

    const any = await wait.run({ timeout_ms: 30_000, mode: 'any' }, contextWith(signal));
    expect(any).toMatch(/^Waited \d+\.\d s for 2 background job\(s\): 1 ended, 1 still running\. Mode any: one ending was enough\./);
    expect(any).toContain(`[Background agent "quick" completed — job ${quick.id}, status ok`);
    expect(any).toContain(`- ${long.id} "long" is still running`);
    expect(any).not.toContain('[Background agent "long"');
    expect(session.manager.get(quick.id)?.deliveredInTurn).toBe(7);
    expect(session.manager.get(long.id)?.deliveredInTurn).toBeUndefined();

    const timedOut = await wait.run({ jobs: [long.id], timeout_ms: 50 }, contextWith(signal));
    expect(timedOut).toMatch(/0 ended, 1 still running\. The timeout passed first\./);
    expect(timedOut).toContain(`- ${long.id} "long" is still running`);

    const again = await wait.run({ jobs: [quick.id], timeout_ms: 0 }, contextWith(signal));
    expect(again).toContain(`- ${quick.id} "quick" ended ok; its result was delivered in turn 7 (not repeated`);
    expect(again).not.toContain(BACKGROUND_RESULTS_OPEN);

    // The default is what is not delivered yet: the long job only, once it ends.
    session.manager.cancel(long.id);
    const rest = await wait.run({ timeout_ms: 30_000 }, contextWith(signal));
    expect(rest).toMatch(/for 1 background job\(s\): 1 ended, 0 still running/);
    expect(rest).toContain(`[Background agent "long" completed — job ${long.id}`);
    expect(rest).toContain('| fixture finished on cancel');
    expect(rest).not.toContain('"quick"');
    expect(session.deliveries.undeliveredCount).toBe(0);
    expect(await wait.run({ timeout_ms: 30_000 }, contextWith(signal))).toMatch(/^No background agents to wait for/);
  });

  it('a long result is cut to background.resultMaxChars, its unread part recorded and named for read_background_result', async () => {
    const { session, wait } = await sessionWithWaitTool({ resultMaxChars: 2_000 });
    const long = session.manager.spawn({ task: `${RESEARCH_TASK} [sim-answer-chars: 20000]`, label: 'long answer', wave: 99 });
    const text = await wait.run({ jobs: [long.id], timeout_ms: 30_000 }, contextWith(new AbortController().signal));
    const record = session.manager.get(long.id);
    expect(record?.resultText?.length).toBe(20_000);
    const unread = record?.resultUnread;
    expect(unread).toEqual([expect.any(Number), expect.any(Number)]);
    expect(text).toContain(`Read them with read_background_result(job_id: "${long.id}", offset: ${unread?.[0]})`);
    expect(text.length).toBeLessThan(4_000);
    expect(record?.deliveredInTurn).toBe(7);
  });

  it('an unknown job, or a child of another job, is a tool error naming it and nothing waits; timeout_ms above the cap is refused', async () => {
    const { session, wait, config } = await sessionWithWaitTool({ maxDepth: 2 });
    const signal = new AbortController().signal;
    const top = session.manager.spawn({ task: `Delegate: ${RESEARCH_TASK}`, label: 'top', wave: 99 });
    await ended(session.manager, top.id);
    await session.manager.onIdle();
    const child = session.manager.jobs().find((job) => job.parentJobId === top.id);
    expect(child).toBeDefined();

    const unknown = await toolError(wait.run({ jobs: [top.id, 'nobody'], timeout_ms: 30_000 }, contextWith(signal)));
    expect(unknown).toBeInstanceOf(ToolError);
    expect(unknown).toMatchObject({ code: 'JOB_UNKNOWN', toolName: 'wait_background_agents' });
    expect(unknown.message).toContain('no background job with id or name "nobody"');
    const notOwn = await toolError(wait.run({ jobs: [child!.id], timeout_ms: 30_000 }, contextWith(signal)));
    expect(notOwn.message).toContain(`job ${child!.id} is not yours: job ${top.id} spawned it`);
    // Refused, so nothing was delivered.
    expect(session.manager.get(top.id)?.deliveredInTurn).toBeUndefined();

    const cap = waitToolMaxMs(config);
    expect(cap).toBe(config.toolLimits.toolTimeoutMs - 1_000);
    const over = wait.parameters.safeParse({ timeout_ms: cap + 1 });
    expect(over.success).toBe(false);
    expect(JSON.stringify(over.error?.issues)).toContain(`timeout_ms must be at most ${cap}`);
    expect(wait.parameters.safeParse({ timeout_ms: -1 }).success).toBe(false);
    expect(wait.parameters.safeParse({ timeout_ms: 10, mode: 'some' }).success).toBe(false);
    expect(wait.parameters.safeParse({ jobs: [], timeout_ms: 10 }).success).toBe(false);
  });

  it('aborting the call (Esc) ends the wait with ABORTED and delivers nothing', async () => {
    const { session, wait } = await sessionWithWaitTool();
    const listeners = session.manager.listenerCount('done');
    const stuck = session.manager.spawn({ task: 'FAULT:ignore_cancel', label: 'stuck', wave: 99 });
    const controller = new AbortController();
    const waiting = wait.run({ jobs: [stuck.id], timeout_ms: 30_000 }, contextWith(controller.signal));
    await new Promise((resolve) => setImmediate(resolve));
    controller.abort('Esc');
    const error = await toolError(waiting);
    expect(error.code).toBe('ABORTED');
    expect(session.manager.listenerCount('done')).toBe(listeners);
    expect(session.manager.get(stuck.id)?.deliveredInTurn).toBeUndefined();
  });
});
