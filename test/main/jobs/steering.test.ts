/**
 * send_to_background_agent through the real manager, the real pool and real workers on the sim:
 * a message reaches the job's next model request, an interrupt cancels the call in flight (not
 * a failure, not a retry: maxRetries is 0 here), a queued job is given it as it starts, and a
 * message to an ended job is refused naming its state. In each executor isolation.
 */
import { describe, expect, it } from 'vitest';
import { JobError } from '../../../src/shared/errors.js';
import type { LoopEvent } from '../../../src/shared/loop-events.js';
import type { SteerReceipt } from '../../../src/main/jobs/manager.js';
import { ended, makeConfig, makeManager, makeWorkspace, messagesOf, startHoldingProxy, startSim, useCleanup, waitFor } from '../../helpers/index.js';

const cleanups = useCleanup();

const ISOLATIONS = [
  { name: 'thread', extra: {}, background: { isolation: 'thread' as const } },
  { name: 'shared', extra: {}, background: { isolation: 'shared' as const } },
  { name: 'inline', extra: { executor: 'inline' as const }, background: {} },
];

/** Every user message of a request, as text. */
function userTexts(body: unknown): string[] {
  return messagesOf({ body } as never)
    .filter((m) => m.role === 'user')
    .map((m) => String(m.content));
}

describe.each(ISOLATIONS)('steering a job ($name isolation)', ({ extra, background }) => {
  it('a message sent while its model call is in flight arrives in its next model request, and its record says it was received', async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups, {
      script: [{ toolCalls: [{ name: 'list_dir', arguments: { path: '.' } }] }, { content: 'Done: looked at the tests as asked.' }],
    });
    // The first response is held until the message is sent: the job is mid-call, not between calls.
    const proxy = await startHoldingProxy(cleanups, sim.url, (body) => !body.includes('Focus on the tests folder'));
    const manager = makeManager(makeConfig(undefined, root, background, { ...extra, baseUrl: proxy.url }), cleanups);
    const receipts: SteerReceipt[] = [];
    manager.on('message', (receipt) => receipts.push(receipt));
    const events: LoopEvent[] = [];
    manager.on('progress', ({ event }) => events.push(event));
    const { id } = manager.spawn({ task: 'Survey the workspace.', label: 'survey' });
    await waitFor(() => proxy.held() === 1, 'the first model response held');
    const receipt = manager.parentControls.send(id, 'Focus on the tests folder first.');
    proxy.release();
    const record = await ended(manager, id);

    expect(record.status).toBe('ok');
    expect(receipt).toMatchObject({ jobId: id, message: 1, delivery: 'posted', interrupt: false });
    expect(receipts).toEqual([receipt]);
    expect(sim.requests).toHaveLength(2);
    expect(userTexts(sim.requests[0]?.body).join('\n')).not.toContain('Focus on the tests folder');
    expect(userTexts(sim.requests[1]?.body).at(-1)).toContain('Focus on the tests folder first.');
    expect(events.filter((e) => e.type === 'model_interrupted')).toEqual([]);
    expect(record.messages).toEqual([expect.objectContaining({ id: 1, text: 'Focus on the tests folder first.', receivedAt: expect.any(Number) })]);
    expect(record.messages?.[0]?.interrupt).toBeUndefined();
    sim.assertScriptDone();
  });

  it('an interrupt cancels the model call in flight, the job goes on with the message, and nothing counts as failed or retried', async () => {
    const root = await makeWorkspace(cleanups);
    // Request 1 never answers; only the interrupt can end it (maxRetries 0: a failure would end the job).
    const sim = await startSim(cleanups, { faults: { 1: { kind: 'hang_before_headers' } }, script: [{ content: 'Stopped and answered the new question.' }] });
    const manager = makeManager(makeConfig(sim, root, background, extra), cleanups);
    const events: LoopEvent[] = [];
    manager.on('progress', ({ event }) => events.push(event));
    const { id } = manager.spawn({ task: 'Survey the workspace.', label: 'survey' });
    await waitFor(() => sim.requests.length === 1, 'the first model request in flight');
    const receipt = manager.parentControls.send(id, 'Stop that; just say what src/retry.ts does.', { interrupt: true });
    const record = await ended(manager, id);

    expect(receipt).toMatchObject({ delivery: 'posted', interrupt: true });
    expect(record).toMatchObject({ status: 'ok', resultText: 'Stopped and answered the new question.', attempts: 1 });
    expect(record.error).toBeUndefined();
    expect(sim.requests).toHaveLength(2);
    expect(sim.requests[0]?.fault).toBe('hang_before_headers');
    expect(userTexts(sim.requests[1]?.body).at(-1)).toContain('Stop that; just say what src/retry.ts does.');
    expect(events.filter((e) => e.type === 'model_interrupted')).toHaveLength(1);
    expect(events.filter((e) => e.type === 'retry')).toEqual([]);
    // The cancelled call is a model call too: it counts as a turn (its prompt's tokens estimated).
    expect(record.iterations).toBe(2);
    expect(record.messages).toEqual([expect.objectContaining({ id: 1, interrupt: true, receivedAt: expect.any(Number) })]);
    sim.assertScriptDone();
  });
});

