/**
 * Adaptive concurrency (docs/scale-out.md "Adaptive concurrency"): the AIMD controller as a unit, driven
 * by a fixed sequence of outcomes; the per-endpoint gate's order (the parent's lane first);
 * then the real pool against the sim with a small server capacity. Invariants only: bounds,
 * counts and order, never wall-clock windows.
 */
import { describe, expect, it } from 'vitest';
import { AimdController, type AimdChange } from '../../../src/main/limits/adaptive-cap.js';
import { AgentSession } from '../../../src/main/session/agent-session.js';
import { RequestGates, type RequestGateEvents } from '../../../src/main/limits/request-gate.js';
import type { ForkpoolConfig } from '../../../src/shared/config.js';
import { parseConfig } from '../../../src/shared/config.js';
import {
  useCleanup,
  RESEARCH_TASK,
  configError,
  ended,
  makeConfig,
  makeManager,
  makeWorkspace,
  nextEvent,
  startSim,
  tempWorkspace,
  watchManager,
} from '../../helpers/index.js';

const cleanups = useCleanup();

const success = (epoch: number, latencyMs = 10, atLimit = true) => ({ kind: 'success' as const, latencyMs, epoch, atLimit });

describe('AimdController', () => {
  it('adds one slot per limit-worth of successes at the limit, and none for successes with room to spare', () => {
    const aimd = new AimdController({ floor: 1, ceiling: 10, initial: 4, latencyTolerance: 0 });
    expect(aimd.limit).toBe(4);
    for (let i = 0; i < 10; i++) expect(aimd.record(success(0, 10, false))).toBeUndefined();
    expect(aimd.limit).toBe(4);
    const changes: AimdChange[] = [];
    // From 4, five successes at the limit make 5 (4 + 1/4 + 1/4.25 + … crosses 5 at the fifth).
    for (let i = 0; i < 5; i++) changes.push(aimd.record(success(0)));
    expect(changes.slice(0, 4)).toEqual([undefined, undefined, undefined, undefined]);
    expect(changes[4]).toEqual({ limit: 5, reason: 'increase' });
  });

  it('multiplies the limit down on a 429/503, once per epoch', () => {
    const aimd = new AimdController({ floor: 1, ceiling: 20, initial: 10, decreaseFactor: 0.5, latencyTolerance: 0 });
    expect(aimd.epoch).toBe(0);
    expect(aimd.record({ kind: 'overload', epoch: 0 })).toEqual({ limit: 5, reason: 'overload' });
    expect(aimd.epoch).toBe(1);
    // Three more from requests sent before that decrease: the same congestion, no new decrease.
    for (let i = 0; i < 3; i++) expect(aimd.record({ kind: 'overload', epoch: 0 })).toBeUndefined();
    expect(aimd.limit).toBe(5);
    // One sent after it: a new signal.
    expect(aimd.record({ kind: 'overload', epoch: 1 })).toEqual({ limit: 2, reason: 'overload' });
  });

  it('never leaves [floor, ceiling], whatever the sequence', () => {
    const aimd = new AimdController({ floor: 2, ceiling: 6, initial: 3, decreaseFactor: 0.5, latencyTolerance: 0 });
    const seen: number[] = [];
    for (let i = 0; i < 20; i++) {
      aimd.record({ kind: 'overload', epoch: aimd.epoch });
      seen.push(aimd.limit);
    }
    expect(Math.min(...seen)).toBe(2);
    for (let i = 0; i < 500; i++) {
      aimd.record(success(aimd.epoch));
      seen.push(aimd.limit);
    }
    expect(aimd.limit).toBe(6);
    expect(Math.max(...seen)).toBe(6);
    expect(seen.every((l) => l >= 2 && l <= 6)).toBe(true);
  });

  it('treats a sustained rise in latency as congestion', () => {
    const aimd = new AimdController({ floor: 1, ceiling: 20, initial: 10, decreaseFactor: 0.5, latencyTolerance: 3 });
    for (let i = 0; i < 5; i++) aimd.record(success(0, 10, false));
    expect(aimd.limit).toBe(10);
    const changes: AimdChange[] = [];
    for (let i = 0; i < 20; i++) changes.push(aimd.record(success(aimd.epoch, 200, false)));
    expect(changes.filter(Boolean)[0]).toEqual({ limit: 5, reason: 'latency' });
    expect(aimd.limit).toBeLessThan(10);
  });

  it('refuses a floor below 1, a ceiling below the floor and a factor outside (0, 1)', () => {
    expect(() => new AimdController({ floor: 0, ceiling: 4 })).toThrow(/floor/);
    expect(() => new AimdController({ floor: 5, ceiling: 4 })).toThrow(/ceiling/);
    expect(() => new AimdController({ floor: 1, ceiling: 4, decreaseFactor: 1 })).toThrow(/decreaseFactor/);
  });
});

