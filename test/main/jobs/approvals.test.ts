/**
 * Approvals in background jobs, through the real pool and worker threads: with `approvals:
 * "ask"` a job's ungranted gated call pauses the job (its slot given back, its wall clock
 * stopped) until `approve()` answers; allow runs that exact call once, deny gives the model the
 * reason, `remember` grants the tool, the timeout denies or cancels, a cancel ends it cleanly.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { PendingApproval } from '../../../src/shared/approvals.js';
import type { ForkpoolConfigInput } from '../../../src/shared/config.js';
import { ForkpoolError } from '../../../src/shared/errors.js';
import type { ScriptStep } from '../../../src/sim/types.js';
import { ended, makeConfig, makeManager, makeWorkspace, nextEvent, startSim, useCleanup } from '../../helpers/index.js';
import { ManualScheduler } from '../../helpers/fake-executor.js';
import { createExecutor } from '../../../src/main/jobs/executor-factory.js';
import { jobView } from '../../../src/main/views/job-view.js';
import { approvalLine } from '../../../src/main/views/terminal-lines.js';
import { jobSummary } from '../../../src/server/job-view.js';
import { statusText } from '../../../src/tui/jobs-view.js';
import type { BackgroundManager, ManagerEvents, TimerTag } from '../../../src/main/jobs/manager.js';

const cleanups = useCleanup();

/** A bash call that appends a line to ran.txt (so a second run shows) and prints a marker the model reads. */
function appendCall(id: string, marker: string): ScriptStep {
  return { toolCalls: [{ id, name: 'bash', arguments: { command: `echo ${marker} >> ran.txt; echo out-${marker}` } }] };
}

/** Job timers by hand (approvals, timeouts), the rest real; each timer's milliseconds kept. */
class RecordingScheduler extends ManualScheduler {
  readonly armed: Array<{ tag: TimerTag; ms: number }> = [];
  constructor() {
    super(['cancel-grace', 'port-close', 'budget', 'wave-deadline']);
  }
  override set(callback: () => void, ms: number, tag: TimerTag): unknown {
    this.armed.push({ tag, ms });
    return super.set(callback, ms, tag);
  }
}

async function setup(
  script: ScriptStep[],
  extra: Partial<ForkpoolConfigInput> = {},
  background: Parameters<typeof makeConfig>[2] = {},
  scheduler?: RecordingScheduler,
  executor?: 'inline',
) {
  const root = await makeWorkspace(cleanups);
  const sim = await startSim(cleanups, { script });
  const config = makeConfig(sim, root, { maxConcurrent: 1, ...background }, { approvals: 'ask', sandbox: 'none', ...extra });
  const manager = makeManager(config, cleanups, executor ? createExecutor(config, undefined, executor) : undefined, scheduler);
  return { root, sim, manager };
}

function requested(manager: BackgroundManager, jobId?: string): Promise<PendingApproval> {
  return nextEvent<ManagerEvents, 'approval-requested'>(manager, 'approval-requested', (p) => jobId === undefined || p.jobId === jobId).then(([p]) => p);
}

function ranLines(root: string): string[] {
  try {
    return readFileSync(path.join(root, 'ran.txt'), 'utf8').split('\n').filter(Boolean);
  } catch {
    return [];
  }
}

/** The tool message the model was sent for `callId` in request `n` (1-based), if any. */
function toolAnswer(
  sim: { requests: Array<{ body?: { messages?: Array<{ role: string; tool_call_id?: string; content?: unknown }> } }> },
  callId: string,
): string | undefined {
  for (const request of sim.requests) {
    const found = request.body?.messages?.find((m) => m.role === 'tool' && m.tool_call_id === callId);
    if (found) return String(found.content);
  }
  return undefined;
}

