/**
 * Issue 40: a job builds its loop in its thread only once its first model call would not wait
 * behind a full queue of its thread (ThreadBacklog, src/worker/job-entry.ts). Past that it holds only
 * its spec, so 100,000 jobs in flight on 2,000 connections do not each hold a built loop; and a
 * job in its second call does not wait behind every new job's first. A job waiting to start is
 * still in flight: a cancel ends it, a message sent to it reaches its first model request. The
 * real pool, a real worker and the loopback sim; invariants only, never wall-clock windows.
 */
import { describe, expect, it } from 'vitest';
import { ConnectionSlots } from '../../../src/shared/connection-slots.js';
import { ThreadBacklog, threadBacklog } from '../../../src/shared/thread-backlog.js';
import { withSearchSlot } from '../../../src/shared/tools/fd-limit.js';
import { AbortError } from '../../../src/shared/errors.js';
import {
  ended,
  makeConfig,
  makeManager,
  makeWorkspace,
  messagesOf,
  RESEARCH_TASK,
  startHoldingProxy,
  startSim,
  useCleanup,
  waitFor,
} from '../../helpers/index.js';

const cleanups = useCleanup();
const live = () => new AbortController().signal;
const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('ThreadBacklog', () => {
  it('lets jobs start while fewer than their limit wait in the thread’s queues, in order, and skips one that was cancelled', async () => {
    const backlog = new ThreadBacklog();
    const slots = new ConnectionSlots(1, backlog);
    const order: string[] = [];
    const enter = (name: string, signal = live()) =>
      backlog.enter(2, signal).then(
        (arrived) => (order.push(name), arrived),
        (error: unknown) => (order.push(error instanceof AbortError ? `${name} aborted` : `${name} failed`), () => {}),
      );
    // Two let in at once: neither has asked for a slot yet, so both count as queued.
    const a = await enter('a');
    const b = await enter('b');
    const gone = new AbortController();
    const c = enter('c', gone.signal);
    const d = enter('d');
    const e = enter('e');
    expect(backlog.waitingToStart).toBe(3);
    gone.abort(new Error('gone'));
    await c;
    // a's first request takes the one slot: a has arrived, nobody is queued, so d starts.
    const releaseA = await slots.acquire(live());
    a();
    const arrivedD = await d;
    expect(order).toEqual(['a', 'b', 'c aborted', 'd']);
    // b ends without a request: e starts.
    b();
    b(); // a second call gives nothing back twice
    const arrivedE = await e;
    expect(order).toEqual(['a', 'b', 'c aborted', 'd', 'e']);
    // d's request waits for the slot and e is entering: f waits.
    const f = enter('f');
    const waitingD = slots.acquire(live());
    arrivedD();
    await tick();
    expect(backlog.queued).toBe(1);
    expect(order).not.toContain('f');
    // The slot passes to d, the queue is empty: f starts. A job holding a slot holds no place.
    releaseA();
    const releaseD = await waitingD;
    const arrivedF = await f;
    expect(order.at(-1)).toBe('f');
    releaseD();
    arrivedE();
    arrivedF();
    await tick();
    expect([slots.inUse, backlog.queued, backlog.waitingToStart]).toEqual([0, 0, 0]);
  });

  it('a search waiting for its slot counts in the thread’s backlog until it runs or is aborted', async () => {
    // Every search slot of this thread taken (256), by searches held open here.
    const holds: (() => void)[] = [];
    const running = Array.from({ length: 256 }, () => withSearchSlot({ signal: live() }, () => new Promise<void>((resolve) => holds.push(resolve))));
    const before = threadBacklog.queued;
    const gone = new AbortController();
    const aborted = withSearchSlot({ signal: gone.signal }, async () => 'ran').catch((error: unknown) => (error instanceof AbortError ? 'aborted' : 'failed'));
    const waiting = withSearchSlot({ signal: live() }, async () => 'ran');
    expect(threadBacklog.queued).toBe(before + 2);
    gone.abort(new Error('gone'));
    expect(await aborted).toBe('aborted');
    expect(threadBacklog.queued).toBe(before + 1);
    holds[0]?.();
    expect(await waiting).toBe('ran');
    expect(threadBacklog.queued).toBe(before);
    for (const hold of holds) hold();
    await Promise.all(running);
  });
});