describe('steering: interrupts and the budget', () => {
  it('every interrupted call counts against the budget: 60 interrupts to a job capped at 2 turns and 1,000 tokens make at most 2 requests', async () => {
    const root = await makeWorkspace(cleanups);
    // The first 60 requests hang until an interrupt cancels them: only the budget ends the job before the 61st.
    const faults = Object.fromEntries(Array.from({ length: 60 }, (_, i) => [i + 1, { kind: 'hang_before_headers' as const }]));
    const sim = await startSim(cleanups, { faults });
    const manager = makeManager(makeConfig(sim, root, { budget: { maxTurns: 2, maxTokens: 1_000 } }), cleanups);
    const { id } = manager.spawn({ task: 'Survey the workspace.', label: 'survey' });
    const done = ended(manager, id);
    let sent = 0;
    let liveTurns = 0;
    // The live report (while it runs) counts each interrupted call as it happens.
    manager.on('progress', ({ jobId: from, event }) => {
      if (from === id && event.type === 'model_interrupted') liveTurns = Math.max(liveTurns, manager.budgetOf(id)?.spent.turns ?? 0);
    });
    for (let i = 0; i < 60 && manager.get(id)?.state !== 'ended'; i++) {
      await waitFor(() => sim.requests.length > i || manager.get(id)?.state === 'ended', `request ${i + 1} in flight, or the job ended`);
      try {
        manager.parentControls.send(id, `Interrupt ${i + 1}: start over.`, { interrupt: true });
        sent++;
      } catch (error) {
        // Refused once the job has ended (JOB_ENDED): the budget stopped it.
        expect(error).toBeInstanceOf(JobError);
        break;
      }
    }
    const record = await done;

    expect(sent).toBeGreaterThanOrEqual(2);
    expect(liveTurns).toBeGreaterThanOrEqual(1);
    expect(sim.requests.length).toBeLessThanOrEqual(2);
    expect(record.stopReason).toBe('budget_exceeded');
    expect(record.budgetReport?.spent.turns).toBe(sim.requests.length);
    expect(record.budgetReport?.spent.turns).toBeLessThanOrEqual(2);
    // Each cancelled call's prompt counted as tokens (estimated: no usage came back).
    expect(record.budgetReport?.spent.tokens).toBeGreaterThan(0);
  });
});