describe('approvals (approvals: "ask")', () => {
  it('an allowed call runs exactly once after the answer, and the job goes on to finish', async () => {
    const { root, sim, manager } = await setup([appendCall('call-1', 'one'), { content: 'finished after the approval' }]);
    const asked = requested(manager);
    const { id } = manager.spawn({ task: 'append a line', label: 'appender' });
    const pending = await asked;
    expect(pending).toMatchObject({ jobId: id, callId: 'call-1', tool: 'bash', label: 'appender' });
    expect(pending.summary).toContain('echo one');
    expect(pending.expiresAt).toBeGreaterThan(pending.requestedAt);
    // Waiting: still `running` in its record, the call listed, nothing ran yet.
    const waiting = manager.get(id);
    expect(waiting?.state).toBe('running');
    expect(waiting?.awaitingApproval?.map((p) => p.callId)).toEqual(['call-1']);
    expect(manager.approvals().map((p) => p.callId)).toEqual(['call-1']);
    expect(ranLines(root)).toEqual([]);
    // Every view says so: the JSON, the API's summary, the chat's panel, a terminal line.
    expect(jobView(waiting as never).awaitingApproval).toEqual([pending]);
    expect(jobSummary(waiting as never, undefined).awaitingApproval).toEqual([pending]);
    expect(statusText(waiting as never)).toBe('awaiting-approval');
    expect(approvalLine(pending, pending.requestedAt)).toMatch(
      new RegExp(`^\\? ${id} "appender" awaits approval: bash \\(bash: echo one .*\\), call call-1, 600\\.0s left$`),
    );
    const resolved = nextEvent<ManagerEvents, 'approval-resolved'>(manager, 'approval-resolved');
    const answer = manager.approve(id, undefined, { decision: 'allow' });
    expect(answer).toMatchObject({ decision: 'allow', by: 'library', callId: 'call-1' });
    expect((await resolved)[0].callId).toBe('call-1');
    const record = await ended(manager, id);
    expect(record.status).toBe('ok');
    expect(record.resultText).toContain('finished after the approval');
    expect(ranLines(root)).toEqual(['one']);
    // Two model calls: the one that asked for bash, and the one that read its output (not the first again).
    expect(sim.requests.length).toBe(2);
    expect(toolAnswer(sim, 'call-1')).toContain('out-one');
    expect(record.approvals?.map((a) => [a.callId, a.decision, a.by])).toEqual([['call-1', 'allow', 'library']]);
    expect(record.awaitingApproval).toBeUndefined();
    expect(manager.approvals()).toEqual([]);
    sim.assertScriptDone();
  });

  it('a denied call gives the model a tool error with the reason; nothing runs', async () => {
    const { root, sim, manager } = await setup([appendCall('call-1', 'one'), { content: 'did without it' }]);
    const asked = requested(manager);
    const { id } = manager.spawn({ task: 'append a line', label: 'appender' });
    await asked;
    manager.approve(id, 'call-1', { decision: 'deny', reason: 'not on this branch', by: 'chat' });
    const record = await ended(manager, id);
    expect(record.status).toBe('ok');
    expect(ranLines(root)).toEqual([]);
    const answer = toolAnswer(sim, 'call-1');
    expect(answer).toMatch(/^Error: permission denied/);
    expect(answer).toContain('not on this branch');
    expect(record.approvals?.[0]).toMatchObject({ decision: 'deny', by: 'chat', reason: 'not on this branch' });
    sim.assertScriptDone();
  });

  it('remember: "job" grants the tool to the job: its next call of it runs without asking', async () => {
    const { root, sim, manager } = await setup([appendCall('call-1', 'one'), appendCall('call-2', 'two'), { content: 'both done' }]);
    const requests: PendingApproval[] = [];
    // A second question would be the bug: it is refused, so the job still ends and the list shows it.
    manager.on('approval-requested', (p) => {
      requests.push(p);
      if (p.callId !== 'call-1') queueMicrotask(() => manager.approve(p.jobId, p.callId, { decision: 'deny', reason: 'asked twice' }));
    });
    const asked = requested(manager);
    const { id } = manager.spawn({ task: 'append two lines', label: 'appender' });
    await asked;
    manager.approve(id, 'call-1', { decision: 'allow', remember: true });
    const record = await ended(manager, id);
    expect(record.status).toBe('ok');
    expect(ranLines(root)).toEqual(['one', 'two']);
    expect(requests.map((p) => p.callId)).toEqual(['call-1']);
    expect(record.approvals?.[0]?.remember).toBe('job');
    sim.assertScriptDone();
  });

  it('approve() names what it did not find, and checks the decision', async () => {
    const { sim, manager } = await setup([appendCall('call-1', 'one'), { content: 'done' }]);
    const asked = requested(manager);
    const { id } = manager.spawn({ task: 'append a line', label: 'appender' });
    await asked;
    const codeOf = (run: () => unknown) => {
      try {
        run();
        return 'no error';
      } catch (error) {
        return error instanceof ForkpoolError ? `${error.code}: ${error.message}` : String(error);
      }
    };
    expect(codeOf(() => manager.approve('nope', undefined, { decision: 'allow' }))).toMatch(/^APPROVAL_UNKNOWN: .*"nope"/);
    expect(codeOf(() => manager.approve(id, 'call-9', { decision: 'allow' }))).toMatch(/^APPROVAL_UNKNOWN: .*"call-9"/);
    expect(codeOf(() => manager.approve(id, 'call-1', { decision: 'maybe' } as never))).toMatch(/^APPROVAL_INVALID: .*"decision"/);
    manager.approve(id, 'call-1', { decision: 'allow' });
    await ended(manager, id);
    expect(codeOf(() => manager.approve(id, 'call-1', { decision: 'allow' }))).toMatch(/^APPROVAL_UNKNOWN: .*ended/);
    sim.assertScriptDone();
  });

  it('its slot is given back while it waits: another job runs in it with maxConcurrent 1', async () => {
    const { root, sim, manager } = await setup([appendCall('call-1', 'one'), { content: 'the other job is done' }, { content: 'the waiting job is done' }]);
    const asked = requested(manager);
    const waiting = manager.spawn({ task: 'append a line', label: 'waiter' });
    await asked;
    const other = manager.spawn({ task: 'answer at once', label: 'other' });
    const otherRecord = await ended(manager, other.id);
    expect(otherRecord.resultText).toContain('the other job is done');
    // The other job ran and ended while this one still waited, nothing of its call run.
    expect(manager.get(waiting.id)?.awaitingApproval?.length).toBe(1);
    expect(ranLines(root)).toEqual([]);
    manager.approve(waiting.id, 'call-1', { decision: 'allow' });
    const record = await ended(manager, waiting.id);
    expect(record.resultText).toContain('the waiting job is done');
    expect(ranLines(root)).toEqual(['one']);
    sim.assertScriptDone();
  });

  it('its wall clock pauses while it waits: no timeout is armed then, and its next run gets what was left', async () => {
    const scheduler = new RecordingScheduler();
    const { sim, manager } = await setup([appendCall('call-1', 'one'), { content: 'done' }], {}, { timeoutMs: 60_000 }, scheduler);
    const asked = requested(manager);
    const spawnedAt = Date.now();
    const { id } = manager.spawn({ task: 'append a line', label: 'clocked' });
    await asked;
    const ranBeforeWait = Date.now() - spawnedAt;
    expect(scheduler.find('timeout', id)).toEqual([]);
    const ranMs = manager.get(id)?.approvalWait?.ranMs ?? -1;
    expect(ranMs).toBeGreaterThan(0);
    expect(ranMs).toBeLessThanOrEqual(ranBeforeWait);
    // Time passes while it waits (longer than it ran): none of it may count.
    await new Promise((resolve) => setTimeout(resolve, Math.max(300, 2 * ranBeforeWait)));
    manager.approve(id, 'call-1', { decision: 'allow' });
    await ended(manager, id);
    const timeouts = scheduler.armed.filter((t) => t.tag.kind === 'timeout' && t.tag.jobId === id).map((t) => t.ms);
    expect(timeouts).toEqual([60_000, 60_000 - ranMs]);
    sim.assertScriptDone();
  });

  it('approvalTimeoutMs: no answer in time denies the call, and the model reads why', async () => {
    const scheduler = new RecordingScheduler();
    const { root, sim, manager } = await setup([appendCall('call-1', 'one'), { content: 'gave up on it' }], { approvalTimeoutMs: 5_000 }, {}, scheduler);
    const asked = requested(manager);
    const { id } = manager.spawn({ task: 'append a line', label: 'slow answer' });
    await asked;
    const timers = scheduler.find('approval', id);
    expect(timers).toHaveLength(1);
    expect(scheduler.armed.find((t) => t.tag.kind === 'approval')?.ms).toBe(5_000);
    scheduler.fire(timers[0] as number);
    const record = await ended(manager, id);
    expect(record.status).toBe('ok');
    expect(ranLines(root)).toEqual([]);
    expect(toolAnswer(sim, 'call-1')).toMatch(/^Error: permission denied.*approvalTimeoutMs \(5000 ms/);
    expect(record.approvals?.[0]).toMatchObject({ decision: 'deny', by: 'timeout' });
    sim.assertScriptDone();
  });

  it('approvalTimeoutAction "cancel": no answer in time cancels the job', async () => {
    const scheduler = new RecordingScheduler();
    const { root, sim, manager } = await setup([appendCall('call-1', 'one')], { approvalTimeoutAction: 'cancel' }, {}, scheduler);
    const asked = requested(manager);
    const { id } = manager.spawn({ task: 'append a line', label: 'slow answer' });
    await asked;
    scheduler.fire(scheduler.find('approval', id)[0] as number);
    const record = await ended(manager, id);
    expect(record.status).toBe('cancelled');
    expect(record.error?.message).toContain('approvalTimeoutAction "cancel"');
    expect(ranLines(root)).toEqual([]);
    expect(manager.approvals()).toEqual([]);
    expect(manager.pending).toBe(0);
    sim.assertScriptDone();
  });

  it('a cancel while it waits ends it cleanly: cancelled, nothing run, nothing left waiting', async () => {
    const { root, sim, manager } = await setup([{ ...appendCall('call-1', 'one'), content: 'I will append a line.' }]);
    const asked = requested(manager);
    const { id } = manager.spawn({ task: 'append a line', label: 'cancelled' });
    await asked;
    manager.cancel(id);
    const record = await ended(manager, id);
    expect(record).toMatchObject({ status: 'cancelled', endedBy: 'cooperative' });
    expect(record.resultText).toContain('I will append a line.');
    expect(record.awaitingApproval).toBeUndefined();
    expect(manager.approvals()).toEqual([]);
    expect(manager.pending).toBe(0);
    expect(ranLines(root)).toEqual([]);
    sim.assertScriptDone();
  });

  it('the inline executor pauses and goes on the same way (its job runs on the main thread)', async () => {
    const { root, sim, manager } = await setup([appendCall('call-1', 'one'), { content: 'inline done' }], {}, {}, undefined, 'inline');
    const asked = requested(manager);
    const { id } = manager.spawn({ task: 'append a line', label: 'inline' });
    await asked;
    manager.approve(id, undefined, { decision: 'allow' });
    const record = await ended(manager, id);
    expect(record.resultText).toContain('inline done');
    expect(ranLines(root)).toEqual(['one']);
    sim.assertScriptDone();
  });

  it('an agent may ask while the config denies, and the other way round', async () => {
    const script = [appendCall('call-1', 'one'), { content: 'denied at once' }, appendCall('call-2', 'two'), { content: 'asked first' }];
    const { root, sim, manager } = await setup(script, {
      approvals: 'deny',
      agents: { careful: { description: 'asks first', approvals: 'ask' } },
    });
    const requests: PendingApproval[] = [];
    manager.on('approval-requested', (p) => requests.push(p));
    // A fork of the parent: the config's deny, no question, a tool error at once.
    const fork = await ended(manager, manager.spawn({ task: 'append a line', label: 'fork' }).id);
    expect(fork.status).toBe('ok');
    expect(requests).toEqual([]);
    expect(toolAnswer(sim, 'call-1')).toMatch(/^Error: permission denied: "bash" is not granted/);
    expect(ranLines(root)).toEqual([]);
    const asked = requested(manager);
    const careful = manager.spawn({ task: 'append a line', label: 'careful', agent: 'careful' });
    expect((await asked).callId).toBe('call-2');
    manager.approve(careful.id, 'call-2', { decision: 'allow' });
    expect((await ended(manager, careful.id)).resultText).toContain('asked first');
    expect(ranLines(root)).toEqual(['two']);
    sim.assertScriptDone();
  });
});