describe('jobs waiting to start in a shared thread', () => {
  it('60 jobs on one thread with 4 connections, every response held: only 2 × 4 built their loop, and all end ok once released', async () => {
    // Every response held until the scenario says so: nothing a job does moves, so what it built is
    // fixed. 4 jobs hold the 4 connections; 4 more were let in while fewer than 4 waited and now
    // wait for one; the other 52 wait to start, holding only their spec. (Every job started at
    // once, as before: 60 loops. Once responses flow, how many loops a thread holds also counts
    // the jobs running their tools between two calls, which depends on the host's speed.)
    const sim = await startSim(cleanups, { latencyMs: 20, recordBodies: false });
    const proxy = await startHoldingProxy(cleanups, sim.url, () => true);
    const workspace = await makeWorkspace(cleanups);
    const jobs = 60;
    const bound = 4;
    const config = makeConfig(
      undefined,
      workspace,
      { isolation: 'shared', threads: 1, tasksPerThread: jobs, maxConcurrent: jobs, queueLimit: jobs },
      { baseUrl: proxy.url, modelConnectionsPerThread: bound, maxRetries: 0, stream: false },
    );
    const manager = makeManager(config, cleanups);
    // A job's first model request comes after it built its loop.
    const started = new Set<string>();
    const requested = new Set<string>();
    manager.on('started', (record) => started.add(record.id));
    manager.on('progress', ({ jobId, event }) => {
      if (event.type === 'model_request') requested.add(jobId);
    });
    const ids = Array.from({ length: jobs }, (_, i) => manager.spawn({ task: RESEARCH_TASK, label: `job ${i}` }).id);
    await waitFor(() => proxy.held() === bound && started.size === jobs && requested.size >= 2 * bound, 'every job started, 4 responses held, 8 requests');
    // Nothing moves now: a ninth loop would have asked by now. (This wait can only miss a fault, never make one.)
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(requested.size).toBe(2 * bound);
    proxy.release();
    const records = await Promise.all(ids.map((id) => ended(manager, id)));
    expect(records.filter((r) => r.stopReason === 'final')).toHaveLength(jobs);
    expect(sim.peakConnections).toBeLessThanOrEqual(bound);
  }, 60_000);

  it('a job waiting to start is in flight: a cancel ends it where it waits, and a message sent to it reaches its first request', async () => {
    // One connection, and the first response held until the end of the scenario: job 0 holds the
    // slot, job 1 waits for it, jobs 2-5 cannot start until it is released.
    const sim = await startSim(cleanups);
    const proxy = await startHoldingProxy(cleanups, sim.url, () => true);
    const workspace = await makeWorkspace(cleanups);
    const jobs = 6;
    const config = makeConfig(
      undefined,
      workspace,
      { isolation: 'shared', threads: 1, tasksPerThread: jobs, maxConcurrent: jobs, queueLimit: jobs },
      { baseUrl: proxy.url, modelConnectionsPerThread: 1, maxRetries: 0, stream: false },
    );
    const manager = makeManager(config, cleanups);
    const started = new Set<string>();
    const requested = new Set<string>();
    manager.on('started', (record) => started.add(record.id));
    manager.on('progress', ({ jobId, event }) => {
      if (event.type === 'model_request') requested.add(jobId);
    });
    const ids = Array.from({ length: jobs }, (_, i) => manager.spawn({ task: RESEARCH_TASK, label: `job ${i}` }).id);
    const [steered, cancelled] = [ids[4] as string, ids[5] as string];
    await waitFor(() => proxy.held() === 1 && ids.every((id) => started.has(id)), 'the first response held, every job started in its thread');
    // Started, and waiting for their turn: neither has sent a model request.
    expect(requested.has(steered) || requested.has(cancelled)).toBe(false);
    manager.cancel(cancelled);
    const receipt = manager.parentControls.send(steered, 'Look at the README first.');
    expect(receipt).toMatchObject({ jobId: steered, delivery: 'posted' });
    // It ends where it waits, hearing the cancel itself (not hard-stopped after the grace): the queue ahead of it has not moved.
    const cancelledRecord = await ended(manager, cancelled);
    expect(cancelledRecord).toMatchObject({ status: 'cancelled', endedBy: 'cooperative' });
    expect(proxy.held()).toBe(1);
    expect(requested.has(cancelled)).toBe(false);

    proxy.release();
    const records = await Promise.all(ids.filter((id) => id !== cancelled).map((id) => ended(manager, id)));
    // Each answered (the sim's answer to a job told something mid-task is tagged `partial`).
    expect(records.map((r) => r.stopReason)).toEqual(Array.from({ length: jobs - 1 }, () => 'final'));
    // Its first request (no assistant turn yet) carries the message: it was kept while the job waited.
    const steeredFirst = sim.requests.filter((r) => {
      const messages = messagesOf(r);
      return (
        !messages.some((m) => m.role === 'assistant') && messages.some((m) => m.role === 'user' && String(m.content).includes('Look at the README first.'))
      );
    });
    expect(steeredFirst).toHaveLength(1);
    expect((await ended(manager, steered)).messages).toEqual([expect.objectContaining({ text: 'Look at the README first.', receivedAt: expect.any(Number) })]);
  }, 60_000);
});