describe('RequestGates (one endpoint)', () => {
  it("admits the parent's requests ahead of job requests that were waiting before them", async () => {
    const gates = new RequestGates({ floor: 1, ceiling: 1, decreaseFactor: 0.7, latencyTolerance: 0 }, 1);
    const admitted: string[] = [];
    gates.on('admitted', (e) => admitted.push(e.origin.kind === 'parent' ? 'parent' : e.origin.jobId));
    const [a, b, c] = ['a', 'b', 'c'].map((id) => gates.leaseFor('http://x/v1', id));
    await a?.service.admitRequest(1);
    void b?.service.admitRequest(1);
    void c?.service.admitRequest(1);
    expect(admitted).toEqual(['a']);
    // The limit (1) is taken and two jobs wait: the parent still goes at once, on its headroom slot.
    const parent = gates.parentGate('http://x/v1');
    const first = await parent.admit(new AbortController().signal);
    expect(admitted).toEqual(['a', 'parent']);
    // A second parent request finds even that taken: it waits, but ahead of b and c.
    const second = parent.admit(new AbortController().signal);
    a?.service.settleRequest(1, { kind: 'ok', latencyMs: 5 });
    const secondTicket = await second;
    expect(admitted).toEqual(['a', 'parent', 'parent']);
    first.settle({ kind: 'ok', latencyMs: 5 });
    expect(admitted).toEqual(['a', 'parent', 'parent']);
    secondTicket.settle({ kind: 'ok', latencyMs: 5 });
    expect(admitted).toEqual(['a', 'parent', 'parent', 'b']);
    // A job attempt that ends while waiting gives its place up; one that ends holding a slot frees it.
    c?.release();
    b?.release();
    expect(gates.snapshot()).toEqual([{ endpoint: 'http://x/v1', limit: 1, inFlight: 0, waiting: 0 }]);
  });

  it('takes an aborted request off the queue', async () => {
    const gates = new RequestGates({ floor: 1, ceiling: 1, decreaseFactor: 0.7, latencyTolerance: 0 }, 1);
    const job = gates.leaseFor('e', 'j');
    await job.service.admitRequest(1);
    // The limit and the parent's headroom slot are both taken: the next parent request waits.
    await gates.parentGate('e').admit(new AbortController().signal);
    const controller = new AbortController();
    const waiting = gates.parentGate('e').admit(controller.signal);
    expect(gates.snapshot()[0]).toMatchObject({ inFlight: 2, waiting: 1 });
    controller.abort(new Error('turn cancelled'));
    await expect(waiting).rejects.toMatchObject({ code: 'ABORTED' });
    expect(gates.snapshot()[0]).toMatchObject({ inFlight: 2, waiting: 0 });
  });
});

function adaptiveConfig(simUrl: { url: string }, root: string, adaptive: { floor: number; ceiling: number }, maxConcurrent: number): ForkpoolConfig {
  return makeConfig(simUrl as never, root, { maxConcurrent, concurrency: 'adaptive', adaptive, isolation: 'shared', threads: 1 }, { maxRetries: 10 });
}

