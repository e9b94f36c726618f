/**
 * send_to_background_agent, wait_background_agents and resume_background_agent for jobs that run
 * on `forkpool worker` processes (BullMQ): a message reaches the job on its worker (mid-call
 * with `interrupt`, and while it waits in Redis or in the main process's queue), the wait and
 * the resume are the main side's own. Real redis-server, real worker processes, the sim.
 */
import { describe, expect, it } from 'vitest';
import type { LoopEvent } from '../../../src/shared/loop-events.js';
import type { ForkpoolConfig } from '../../../src/shared/config.js';
import {
  bullManager,
  ended,
  makeConfig,
  makeWorkspace,
  messagesOf,
  startHoldingProxy,
  startSim,
  startWorker,
  testRedis,
  skipWithoutRedis,
  useCleanup,
  waitFor,
} from '../../helpers/index.js';

const cleanup = useCleanup();

/** Every user message of a request, as text. */
function userTexts(body: unknown): string[] {
  return messagesOf({ body } as never)
    .filter((m) => m.role === 'user')
    .map((m) => String(m.content));
}

function bullConfig(baseUrl: string, workspace: string, redis: { url: string; queue: string }, maxConcurrent = 8): ForkpoolConfig {
  return makeConfig(
    undefined,
    workspace,
    { maxConcurrent, cancelGraceMs: 5_000 },
    { baseUrl, executor: 'bullmq', redisUrl: redis.url, bullmq: { queue: redis.queue, pollMs: 500 } },
  );
}

describe.skipIf(skipWithoutRedis())('bullmq: steering, waits and resumes of remote jobs', { timeout: 180_000 }, () => {
  it('an interrupting message reaches the job on its worker mid-call: the call is cancelled, the next request carries it, nothing fails or retries', async () => {
    const redis = await testRedis(cleanup);
    // Request 1 never answers: only the interrupt, carried to the worker, ends it.
    const sim = await startSim(cleanup, { faults: { 1: { kind: 'hang_before_headers' } }, script: [{ content: 'Stopped and answered the new question.' }] });
    const workspace = await makeWorkspace(cleanup);
    await startWorker(cleanup, redis.url, { queue: redis.queue, config: { baseUrl: sim.url, workspaceRoot: workspace } });
    const manager = await bullManager(bullConfig(sim.url, workspace, redis), cleanup);
    const events: LoopEvent[] = [];
    manager.on('progress', ({ event }) => events.push(event));
    const { id } = manager.spawn({ task: 'Survey the workspace.', label: 'survey' });
    await waitFor(() => sim.requests.length === 1, 'the first model request in flight on the worker');
    const receipt = manager.parentControls.send(id, 'Stop that; just say what src/retry.ts does.', { interrupt: true });
    const record = await ended(manager, id);

    expect(receipt).toMatchObject({ jobId: id, message: 1, delivery: 'posted', interrupt: true });
    expect(record).toMatchObject({ status: 'ok', resultText: 'Stopped and answered the new question.', attempts: 1 });
    expect(sim.requests).toHaveLength(2);
    expect(userTexts(sim.requests[0]?.body).join('\n')).not.toContain('Stop that');
    expect(userTexts(sim.requests[1]?.body).at(-1)).toContain('Stop that; just say what src/retry.ts does.');
    expect(events.filter((e) => e.type === 'model_interrupted')).toHaveLength(1);
    expect(events.filter((e) => e.type === 'retry')).toEqual([]);
    // The worker's job said it took the message: the record shows it received.
    expect(record.messages).toEqual([expect.objectContaining({ id: 1, interrupt: true, receivedAt: expect.any(Number) })]);
    sim.assertScriptDone();
  });

  it('a message to a job waiting in Redis, and one to a job still queued in the main process, reach each job’s first model request, once', async () => {
    const redis = await testRedis(cleanup);
    const sim = await startSim(cleanup, { script: [{ content: 'first job' }, { content: 'second job' }, { content: 'third job' }] });
    // The first job's answer is held: it keeps the worker's only slot while the messages are sent.
    const proxy = await startHoldingProxy(cleanup, sim.url, (body) => body.includes('The first task.'));
    const workspace = await makeWorkspace(cleanup);
    await startWorker(cleanup, redis.url, { queue: redis.queue, concurrency: 1, config: { baseUrl: proxy.url, workspaceRoot: workspace } });
    // Two jobs out at once: the second waits in Redis for the worker's slot, the third in the main process's queue.
    const manager = await bullManager(bullConfig(proxy.url, workspace, redis, 2), cleanup);
    const first = manager.spawn({ task: 'The first task.', label: 'first' });
    const second = manager.spawn({ task: 'The second task.', label: 'second' });
    const third = manager.spawn({ task: 'The third task.', label: 'third' });
    await waitFor(() => proxy.held() === 1, 'the first job mid-call');
    expect(manager.get(third.id)?.state).toBe('queued');
    const toSecond = manager.parentControls.send(second.id, 'Also list the README.');
    const toThird = manager.parentControls.send(third.id, 'Also read the tests.');
    expect(toSecond.delivery).toBe('posted');
    expect(toThird).toMatchObject({ delivery: 'kept', state: 'queued' });
    proxy.release();
    await ended(manager, first.id);
    const [secondRecord, thirdRecord] = await Promise.all([ended(manager, second.id), ended(manager, third.id)]);

    const requestOf = (task: string) => sim.requests.filter((r) => JSON.stringify(r.body).includes(task));
    expect(requestOf('The second task.')).toHaveLength(1);
    expect(userTexts(requestOf('The second task.')[0]?.body)).toEqual(['The second task.', expect.stringContaining('Also list the README.')]);
    expect(userTexts(requestOf('The third task.')[0]?.body)).toEqual(['The third task.', expect.stringContaining('Also read the tests.')]);
    expect(JSON.stringify(sim.requests.map((r) => r.body))).not.toMatch(/Also list the README\.[\s\S]*Also list the README\./);
    expect(secondRecord.messages?.[0]?.receivedAt).toEqual(expect.any(Number));
    expect(thirdRecord.messages?.[0]?.receivedAt).toEqual(expect.any(Number));
  });

  it('parentControls.wait ends when a remote job ends; resume continues its conversation (carried back from the worker) as a new remote job', async () => {
    const redis = await testRedis(cleanup);
    const sim = await startSim(cleanup, { script: [{ content: 'The backoff is in src/retry.ts.' }, { content: 'It doubles each attempt.' }] });
    const workspace = await makeWorkspace(cleanup);
    await startWorker(cleanup, redis.url, { queue: redis.queue, config: { baseUrl: sim.url, workspaceRoot: workspace } });
    const manager = await bullManager(bullConfig(sim.url, workspace, redis), cleanup);
    const { id } = manager.spawn({ task: 'Where is the retry backoff?', label: 'backoff' });
    const outcome = await manager.parentControls.wait([id], { timeoutMs: 120_000 });
    expect(outcome).toMatchObject({ timedOut: false, running: [], ended: [expect.objectContaining({ id, status: 'ok' })] });

    const resumed = manager.parentControls.resume(id, 'And how does it grow?');
    const record = await ended(manager, resumed.id);
    expect(record).toMatchObject({ status: 'ok', resumedFrom: id, resultText: 'It doubles each attempt.' });
    // The resumed run starts from the old conversation: its task, its answer, then the instruction.
    const texts = messagesOf(sim.requests[1] as never).map((m) => `${m.role}: ${String(m.content)}`);
    expect(texts.slice(1)).toEqual(['user: Where is the retry backoff?', 'assistant: The backoff is in src/retry.ts.', 'user: And how does it grow?']);
  });
});
