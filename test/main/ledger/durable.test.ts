/**
 * The durable ledger (docs/durability.md): write-through before acting, restart recovery by
 * policy, the completion gate, stored sessions, and `fanout --ledger --resume` after a SIGKILL.
 * The kill-point test is test/durable-kill.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { AgentSession } from '../../../src/main/session/agent-session.js';
import { BackgroundManager, engineOf } from '../../../src/main/jobs/manager.js';
import { DeliveryLedger } from '../../../src/main/ledger/ledger.js';
import { openSqliteLedger } from '../../../src/main/ledger/sqlite-store.js';
import { FOLLOW_UP_PROMPTS } from '../../../src/shared/prompts.js';
import type { ForkpoolConfigInput } from '../../../src/shared/config.js';
import { makeConfig, makeWorkspace, parseJsonLines, spawnCli, startSim, cleanupOf, watchManager, runsOf, ledgerFile, okEnding } from '../../helpers/index.js';
import type { SimServer } from '../../../src/sim/index.js';
import { Deliveries } from '../../../src/main/delivery/deliveries.js';
import { textOf } from '../../../src/sim/reply.js';

const READ_ONLY = ['read_file', 'find_files', 'grep', 'list_dir'] as const;

function durableConfig(sim: SimServer, workspace: string, file: string, extra: Partial<ForkpoolConfigInput> = {}) {
  return makeConfig(
    sim,
    workspace,
    { maxConcurrent: 1 },
    {
      tools: [...READ_ONLY],
      grantedTools: ['write_file'],
      agents: { writer: { description: 'writes files', tools: ['read_file', 'write_file'] } },
      ledger: { path: file },
      ...extra,
    },
  );
}

// Each test has its own sim, ledger file and cleanup list (cleanupOf): they run side by side.
describe.concurrent('durable ledger', () => {
  it('writes every transition to the file before the manager acts on it (another connection sees it in the event)', async (context) => {
    const cleanup = cleanupOf(context);
    const sim = await startSim(cleanup, { latencyMs: 5 });
    const file = ledgerFile(cleanup);
    const config = durableConfig(sim, await makeWorkspace(cleanup), file, { background: { maxConcurrent: 2 } });
    const store = openSqliteLedger(file);
    cleanup.add(() => store.close());
    const reader = openSqliteLedger(file);
    cleanup.add(() => reader.close());
    const manager = watchManager(new BackgroundManager({ config, store: store.jobs('m') }));
    cleanup.add(() => manager.close({ timeoutMs: 2_000 }));
    const seen: string[] = [];
    const onDisk = (id: string) =>
      reader
        .jobs('m')
        .load()
        .jobs.find((j) => j.record.id === id)?.record;
    for (const event of ['spawned', 'started', 'done'] as const) {
      manager.on(event, (record) => {
        const disk = onDisk(record.id);
        seen.push(`${event}:${disk?.state}:${disk?.state === record.state}`);
      });
    }
    const ids = [0, 1, 2].map((i) => manager.spawn({ task: `Where is the tool loop? (durable ${i})`, label: `j${i}` }).id);
    await manager.onIdle();
    expect(seen.filter((s) => s.endsWith(':false'))).toEqual([]);
    expect(seen.filter((s) => s.startsWith('done:ended'))).toHaveLength(3);
    const delivered = new Deliveries(manager).drain(7);
    expect(delivered.map((r) => r.id)).toEqual(ids);
    for (const id of ids) expect(onDisk(id)?.deliveredInTurn).toBe(7);
    const spec = reader.jobs('m').load().jobs[0]?.spec;
    // The spec is kept without the config: no key (config.apiKey is "test-key") reaches the file.
    expect(spec).toMatchObject({ id: ids[0], task: 'Where is the tool loop? (durable 0)' });
    expect(JSON.stringify(reader.jobs('m').load())).not.toContain('test-key');
  });

  it("closing without drain: an ending the close caused stays in memory (the job unfinished on disk); a job that finished in the close's grace, and a delivery, are written", (context) => {
    const cleanup = cleanupOf(context);
    const file = ledgerFile(cleanup);
    const store = openSqliteLedger(file);
    const ledger = new DeliveryLedger({}, store.jobs('s'));
    const add = (label: string) => ledger.add({ id: ledger.newId(), label, task: `task ${label}`, role: 'user', wave: null }).id;
    const [done, cut, delivered] = [add('done'), add('cut'), add('delivered')] as string[];
    for (const id of [done, cut, delivered] as string[]) ledger.markRunning(id, 1);
    ledger.markEnded(delivered as string, okEnding('answer before the close'));
    ledger.keepUnfinishedOnClose();
    ledger.markEnded(done as string, okEnding('answer in the grace'));
    const cancelled = { status: 'cancelled' as const, endedBy: 'cooperative' as const, resultText: '', usage: {}, iterations: 1, byClose: true as const };
    expect(ledger.markEnded(cut as string, cancelled)).toMatchObject({ state: 'ended', resumable: true });
    ledger.markDelivered(delivered as string, 1);
    ledger.markDelivered(cut as string, 1);
    store.close();
    const reopened = openSqliteLedger(file);
    cleanup.add(() => reopened.close());
    const onDisk = new Map(
      reopened
        .jobs('s')
        .load()
        .jobs.map((j) => [j.record.id, j.record]),
    );
    expect(onDisk.get(done as string)).toMatchObject({ state: 'ended', status: 'ok', resultText: 'answer in the grace' });
    expect(onDisk.get(delivered as string)).toMatchObject({ state: 'ended', deliveredInTurn: 1 });
    expect(onDisk.get(cut as string)).toMatchObject({ state: 'running' });
    expect(onDisk.get(cut as string)?.resumable).toBeUndefined();
  });

  it('recovers by policy: undelivered kept, queued in order, read-only running re-run, side-effecting or over-limit delivered as interrupted; nothing twice', async (context) => {
    const cleanup = cleanupOf(context);
    const sim = await startSim(cleanup, { latencyMs: 5 });
    const file = ledgerFile(cleanup);
    const config = durableConfig(sim, await makeWorkspace(cleanup), file, { ledger: { path: file, maxReruns: 1 } });
    // A process that died: its ledger written through a DeliveryLedger on the store, no manager.
    const dead = openSqliteLedger(file);
    const ledger = new DeliveryLedger({}, dead.jobs('s'));
    const add = (label: string, agent?: string) =>
      ledger.add({ id: ledger.newId(), label, task: `Where is the tool loop? (${label})`, role: 'user', wave: null, ...(agent ? { agent } : {}) }).id;
    const [a, b, c, d, e, f, g, h] = [add('A'), add('B'), add('C'), add('D'), add('E'), add('F', 'writer'), add('G'), add('H')] as string[];
    for (const id of [a, b, e, f, g, h] as string[]) ledger.markRunning(id, 1);
    ledger.markEnded(a as string, okEnding('answer A'));
    ledger.markEnded(b as string, okEnding('answer B'));
    ledger.markDelivered(b as string, 1);
    // G asked the model on two runs, each cut: over maxReruns 1. H was cut twice before its
    // first model request (a crash loop): neither counts, so it runs again.
    ledger.markModelReached(g as string);
    ledger.requeue(g as string, 'interrupted by a restart (earlier)');
    ledger.markRunning(g as string, 1);
    ledger.markModelReached(g as string);
    for (const _ of [1, 2]) {
      ledger.requeue(h as string, 'interrupted by a restart (earlier)');
      ledger.markRunning(h as string, 1);
    }
    dead.close();

    const store = openSqliteLedger(file);
    cleanup.add(() => store.close());
    const manager = watchManager(new BackgroundManager({ config, store: store.jobs('s') }));
    cleanup.add(() => manager.close({ timeoutMs: 2_000 }));
    expect(manager.recovery).toEqual({
      undelivered: [a],
      requeued: [c, d],
      rerun: [e, h],
      interrupted: [f, g],
      awaitingApproval: [],
      sleeping: [],
      invalid: [],
    });
    expect(manager.get(g as string)?.error?.message).toMatch(/reached the model on 2 run\(s\)/);
    expect(manager.get(f as string)?.error?.code).toBe('JOB_INTERRUPTED');
    expect(manager.get(f as string)?.error?.message).toMatch(/write_file/);
    const started: string[] = [];
    manager.on('started', (r) => started.push(r.id));
    await manager.onIdle();
    expect(started).toEqual([c, d, e, h]);
    // Each run that asked the model is counted once in the record.
    expect(manager.get(e as string)?.modelRuns).toBe(1);
    expect(manager.get(e as string)?.notes.some((n) => n.startsWith('interrupted by a restart'))).toBe(true);
    expect(new Deliveries(manager).drain(2).map((r) => r.id)).toEqual([a, c, d, e, f, g, h]);
    expect(new Deliveries(manager).drain(3)).toEqual([]);
    expect(runsOf(sim, '(F)')).toBe(0);
    await manager.close();

    // Another restart: everything delivered stays delivered, nothing runs.
    const again = watchManager(new BackgroundManager({ config, store: store.jobs('s') }));
    cleanup.add(() => again.close({ timeoutMs: 2_000 }));
    expect(again.recovery).toEqual({ undelivered: [], requeued: [], rerun: [], interrupted: [], awaitingApproval: [], sleeping: [], invalid: [] });
    expect(new Deliveries(again).drain(4)).toEqual([]);
    expect(again.jobs().map((r) => r.deliveredInTurn)).toEqual([2, 1, 2, 2, 2, 2, 2, 2]);
  });

  it('onInterrupted "deliver" delivers a read-only job that was running as interrupted, without running it', async (context) => {
    const cleanup = cleanupOf(context);
    const sim = await startSim(cleanup);
    const file = ledgerFile(cleanup);
    const config = durableConfig(sim, await makeWorkspace(cleanup), file, { ledger: { path: file, onInterrupted: 'deliver' } });
    const dead = openSqliteLedger(file);
    const ledger = new DeliveryLedger({}, dead.jobs('s'));
    const id = ledger.add({ id: ledger.newId(), label: 'R', task: 'Where is the tool loop? (R)', role: 'user', wave: null }).id;
    ledger.markDispatched(id, 1);
    dead.close();
    const store = openSqliteLedger(file);
    cleanup.add(() => store.close());
    const manager = watchManager(new BackgroundManager({ config, store: store.jobs('s') }));
    cleanup.add(() => manager.close({ timeoutMs: 2_000 }));
    // Dispatched counts as started: its thread may have begun before its `started` was written.
    expect(manager.recovery?.interrupted).toEqual([id]);
    expect(new Deliveries(manager).drain(1)[0]?.error?.message).toMatch(/onInterrupted is "deliver"/);
    expect(runsOf(sim, '(R)')).toBe(0);
  });

  it('refuses a duplicate or stale completion, across a restart too', async (context) => {
    const cleanup = cleanupOf(context);
    const file = ledgerFile(cleanup);
    const store = openSqliteLedger(file);
    cleanup.add(() => store.close());
    const ledger = new DeliveryLedger({}, store.jobs('s'));
    const id = ledger.add({ id: ledger.newId(), label: 'x', task: 't', role: 'user', wave: null }).id;
    ledger.markRunning(id, 1);
    ledger.requeue(id, 'its thread died');
    ledger.markRunning(id, 2);
    expect(ledger.refuseCompletion(id, 1)).toBe('stale');
    expect(ledger.refuseCompletion('bg-99', 1)).toBe('unknown');
    expect(ledger.refuseCompletion(id, 2)).toBeUndefined();
    ledger.markEnded(id, okEnding('first'));
    expect(ledger.refuseCompletion(id, 2)).toBe('duplicate');

    const sim = await startSim(cleanup);
    const manager = watchManager(new BackgroundManager({ config: durableConfig(sim, await makeWorkspace(cleanup), file), store: store.jobs('s') }));
    cleanup.add(() => manager.close({ timeoutMs: 2_000 }));
    expect(engineOf(manager).completeAttempt(id, 2, okEnding('second'))).toMatchObject({ accepted: false, reason: 'duplicate' });
    expect(manager.get(id)?.resultText).toBe('first');
  });

  it('resumes a session by id: its conversation and turns; a result delivered in a turn that never committed is delivered again, once', async (context) => {
    const cleanup = cleanupOf(context);
    const sim = await startSim(cleanup);
    const file = ledgerFile(cleanup);
    const config = durableConfig(sim, await makeWorkspace(cleanup), file);
    const first = new AgentSession({ config, background: false });
    await first.submit('Where is the tool loop?');
    const messages = structuredClone(first.agent.session.messages);
    await first.close();

    // The process died during turn 2: the job was marked delivered in it, the turn never committed.
    const store = openSqliteLedger(file);
    const ledger = new DeliveryLedger({}, store.jobs(first.id));
    const id = ledger.newId();
    ledger.add({ id, label: 'cut', task: 'Where is the tool loop? (cut)', role: 'user', wave: null });
    ledger.markRunning(id, 1);
    ledger.markEnded(id, okEnding('the answer of the cut turn'));
    ledger.markDelivered(id, 2);
    store.close();

    expect(() => AgentSession.resume('s-nobody', { config })).toThrow(expect.objectContaining({ code: 'SESSION_UNKNOWN' }));
    const resumed = AgentSession.resume(first.id, { config, background: false });
    cleanup.add(() => resumed.close());
    expect(resumed.agent.session.messages).toEqual(messages);
    const delivered = new Promise<{ turn: number; jobs: Array<{ id: string }> }>((resolve) => resumed.once('delivered', resolve));
    const { turn, jobs } = await delivered;
    expect(turn).toBe(2);
    expect(jobs.map((j) => j.id)).toEqual([id]);
    await resumed.onIdle();
    const users = resumed.agent.session.messages.filter((m) => m.role === 'user').map((m) => textOf(m.content));
    expect(users).toHaveLength(2);
    expect(users[1]).toContain(`job ${id}`);
    // A job a person started (role user): the follow-up's prompt says so.
    expect(users[1]).toContain(FOLLOW_UP_PROMPTS.user);
    expect(resumed.manager.get(id)?.notes.at(-1)).toMatch(/turn 2, which a restart cut short/);
  });
});

describe.concurrent('fanout --ledger --resume', () => {
  it('continues a fan-out killed with SIGKILL: finished tasks printed from the ledger, not run again; only the rest run', async (context) => {
    const cleanup = cleanupOf(context);
    const sim = await startSim(cleanup, { latencyMs: 40 });
    const workspace = await makeWorkspace(cleanup);
    const file = ledgerFile(cleanup);
    const tasks = Array.from({ length: 12 }, (_, i) => JSON.stringify({ task: `Where is the tool loop? (fan ${i + 1}.)`, label: `t${i + 1}` })).join('\n');
    const args = ['fanout', '-', '--base-url', sim.url, '--workspace', workspace, '--concurrency', '2', '--ledger', file, '--no-progress'];
    const first = spawnCli(args, { input: tasks, cleanup });
    await first.waitForStdout((out) => parseJsonLines(out).length >= 4);
    first.child.kill('SIGKILL');
    const killed = await first.exited;
    expect(killed.signal).toBe('SIGKILL');
    const printedBefore = parseJsonLines(killed.stdout) as Array<{ line: number }>;

    const refused = await spawnCli(args, { input: tasks, cleanup }).exited;
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/already holds a fan-out \(\d+ task\(s\)\); pass --resume/);

    const resumed = await spawnCli([...args, '--resume'], { input: tasks, cleanup }).exited;
    expect(resumed.code, resumed.stderr).toBe(0);
    const out = parseJsonLines(resumed.stdout) as Array<{ line: number; status: string; fromLedger?: boolean }>;
    expect(out.map((r) => r.line).sort((x, y) => x - y)).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));
    const fromLedger = out.filter((r) => r.fromLedger).map((r) => r.line);
    for (const { line } of printedBefore) expect(fromLedger).toContain(line);
    for (const line of fromLedger) expect(runsOf(sim, `(fan ${line}.)`), `line ${line}`).toBe(1);
    expect(out.every((r) => r.status === 'ok' || r.status === 'partial')).toBe(true);
  }, 300_000);

  it('a fan-out stopped with SIGTERM: what it printed is kept, what its stop cut off is not printed but resumed; each task reported once across both runs', async (context) => {
    const cleanup = cleanupOf(context);
    const sim = await startSim(cleanup, { latencyMs: 300 });
    const workspace = await makeWorkspace(cleanup);
    const file = ledgerFile(cleanup);
    const count = 10;
    const tasks = Array.from({ length: count }, (_, i) => JSON.stringify({ task: `Where is the tool loop? (fan ${i + 1}.)`, label: `t${i + 1}` })).join('\n');
    const args = ['fanout', '-', '--base-url', sim.url, '--workspace', workspace, '--concurrency', '3', '--ledger', file, '--no-progress'];
    const first = spawnCli(args, { input: tasks, cleanup });
    await first.waitForStdout((out) => parseJsonLines(out).length >= 2);
    first.child.kill('SIGTERM');
    const stopped = await first.exited;
    const printedBefore = parseJsonLines(stopped.stdout) as Array<{ line: number; status: string }>;
    // The stop cut jobs off (3 run at once): said on stderr, not printed as endings.
    expect(stopped.stderr).toMatch(/\d+ interrupted \(--resume runs them\)/);
    expect(printedBefore.filter((r) => r.status === 'cancelled')).toEqual([]);
    const resumed = await spawnCli([...args, '--resume'], { input: tasks, cleanup }).exited;
    expect(resumed.code, resumed.stderr).toBe(0);
    const out = parseJsonLines(resumed.stdout) as Array<{ line: number; status: string; fromLedger?: boolean }>;
    expect(out.map((r) => r.line).sort((x, y) => x - y)).toEqual(Array.from({ length: count }, (_, i) => i + 1));
    // Everything printed before the stop was kept: printed again only as what the ledger holds, with the same status.
    for (const { line, status } of printedBefore)
      expect(
        out.find((r) => r.line === line),
        `line ${line}`,
      ).toMatchObject({ fromLedger: true, status });
    expect(out.filter((r) => r.fromLedger).length).toBe(printedBefore.length);
  }, 300_000);

  it('--resume without a ledger is a usage error', async (context) => {
    const cleanup = cleanupOf(context);
    const r = await spawnCli(['fanout', '-', '--resume'], { input: '{"task":"x"}', cleanup }).exited;
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--resume continues the fan-out kept in a ledger; give it with --ledger FILE/);
  });
});
