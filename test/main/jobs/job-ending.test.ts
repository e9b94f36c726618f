/**
 * A job's ending is atomic, through the real pool: it is recorded first, then every part of the
 * manager hears of it even when one part throws (a nested child whose hand-over the disk
 * refuses), its waiters always wake, and ending thousands of queued jobs at once recurses
 * nowhere. A wave member restarted after it ended leaves its wave, which still fires.
 */
import { describe, expect, it } from 'vitest';
import { BackgroundManager } from '../../../src/main/jobs/manager.js';
import { Deliveries } from '../../../src/main/delivery/deliveries.js';
import { openSqliteLedger } from '../../../src/main/ledger/sqlite-store.js';
import { settlesWithin } from '../../../src/shared/abort.js';
import {
  ended,
  failableLedger,
  makeConfig,
  makeManager,
  makeWorkspace,
  messagesOf,
  startSim,
  startedJob,
  useCleanup,
  watchManager,
  watchProcess,
} from '../../helpers/index.js';

const cleanup = useCleanup();
const LEAF = 'Where is the retry backoff implemented? Answer from the files in the workspace.';

/** FORKPOOL_HOST_FAULT warnings (what reportFault prints without a logger) seen while the test runs. */
function hostFaultWarnings(): string[] {
  const seen: string[] = [];
  const onWarning = (warning: Error & { code?: string }) => {
    if (warning.code === 'FORKPOOL_HOST_FAULT') seen.push(warning.message);
  };
  process.on('warning', onWarning);
  cleanup.add(() => void process.off('warning', onWarning));
  return seen;
}

describe("a job's ending", () => {
  it('a nested child ends while the ledger refuses every write: its parent still gets its result and ends, `done` fires, the manager goes idle; once writes work, the disk shows the child handed over', async () => {
    const thrown = watchProcess(cleanup);
    const faults = hostFaultWarnings();
    const sim = await startSim(cleanup);
    const { file, store, failWrites } = failableLedger(cleanup);
    const manager = watchManager(new BackgroundManager({ config: makeConfig(sim, await makeWorkspace(cleanup), { maxDepth: 2 }), store: store.jobs('s') }));
    cleanup.add(() => manager.close({ timeoutMs: 2_000 }));
    const done: string[] = [];
    manager.on('done', (record) => done.push(record.id));
    // The child's spawn is on disk (a spawn is a strict write); from then on every write fails.
    manager.on('spawned', (record) => record.parentJobId && failWrites(true));

    const top = manager.spawn({ task: `Delegate: ${LEAF}`, label: 'top' });
    // Bounded, so a wedged ending fails here with a reason instead of at the test's timeout.
    const settled = await settlesWithin(ended(manager, top.id), 30_000);
    expect(settled, 'the parent never ended: its child result never reached it').toBe(true);
    expect(await settlesWithin(manager.onIdle(), 10_000), 'the manager never went idle').toBe(true);

    const child = manager.jobs().find((job) => job.parentJobId === top.id);
    expect(child).toMatchObject({ state: 'ended', status: 'ok' });
    expect(manager.get(top.id)).toMatchObject({ state: 'ended', status: 'ok', children: [child?.id], childrenOnEnd: 'waited' });
    // The child's result went into its parent's conversation, and was handed over once.
    const header = `job ${child?.id}, status ok`;
    expect(sim.requests.some((r) => messagesOf(r).some((m) => m.role === 'user' && String(m.content).includes(header)))).toBe(true);
    expect(child?.deliveredInTurn).toBeDefined();
    expect(done.sort()).toEqual([top.id, child?.id].sort());
    expect(manager.ledgerHealth()).toMatchObject({ ok: false });
    expect(faults).toEqual([]);

    // The disk comes back: the next write takes what was kept in memory along.
    failWrites(false);
    expect(new Deliveries(manager).drain(1).map((r) => r.id)).toEqual([top.id]);
    expect(manager.ledgerHealth()).toMatchObject({ ok: true, unsaved: 0 });
    await manager.close();
    const reread = openSqliteLedger(file);
    const onDisk = reread
      .jobs('s')
      .load()
      .jobs.map((j) => [j.record.id, j.record.state, j.record.status, j.record.deliveredInTurn !== undefined]);
    reread.close();
    expect(onDisk).toEqual([
      [top.id, 'ended', 'ok', true],
      [child?.id, 'ended', 'ok', true],
    ]);
    expect(thrown).toEqual([]);
  });

  it('destroy() with 2,000 jobs queued behind one slot: each ends cancelled once, none is left, and no ending overflows the stack (no host fault)', async () => {
    const thrown = watchProcess(cleanup);
    const faults = hostFaultWarnings();
    const sim = await startSim(cleanup, { latencyMs: 50 });
    const manager = makeManager(makeConfig(sim, await makeWorkspace(cleanup), { maxConcurrent: 1 }), cleanup);
    const endings = new Map<string, number>();
    manager.on('done', (record) => endings.set(record.id, (endings.get(record.id) ?? 0) + 1));
    const ids = Array.from({ length: 2_000 }, (_, n) => manager.spawn({ task: `${LEAF} (${n})`, label: `job ${n}` }).id);
    // The first runs; the other 1,999 wait for its slot.
    await startedJob(manager, ids[0] as string);

    const report = await manager.destroy();
    expect(report.cancelled).toHaveLength(2_000);
    expect(faults).toEqual([]);
    expect(manager.pending).toBe(0);
    expect(manager.count('ended')).toBe(2_000);
    expect(manager.jobs().filter((r) => r.status !== 'cancelled')).toEqual([]);
    expect([...endings.values()].every((n) => n === 1) && endings.size === 2_000).toBe(true);
    expect(thrown).toEqual([]);
  });

  it('a wave member restarted after it ended leaves its wave: the wave still fires (once, without it), and the restarted job ends as a job of its own', async () => {
    const sim = await startSim(cleanup);
    const manager = makeManager(makeConfig(sim, await makeWorkspace(cleanup), { maxConcurrent: 2 }), cleanup);
    const waves: string[][] = [];
    manager.on('wave-done', ({ wave, jobs }) => wave === 1 && waves.push(jobs.map((j) => j.id)));
    const [a, b] = ['a', 'b'].map((label) => manager.spawn({ task: `${LEAF} (${label})`, label, wave: 1 }).id) as [string, string];
    await Promise.all([ended(manager, a), ended(manager, b)]);
    manager.restart(a);
    // The turn that spawned them is over: the wave may end now.
    new Deliveries(manager).sealWave(1);
    const again = await ended(manager, a);
    expect(await settlesWithin(manager.onIdle(), 10_000)).toBe(true);
    expect(waves).toEqual([[b]]);
    expect(again).toMatchObject({ state: 'ended', status: 'ok', wave: null });
    expect(new Deliveries(manager).drain(2).map((r) => r.id)).toEqual([a, b]);
  });
});