describe('steering: queued and ended jobs', () => {
  it('a queued job keeps the message and is given it before its first model call', async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups, { script: [{ content: 'first job' }, { content: 'second job, with the message' }] });
    const proxy = await startHoldingProxy(cleanups, sim.url, (body) => body.includes('first task'));
    const manager = makeManager(makeConfig(undefined, root, { maxConcurrent: 1 }, { baseUrl: proxy.url }), cleanups);
    const first = manager.spawn({ task: 'The first task.', label: 'first' });
    const second = manager.spawn({ task: 'The second task.', label: 'second' });
    await waitFor(() => proxy.held() === 1, 'the first job mid-call');
    const receipt = manager.parentControls.send(second.id, 'Also list the README.');
    expect(receipt).toMatchObject({ delivery: 'kept', state: 'queued' });
    expect(manager.get(second.id)?.messages).toEqual([expect.objectContaining({ id: 1, text: 'Also list the README.' })]);
    expect(manager.get(second.id)?.messages?.[0]?.receivedAt).toBeUndefined();
    proxy.release();
    await ended(manager, first.id);
    const record = await ended(manager, second.id);

    const secondRequest = sim.requests.find((r) => JSON.stringify(r.body).includes('The second task.'));
    const texts = userTexts(secondRequest?.body);
    expect(texts[0]).toBe('The second task.');
    expect(texts[1]).toContain('Also list the README.');
    expect(record.messages?.[0]?.receivedAt).toEqual(expect.any(Number));
  });

  it('a message to an ended job is refused with JOB_ENDED naming its state, and changes nothing', async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups, { script: [{ content: 'finished' }] });
    const manager = makeManager(makeConfig(sim, root), cleanups);
    const { id } = manager.spawn({ task: 'Quick task.', label: 'quick' });
    await ended(manager, id);
    let error: unknown;
    try {
      manager.parentControls.send(id, 'too late');
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(JobError);
    expect((error as JobError).code).toBe('JOB_ENDED');
    expect((error as JobError).message).toMatch(/has ended \(ended, status ok\)/);
    expect(manager.get(id)?.messages).toBeUndefined();
    expect(() => manager.parentControls.send('bg-999', 'anyone?')).toThrow(/no background job/);
    expect(() => manager.parentControls.send(id, '   ')).toThrow(/must not be empty/);
  });

  it('a message that arrives with its final answer is answered: the job asks its model once more instead of ending', async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups, { script: [{ content: 'My first answer.' }, { content: 'My answer, with the README too.' }] });
    const proxy = await startHoldingProxy(cleanups, sim.url, (body) => !body.includes('Mention the README'));
    const manager = makeManager(makeConfig(undefined, root, {}, { baseUrl: proxy.url }), cleanups);
    const { id } = manager.spawn({ task: 'Survey the workspace.', label: 'survey' });
    await waitFor(() => proxy.held() === 1, 'its final answer held');
    manager.parentControls.send(id, 'Mention the README as well.');
    proxy.release();
    const record = await ended(manager, id);

    expect(record).toMatchObject({ status: 'ok', resultText: 'My answer, with the README too.', iterations: 2 });
    expect(sim.requests).toHaveLength(2);
    const texts = messagesOf(sim.requests[1] as never).map((m) => `${m.role}: ${String(m.content)}`);
    expect(texts.at(-2)).toBe('assistant: My first answer.');
    expect(texts.at(-1)).toContain('Mention the README as well.');
    sim.assertScriptDone();
  });

  it('at its turn budget a final answer stands: the late message stays unreceived and the job still ends ok', async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups, { script: [{ content: 'My only answer.' }] });
    const proxy = await startHoldingProxy(cleanups, sim.url, () => true);
    const manager = makeManager(makeConfig(undefined, root, { budget: { maxTurns: 1 } }, { baseUrl: proxy.url }), cleanups);
    const { id } = manager.spawn({ task: 'Survey the workspace.', label: 'survey' });
    await waitFor(() => proxy.held() === 1, 'its final answer held');
    manager.parentControls.send(id, 'One more thing.');
    proxy.release();
    const record = await ended(manager, id);

    expect(record).toMatchObject({ status: 'ok', resultText: 'My only answer.', iterations: 1 });
    expect(sim.requests).toHaveLength(1);
    expect(record.messages).toEqual([expect.objectContaining({ id: 1, text: 'One more thing.' })]);
    expect(record.messages?.[0]?.receivedAt).toBeUndefined();
    sim.assertScriptDone();
  });

  it('a job waiting for its children keeps the message and is given it when it resumes, with their results', async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups);
    const leaf = 'Where is the retry backoff implemented? Answer from the files in the workspace.';
    const firstUser = (body: string) =>
      (JSON.parse(body) as { messages: Array<{ role: string; content: unknown }> }).messages.find((m) => m.role === 'user')?.content;
    // The child's model calls are held: its parent answers, then waits (suspended) until they are let go.
    const proxy = await startHoldingProxy(cleanups, sim.url, (body) => firstUser(body) === leaf);
    const manager = makeManager(makeConfig(undefined, root, { maxDepth: 2 }, { baseUrl: proxy.url }), cleanups);
    const top = manager.spawn({ task: `Delegate: ${leaf}`, label: 'top' });
    await waitFor(() => manager.get(top.id)?.waitingForChildren === true && proxy.held() >= 1, 'the parent job waiting for its held child');
    const receipt = manager.parentControls.send(top.id, 'When you resume, also name the file.');
    expect(receipt).toMatchObject({ delivery: 'kept', state: 'suspended' });
    proxy.release();
    const record = await ended(manager, top.id);

    expect(record.status).toBe('ok');
    const parentRequests = sim.requests.filter((r) => firstUser(JSON.stringify(r.body)) === `Delegate: ${leaf}`);
    const withMessage = parentRequests.filter((r) => userTexts(r.body).some((t) => t.includes('When you resume, also name the file.')));
    expect(withMessage.length).toBeGreaterThan(0);
    // Given at the resume, not before: the request that carries it also carries the child's result.
    expect(userTexts(withMessage[0]?.body).some((t) => t.includes('status ok'))).toBe(true);
    expect(record.messages?.[0]?.receivedAt).toEqual(expect.any(Number));
  });
});
