/**
 * When the durable ledger's disk comes back, delivery resumes and the disk catches up, with
 * nobody typing: what the failing writes kept in memory is written again on its own (and once
 * more at close), and a session whose follow-up the disk refused gets it once writes work. Real
 * SQLite failures on the real ledger file (its connection switched to `query_only`), the real pool.
 */
import { describe, expect, it } from 'vitest';
import { AgentSession } from '../../src/main/session/agent-session.js';
import { BackgroundManager } from '../../src/main/jobs/manager.js';
import { DeliveryLedger } from '../../src/main/ledger/ledger.js';
import { openSqliteLedger } from '../../src/main/ledger/sqlite-store.js';
import { settlesWithin } from '../../src/shared/abort.js';
import {
  ended,
  failableLedger,
  okEnding,
  makeConfig,
  makeWorkspace,
  RESEARCH_TASK,
  startSim,
  useCleanup,
  watchManager,
  watchProcess,
} from '../helpers/index.js';

const cleanup = useCleanup();

function onDisk(file: string): Array<[string, string]> {
  const reread = openSqliteLedger(file);
  try {
    return reread
      .jobs('s')
      .load()
      .jobs.map((j) => [j.record.id, j.record.state]);
  } finally {
    reread.close();
  }
}

describe('a durable ledger whose disk comes back', () => {
  it('a session whose wave follow-up the disk refused delivers both results in a follow-up of its own once writes work, with no new prompt', async () => {
    const thrown = watchProcess(cleanup);
    const sim = await startSim(cleanup, { latencyMs: 20 });
    const { store, failWrites } = failableLedger(cleanup);
    const session = new AgentSession({ config: makeConfig(sim, await makeWorkspace(cleanup)), ledgerStore: store, closeExecutor: true });
    cleanup.add(() => session.close({ timeoutMs: 2_000 }));
    watchManager(session.manager);
    let spawned = 0;
    session.manager.on('spawned', () => ++spawned === 2 && failWrites(true));
    const followUps: string[] = [];
    session.on('follow-up', ({ reason }) => followUps.push(reason));
    const delivered: string[] = [];
    session.on('delivered', ({ jobs }) => delivered.push(...jobs.map((j) => j.id)));
    await session.submit('1. Where is the retry backoff implemented?\n2. Where is the tool loop?');
    await session.onIdle();
    // Nothing could be recorded as delivered, so nothing was: both wait.
    expect(delivered).toEqual([]);
    expect(session.deliveries.undeliveredCount).toBe(2);

    failWrites(false);
    const recovered = new Promise<void>((resolve) => session.on('delivered', () => resolve()));
    expect(await settlesWithin(recovered, 20_000), 'no delivery after the disk came back').toBe(true);
    await session.onIdle();
    expect(followUps).toContain('ledger-recovered');
    expect(delivered.sort()).toEqual(
      session.manager
        .jobs()
        .map((j) => j.id)
        .sort(),
    );
    expect(session.deliveries.undeliveredCount).toBe(0);
    expect(session.manager.ledgerHealth()).toMatchObject({ ok: true, unsaved: 0 });
    expect(thrown).toEqual([]);
  });

  it('a clean close after the disk came back leaves the disk as memory is: every job ended, none shown running', async () => {
    const sim = await startSim(cleanup, { latencyMs: 20 });
    const { file, store, failWrites } = failableLedger(cleanup);
    const manager = watchManager(new BackgroundManager({ config: makeConfig(sim, await makeWorkspace(cleanup)), store: store.jobs('s') }));
    cleanup.add(() => manager.close({ timeoutMs: 2_000 }));
    const ids = [1, 2].map((n) => manager.spawn({ task: `${RESEARCH_TASK} (${n})`, label: `job ${n}` }).id);
    failWrites(true);
    await Promise.all(ids.map((id) => ended(manager, id)));
    expect(manager.ledgerHealth()).toMatchObject({ ok: false, unsaved: 2 });
    failWrites(false);
    await manager.close();
    expect(onDisk(file)).toEqual(ids.map((id) => [id, 'ended']));
    expect(manager.ledgerHealth()).toMatchObject({ ok: true, unsaved: 0 });
  });

  it('a delivery refused while every ending was on disk: the ledger tries again on its own and says when writes work (ledger-recovered), so the refused delivery can be made', async () => {
    const { store, failWrites } = failableLedger(cleanup);
    const reports: string[] = [];
    const recovered = new Promise<void>((resolve) => {
      const ledger = new DeliveryLedger({}, store.jobs('s'), (report) => {
        reports.push(report.kind);
        if (report.kind === 'recovered') resolve();
      });
      const ids = ['a', 'b'].map((label) => ledger.add({ id: ledger.newId(), label, task: `t ${label}`, role: 'user', wave: null }).id);
      for (const id of ids) {
        ledger.markRunning(id, 1);
        ledger.markEnded(id, okEnding(`result of ${id}`));
      }
      failWrites(true);
      expect(() => ledger.drain(1)).toThrow(expect.objectContaining({ code: 'LEDGER_WRITE_FAILED' }));
      // Nothing is unsaved (the endings were written): only the refused delivery says the disk is failing.
      expect(ledger.health()).toMatchObject({ ok: false, unsaved: 0 });
      failWrites(false);
      cleanup.add(() => void ledger.closeWrites());
    });
    expect(await settlesWithin(recovered, 20_000), `no recovery reported: ${reports.join(', ')}`).toBe(true);
    expect(reports).toEqual(['failed', 'recovered']);
  });
});
