/**
 * A restart of a waiting job holds on the durable ledger (node:sqlite), through the real pool on
 * the sim: the job (asleep, paused for approvals, or waiting for its children) is restarted and
 * the manager closed at once, before the restarted job launches (a close leaves an unfinished
 * job's record as the disk has it, as a crash does). The next manager on the ledger finds no
 * sleep and no approval to bring back: it runs the job again from its task, which reads a
 * child's result it held exactly once, and the session gets the job once.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { BackgroundManager, type ManagerEvents } from '../../../src/main/jobs/manager.js';
import { AgentSession } from '../../../src/main/session/agent-session.js';
import { loadConfig } from '../../../src/main/setup/config-load.js';
import { Deliveries } from '../../../src/main/delivery/deliveries.js';
import { openSqliteLedger } from '../../../src/main/ledger/sqlite-store.js';
import type { JobRecord } from '../../../src/main/ledger/ledger.js';
import type { ForkpoolConfigInput } from '../../../src/shared/config.js';
import type { ScriptStep } from '../../../src/sim/types.js';
import {
  REPO_ROOT,
  ended,
  ledgerFile,
  makeConfig,
  makeWorkspace,
  messagesOf,
  nextEvent,
  startSim,
  tempWorkspace,
  useCleanup,
  waitFor,
  watchManager,
} from '../../helpers/index.js';
import { ManualScheduler } from '../../helpers/fake-executor.js';

const cleanups = useCleanup();

/** Sleeps and approval timers are the test's; the rest run for real. */
const manualWaits = () => new ManualScheduler(['timeout', 'cancel-grace', 'port-close', 'budget', 'wave-deadline']);

async function setUp(script: ScriptStep[], extra: Partial<ForkpoolConfigInput> = {}) {
  const root = await makeWorkspace(cleanups);
  const sim = await startSim(cleanups, { script, recordBodies: true });
  const file = ledgerFile(cleanups, 'restart-paused.db');
  const config = makeConfig(sim, root, { maxConcurrent: 1, maxDepth: 2, maxAlertsPerJob: 0 }, { ...extra, ledger: { path: file } });
  const open = () => {
    const store = openSqliteLedger(file);
    cleanups.add(() => store.close());
    const scheduler = manualWaits();
    const manager = watchManager(new BackgroundManager({ config, store: store.jobs('s'), scheduler, closeExecutor: true }));
    cleanups.add(() => manager.close({ timeoutMs: 2_000 }));
    return { manager, scheduler };
  };
  return { root, sim, open };
}

/** Request `n` (0-based): its user messages and how many tool messages it carries (a run from its task has none). */
function turn(sim: { requests: unknown[] }, n: number): { users: string[]; tools: number } {
  const messages = messagesOf(sim.requests[n] as Parameters<typeof messagesOf>[0]);
  return { users: messages.filter((m) => m.role === 'user').map((m) => String(m.content)), tools: messages.filter((m) => m.role === 'tool').length };
}

function expectDeliveredOnce(manager: BackgroundManager, id: string): void {
  const deliveries = new Deliveries(manager);
  expect(deliveries.drain(1).map((r) => r.id)).toEqual([id]);
  expect(deliveries.drain(2)).toEqual([]);
}

