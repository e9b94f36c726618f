/**
 * Issue 18, "the host must not die": the durable ledger's writes fail under a running
 * manager or session. The failures are real SQLite failures on the real ledger file: the
 * store's own connection switched to `query_only` (every write: SQLITE_READONLY), or a trigger
 * that aborts one row's update (SQLITE_CONSTRAINT_TRIGGER, the second write of a batch). The
 * full disk itself, through `serve --ledger`, is in test/server/full-disk.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { AgentSession } from '../../src/main/session/agent-session.js';
import { DeliveryLedger } from '../../src/main/ledger/ledger.js';
import { BackgroundManager } from '../../src/main/jobs/manager.js';
import { openSqliteLedger } from '../../src/main/ledger/sqlite-store.js';
import { BACKGROUND_RESULTS_OPEN } from '../../src/shared/prompts.js';
import {
  ended,
  makeConfig,
  makeWorkspace,
  RESEARCH_TASK,
  startSim,
  useCleanup,
  watchManager,
  watchProcess,
  failableLedger,
  okEnding,
} from '../helpers/index.js';
import { Deliveries } from '../../src/main/delivery/deliveries.js';
import { textOf } from '../../src/sim/reply.js';

describe('a durable ledger that stops writing', () => {
  const cleanup = useCleanup();

  it('jobs start and end with every write failing: no throw reaches the event loop, the spawn and the drain are refused (LEDGER_WRITE_FAILED), nothing is lost; once writes work, each result is delivered once and the disk agrees', async () => {
    const thrown = watchProcess(cleanup);
    const sim = await startSim(cleanup, { latencyMs: 20 });
    const { file, store, failWrites } = failableLedger(cleanup);
    const manager = watchManager(new BackgroundManager({ config: makeConfig(sim, await makeWorkspace(cleanup)), store: store.jobs('s') }));
    cleanup.add(() => manager.close({ timeoutMs: 2_000 }));
    const reports: string[] = [];
    manager.on('ledger-error', (e) => reports.push(`error ${e.sqliteCode} first=${e.first}`));
    manager.on('ledger-recovered', () => reports.push('recovered'));

    const ids = [1, 2, 3].map((n) => manager.spawn({ task: `${RESEARCH_TASK} (${n})`, label: `job ${n}` }).id);
    // From here on (dispatch, start, end) every write fails; the spawns above are on disk.
    failWrites(true);
    const records = await Promise.all(ids.map((id) => ended(manager, id)));
    expect(records.map((r) => r.status)).toEqual(['ok', 'ok', 'ok']);
    expect(manager.ledgerHealth()).toMatchObject({ ok: false, unsaved: 3, failure: { code: 'SQLITE_READONLY' } });
    expect(reports[0]).toBe('error SQLITE_READONLY first=true');

    expect(() => manager.spawn({ task: 'one more', label: 'refused' })).toThrow(expect.objectContaining({ code: 'LEDGER_WRITE_FAILED' }));
    expect(manager.jobs()).toHaveLength(3);
    expect(() => new Deliveries(manager).drain(1)).toThrow(expect.objectContaining({ code: 'LEDGER_WRITE_FAILED' }));
    // Nothing moved in memory: all three still wait for delivery.
    expect(new Deliveries(manager).undeliveredCount).toBe(3);
    expect(ids.map((id) => manager.get(id)?.deliveredInTurn)).toEqual([undefined, undefined, undefined]);

    failWrites(false);
    expect(new Deliveries(manager).drain(2).map((r) => r.id)).toEqual(ids);
    expect(new Deliveries(manager).drain(3)).toEqual([]);
    expect(manager.ledgerHealth()).toMatchObject({ ok: true, unsaved: 0 });
    expect(reports.at(-1)).toBe('recovered');
    await manager.close();

    // The disk holds what memory held: every job ended ok and delivered in turn 2.
    const reread = openSqliteLedger(file);
    const onDisk = reread
      .jobs('s')
      .load()
      .jobs.map((j) => [j.record.id, j.record.state, j.record.status, j.record.deliveredInTurn]);
    reread.close();
    expect(onDisk).toEqual(ids.map((id) => [id, 'ended', 'ok', 2]));
    expect(thrown).toEqual([]);
  });

  it('a drain whose second write fails delivers nothing and changes nothing; the next drain delivers both, once', () => {
    const cleanup2 = cleanup;
    const { file, store, db } = failableLedger(cleanup2);
    const ledger = new DeliveryLedger({}, store.jobs('s'));
    const ids = ['a', 'b'].map((label) => ledger.add({ id: ledger.newId(), label, task: `t ${label}`, role: 'user', wave: null }).id);
    for (const id of ids) {
      ledger.markRunning(id, 1);
      ledger.markEnded(id, okEnding(`result of ${id}`));
    }
    // A real SQLite failure on the second row of the batch, after the first was written in the same transaction.
    db.exec(
      `CREATE TRIGGER fail_second BEFORE UPDATE ON jobs WHEN NEW.id = '${ids[1]}' AND NEW.delivered_turn IS NOT NULL BEGIN SELECT RAISE(ABORT, 'no space left'); END`,
    );
    expect(() => ledger.drain(1)).toThrow(expect.objectContaining({ code: 'LEDGER_WRITE_FAILED' }));
    expect(ledger.undelivered().map((r) => r.id)).toEqual(ids);
    expect(ids.map((id) => ledger.get(id)?.deliveredInTurn)).toEqual([undefined, undefined]);
    db.exec('DROP TRIGGER fail_second');
    expect(ledger.drain(2).map((r) => [r.id, r.resultText])).toEqual(ids.map((id) => [id, `result of ${id}`]));
    expect(ledger.drain(3)).toEqual([]);
    const reread = openSqliteLedger(file);
    expect(
      reread
        .jobs('s')
        .load()
        .jobs.map((j) => j.record.deliveredInTurn),
    ).toEqual([2, 2]);
    reread.close();
  });

  it("a session: the wave's follow-up cannot record its delivery; it is reported, nothing is swallowed or lost, and the next turn gets every result once", async () => {
    const thrown = watchProcess(cleanup);
    const sim = await startSim(cleanup, { latencyMs: 20 });
    const { store, failWrites } = failableLedger(cleanup);
    const session = new AgentSession({ config: makeConfig(sim, await makeWorkspace(cleanup)), ledgerStore: store, closeExecutor: true });
    cleanup.add(() => session.close({ timeoutMs: 2_000 }));
    watchManager(session.manager);
    const turnErrors: unknown[] = [];
    session.on('turn-error', (e) => turnErrors.push(e));
    const followUps: number[] = [];
    session.on('turn-result', (r) => (r.followUp ? followUps.push(r.turn) : undefined));
    // Every write fails once the two jobs are booked: their ends, the turn's save, the follow-up's delivery.
    let spawned = 0;
    session.manager.on('spawned', () => ++spawned === 2 && failWrites(true));
    await session.submit('1. Where is the retry backoff implemented?\n2. Where is the tool loop?');
    await session.onIdle();
    expect(spawned).toBe(2);
    // The wave's follow-up was owed (the wave was sealed) but could not record a delivery: with
    // nothing delivered it does not run (no empty turn); both results still wait.
    expect(followUps.length).toBe(0);
    expect(session.deliveries.undeliveredCount).toBe(2);
    expect(session.manager.ledgerHealth().ok).toBe(false);

    failWrites(false);
    const delivered: string[] = [];
    session.on('delivered', ({ jobs }) => delivered.push(...jobs.map((j) => j.id)));
    await session.submit('What did the background agents find?');
    expect(delivered.sort()).toEqual(
      session.manager
        .jobs()
        .map((j) => j.id)
        .sort(),
    );
    const lastUser = session.agent.session.messages.filter((m) => m.role === 'user').at(-1);
    expect(textOf(lastUser?.content)).toContain(BACKGROUND_RESULTS_OPEN);
    expect(session.deliveries.undeliveredCount).toBe(0);
    expect(session.manager.ledgerHealth()).toMatchObject({ ok: true, unsaved: 0 });
    expect(turnErrors).toEqual([]);
    expect(thrown).toEqual([]);
  });
});