describe('adaptive concurrency through the real pool', () => {
  it('keeps the limit within [floor, ceiling], never admits past it, and bounds the 429s at a small server capacity', async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups, { latencyMs: 100, capacity: 2, capacityRetryAfterSeconds: 0.02 });
    const manager = makeManager(adaptiveConfig(sim, root, { floor: 1, ceiling: 6 }, 6), cleanups);
    const gates = manager.requestGates;
    expect(gates).toBeDefined();
    const limits: Array<RequestGateEvents['limit'][0]> = [];
    const admissions: Array<RequestGateEvents['admitted'][0]> = [];
    gates?.on('limit', (e) => limits.push(e));
    gates?.on('admitted', (e) => admissions.push(e));

    const ids = Array.from({ length: 12 }, (_, i) => manager.spawn({ task: RESEARCH_TASK, label: `r${i}` }).id);
    const records = await Promise.all(ids.map((id) => ended(manager, id)));
    expect(records.map((r) => r.status)).toEqual(ids.map(() => 'ok'));

    expect(limits.length).toBeGreaterThan(0);
    expect(limits.every((l) => l.limit >= 1 && l.limit <= 6)).toBe(true);
    expect(admissions.every((a) => a.inFlight <= a.limit && a.limit <= 6)).toBe(true);
    // Bounded: every 429 is answered by a decrease, or was already in flight when one came
    // (at most `ceiling` such per decrease); and far fewer refusals than answered requests.
    const decreases = limits.filter((l) => l.reason !== 'increase').length;
    expect(sim.overCapacity).toBeLessThanOrEqual(decreases * 6);
    expect(sim.overCapacity).toBeLessThanOrEqual(sim.requestCount / 2);
  });

  it("admits the parent's model request ahead of job requests already waiting at the gate", async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups, { latencyMs: 150 });
    // One job request at a time: every job request but one waits.
    const config = adaptiveConfig(sim, root, { floor: 1, ceiling: 1 }, 4);
    const session = new AgentSession({ config, closeExecutor: true });
    watchManager(session.manager);
    cleanups.add(() => session.close({ timeoutMs: 2_000 }));
    const gates = session.manager.requestGates;
    const log: Array<{ what: 'queued' | 'admitted'; who: string }> = [];
    const who = (e: { origin: { kind: string; jobId?: string }; ticket: number }) =>
      e.origin.kind === 'parent' ? `parent#${e.ticket}` : `${e.origin.jobId}#${e.ticket}`;
    gates?.on('queued', (e) => log.push({ what: 'queued', who: who(e) }));
    gates?.on('admitted', (e) => log.push({ what: 'admitted', who: who(e) }));

    const ids = Array.from({ length: 4 }, (_, i) => session.manager.spawn({ task: RESEARCH_TASK, label: `job ${i}`, role: 'primary', wave: null }).id);
    // Two job requests are waiting (one more is in flight): now the parent asks.
    if (gates) await nextEvent<RequestGateEvents, 'queued'>(gates, 'queued', (e) => e.origin.kind === 'job' && e.jobsAhead >= 1);
    await session.submit('Say hello in one short sentence.');
    await Promise.all(ids.map((id) => ended(session.manager, id)));

    const parentAdmitted = log.findIndex((e) => e.what === 'admitted' && e.who.startsWith('parent'));
    expect(parentAdmitted).toBeGreaterThan(0);
    // Job requests waiting when the parent's first request was admitted: queued, not yet admitted.
    const before = log.slice(0, parentAdmitted);
    const waitingJobs = before.filter((e) => e.what === 'queued' && !before.some((a) => a.what === 'admitted' && a.who === e.who)).map((e) => e.who);
    expect(waitingJobs.length).toBeGreaterThanOrEqual(1);
    const admittedLater = log
      .slice(parentAdmitted + 1)
      .filter((e) => e.what === 'admitted')
      .map((e) => e.who);
    for (const job of waitingJobs) expect(admittedLater).toContain(job);
  });
});

describe("the adaptive gate across a job's port", () => {
  it('a thread hard-stopped while it holds a slot and others wait gives everything back', async () => {
    const root = await makeWorkspace(cleanups);
    // Every request stays in flight until the thread is stopped.
    const sim = await startSim(cleanups, { latencyMs: 30_000 });
    const manager = makeManager(adaptiveConfig(sim, root, { floor: 1, ceiling: 1 }, 3), cleanups);
    const gates = manager.requestGates;
    if (!gates) throw new Error('adaptive mode has gates');
    for (let i = 0; i < 3; i++) manager.spawn({ task: RESEARCH_TASK, label: `held ${i}` });
    // One request holds the only slot, another waits behind it.
    await nextEvent<RequestGateEvents, 'queued'>(gates, 'queued', (e) => e.origin.kind === 'job' && e.jobsAhead >= 1);
    expect(gates.snapshot()[0]).toMatchObject({ inFlight: 1 });
    // No cooperative cancel: the threads die mid-request and never settle their tickets.
    await manager.destroy();
    expect(gates.snapshot()).toEqual([expect.objectContaining({ inFlight: 0, waiting: 0 })]);
  });
});

describe('config of adaptive concurrency and joins', () => {
  it('names the field, what was expected and what was received', () => {
    const bad = (background: Record<string, unknown>) => configError(() => parseConfig({ workspaceRoot: tempWorkspace(), background }));
    const ceiling = bad({ concurrency: 'adaptive', adaptive: { floor: 5, ceiling: 2 } });
    expect(ceiling.issues[0]).toMatchObject({ field: 'background.adaptive.ceiling', expected: expect.stringMatching(/ceiling must be >= floor/) });
    const mode = bad({ concurrency: 'elastic' });
    expect(mode.issues[0]).toMatchObject({ field: 'background.concurrency', received: expect.stringContaining('elastic') });
    const join = bad({ join: {} });
    expect(join.issues[0]).toMatchObject({ field: 'background.join', expected: expect.stringMatching(/deadlineSeconds.*quorum/) });
    const quorum = bad({ join: { quorum: 0 } });
    expect(quorum.issues[0]?.field).toBe('background.join.quorum');
  });
});