describe('restart of a waiting job, durable ledger', () => {
  it('asleep, restarted, closed before it ran again: the next manager wakes no sleep and runs it from its task, once', async () => {
    const task = 'Scan the queue.';
    const { sim, open } = await setUp([
      { toolCalls: [{ name: 'schedule_next_turn', arguments: { after: '1h', reason: 'scan again' } }] },
      { content: 'Scanned from the start.' },
    ]);
    const a = open().manager;
    const { id } = a.spawn({ task, label: 'scanner', scheduler: 'sleep' });
    await nextEvent<ManagerEvents, 'sleeping'>(a, 'sleeping', (r) => r.id === id);
    a.restart(id);
    await a.close({ timeoutMs: 2_000 });

    const { manager: b, scheduler } = open();
    expect(b.recovery).toMatchObject({ sleeping: [], rerun: [id] });
    expect(scheduler.find('sleep', id)).toEqual([]);
    expect(b.get(id)?.sleepWait).toBeUndefined();
    expect(await ended(b, id)).toMatchObject({ status: 'ok', resultText: 'Scanned from the start.' });
    expect(sim.requests).toHaveLength(2);
    expect(turn(sim, 1)).toEqual({ users: [expect.stringContaining(task)], tools: 0 });
    expectDeliveredOnce(b, id);
    sim.assertScriptDone();
  });

  it('paused for approvals, restarted, closed before it ran again: the next manager lists no approval, the void call never runs', async () => {
    const task = 'Append a line.';
    const { root, sim, open } = await setUp(
      [{ toolCalls: [{ id: 'call-1', name: 'bash', arguments: { command: 'echo one >> ran.txt' } }] }, { content: 'Done from the start.' }],
      { approvals: 'ask', sandbox: 'none' },
    );
    const a = open().manager;
    const asked = nextEvent<ManagerEvents, 'approval-requested'>(a, 'approval-requested');
    const { id } = a.spawn({ task, label: 'appender' });
    await asked;
    a.restart(id);
    await a.close({ timeoutMs: 2_000 });

    const { manager: b, scheduler } = open();
    expect(b.recovery?.awaitingApproval).toEqual([]);
    expect(b.approvals()).toEqual([]);
    expect(scheduler.find('approval', id)).toEqual([]);
    expect(() => b.approve(id, 'call-1', { decision: 'allow' })).toThrow(expect.objectContaining({ code: 'APPROVAL_UNKNOWN' }));
    // Its void answer is in its history on disk; nothing waits on it.
    expect(b.get(id)).toMatchObject({ approvals: [{ callId: 'call-1', decision: 'deny', by: 'restart' }] });
    expect(b.get(id)?.awaitingApproval).toBeUndefined();
    const record = await ended(b, id);
    expect(existsSync(path.join(root, 'ran.txt'))).toBe(false);
    // Re-run from its task (bash is not granted, so recovery may re-run it): the void call is not in its conversation.
    expect(b.recovery?.rerun).toEqual([id]);
    expect(record).toMatchObject({ status: 'ok', resultText: 'Done from the start.' });
    expect(turn(sim, 1)).toEqual({ users: [expect.stringContaining(task)], tools: 0 });
    expectDeliveredOnce(b, id);
    sim.assertScriptDone();
  });

  it("waiting for its children, restarted with a child's result unread, closed: the next manager re-runs it from its task, which reads that result once", async () => {
    const task = 'Delegate two searches, then answer.';
    const final = 'Restarted: the finder says src/net/retry.ts.';
    const { sim, open } = await setUp([
      {
        toolCalls: [
          { name: 'spawn_background_agent', arguments: { task: 'Find where the retry backoff is.', label: 'finder' } },
          { name: 'spawn_background_agent', arguments: { task: 'Look for the jitter too.', label: 'holder' } },
        ],
      },
      { content: 'Waiting for my two helpers.' },
      { content: 'The retry backoff is in src/net/retry.ts (answer 4242).' },
      // The holder's model call hangs: the parent waits for it, holding the finder's result unread.
      { fault: { kind: 'hang_before_headers' } },
      { content: final },
    ]);
    const a = open().manager;
    const { id } = a.spawn({ task, label: 'parent' });
    await waitFor(() => sim.requests.length === 4, 'the holder asks the model (the finder has ended)');
    const finder = a.jobs().find((r) => r.parentJobId === id && r.label === 'finder') as JobRecord;
    expect(a.get(finder.id)).toMatchObject({ state: 'ended', status: 'ok' });
    expect(a.get(id)).toMatchObject({ waitingForChildren: true });
    a.restart(id);
    await a.close({ timeoutMs: 2_000 });

    const { manager: b } = open();
    expect(b.recovery?.rerun).toEqual([id]);
    expect(await ended(b, id)).toMatchObject({ status: 'ok', resultText: final });
    expect(sim.requests).toHaveLength(5);
    const first = turn(sim, 4);
    expect(first.tools).toBe(0);
    expect(first.users[0]).toContain(task);
    expect(first.users.join('\n').split('answer 4242').length - 1).toBe(1);
    // The session gets the parent once (the finder was its parent's).
    const deliveries = new Deliveries(b);
    expect(deliveries.drain(1).filter((r) => r.id === id)).toHaveLength(1);
    expect(deliveries.drain(2).filter((r) => r.id === id)).toEqual([]);
    expect(b.get(finder.id)?.deliveredInTurn).toBeDefined();
    sim.assertScriptDone();
  });

  it('paused for approvals, restarted, the host killed (SIGKILL) while the new run asks the model: the next session lists no approval and re-runs it from its task, once', async () => {
    const workspace = tempWorkspace({ 'README.md': '# demo\n' }, cleanups);
    const file = ledgerFile(cleanups, 'restart-kill.db');
    const sim = await startSim(cleanups, {
      script: [
        { toolCalls: [{ id: 'call-append', name: 'bash', arguments: { command: 'echo once >> ran.txt' } }] },
        // The restarted run's model call: held until the kill.
        { fault: { kind: 'hang_before_headers' } },
        { content: 'Done from the start.' },
      ],
      recordBodies: true,
    });
    const child = spawn(process.execPath, [path.join(REPO_ROOT, 'test', 'fixtures', 'restart-waiting-child.mjs'), file, sim.url, workspace], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    cleanups.add(() => void child.kill('SIGKILL'));
    let stdout = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('close', (_code, signal) => resolve(signal)));
    await waitFor(() => /restarted \S+ call-append\n/.test(stdout) && sim.requests.length === 2, 'the restarted run asks the model', { timeoutMs: 30_000 });
    const jobId = /restarted (\S+) /.exec(stdout)?.[1] as string;
    child.kill('SIGKILL');
    expect(await exited).toBe('SIGKILL');

    const config = loadConfig({
      config: {
        baseUrl: sim.url,
        workspaceRoot: workspace,
        model: 'forkpool-sim',
        maxRetries: 0,
        sandbox: 'none',
        approvals: 'ask',
        tools: ['bash', 'read_file'],
        ledger: { path: file },
      },
    });
    const session = new AgentSession({ config, sessionId: 'restart-test', resume: true, background: false });
    cleanups.add(() => session.close());
    const { manager } = session;
    expect(manager.recovery).toMatchObject({ awaitingApproval: [], sleeping: [], rerun: [jobId] });
    expect(manager.approvals()).toEqual([]);
    expect(manager.get(jobId)).toMatchObject({ approvals: [{ callId: 'call-append', decision: 'deny', by: 'restart' }] });
    const record = await ended(manager, jobId);
    expect(record).toMatchObject({ status: 'ok', resultText: 'Done from the start.' });
    expect(existsSync(path.join(workspace, 'ran.txt'))).toBe(false);
    expect(sim.requests).toHaveLength(3);
    expect(turn(sim, 2)).toMatchObject({ tools: 0 });
    // Delivered once: the session took it already (a user job), or the next drain does; never both, never again.
    const taken = manager.get(jobId)?.deliveredInTurn !== undefined;
    const deliveries = new Deliveries(manager);
    expect(deliveries.drain(1).map((r) => r.id)).toEqual(taken ? [] : [jobId]);
    expect(deliveries.drain(2)).toEqual([]);
    sim.assertScriptDone();
  });
});
