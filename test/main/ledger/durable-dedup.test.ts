/**
 * De-duplication across a restart on the durable ledger (docs/delivery.md "De-duplication",
 * docs/durability.md): the dedup tables are rebuilt from the keys the stored specs hold, so an
 * identical spawn after the restart joins the job re-run by recovery, reuses a result from
 * before it, and a spawn that opted out before it still joins nothing. Real pool, sim model.
 */
import { describe, expect, it } from 'vitest';
import { BackgroundManager } from '../../../src/main/jobs/manager.js';
import { openSqliteLedger } from '../../../src/main/ledger/sqlite-store.js';
import { ended, ledgerFile, makeConfig, makeWorkspace, runsOf, startSim, useCleanup, waitFor, watchManager } from '../../helpers/index.js';

const cleanup = useCleanup();

describe('durable ledger: de-duplication survives a restart', () => {
  it('after a restart an identical spawn reuses a result from before it, attaches to the re-run job, and one that opted out stays alone; nothing runs twice', async () => {
    const sim = await startSim(cleanup, { latencyMs: 5 });
    const file = ledgerFile(cleanup);
    const config = makeConfig(
      sim,
      await makeWorkspace(cleanup),
      { maxConcurrent: 4 },
      { tools: ['read_file', 'grep', 'find_files', 'list_dir'], ledger: { path: file }, dedup: { attach: true, reuseWithinSeconds: 600 } },
    );
    const REUSED = 'Where is the retry backoff implemented? (asked before the restart)';
    const ATTACHED = 'Where is the LRU cache? (running at the restart)';
    const OPTED_OUT = 'What does the cache evict? (spawned with dedup off)';

    const firstStore = openSqliteLedger(file);
    const first = watchManager(new BackgroundManager({ config, store: firstStore.jobs('s') }));
    const reused = first.spawn({ task: REUSED, label: 'reused' }).id;
    const optedOut = first.spawn({ task: OPTED_OUT, label: 'opted out' }, { dedup: false }).id;
    expect(await ended(first, reused)).toMatchObject({ status: 'ok' });
    expect(await ended(first, optedOut)).toMatchObject({ status: 'ok' });
    // Its first model call never answers: it is running when the process goes.
    sim.setOptions({ faults: { [sim.requestCount + 1]: { kind: 'hang_before_headers' } } });
    const attached = first.spawn({ task: ATTACHED, label: 'attached' }).id;
    await waitFor(() => runsOf(sim, ATTACHED) === 1, 'the running job’s model call');
    // A close without drain leaves it unfinished on disk (its ending by the close stays in memory).
    await first.close({ timeoutMs: 2_000 });
    firstStore.close();
    sim.setOptions({ faults: {} });

    const store = openSqliteLedger(file);
    cleanup.add(() => store.close());
    const manager = watchManager(new BackgroundManager({ config, store: store.jobs('s') }));
    cleanup.add(() => manager.close({ timeoutMs: 2_000 }));
    expect(manager.recovery?.rerun).toEqual([attached]);

    // Case and spacing aside, the same requests as before the restart.
    const again = manager.spawn({ task: `  ${REUSED.toUpperCase()} `, label: 'reused again' });
    expect(again).toMatchObject({ id: reused, joined: 'reused' });
    const join = manager.spawn({ task: ATTACHED, label: 'attached again' });
    expect(join).toMatchObject({ id: attached, joined: 'attached' });
    const alone = manager.spawn({ task: OPTED_OUT, label: 'opted out again' });
    expect(alone.id).not.toBe(optedOut);
    expect(alone.joined).toBeUndefined();

    expect(await ended(manager, attached)).toMatchObject({ status: 'ok' });
    await ended(manager, alone.id);
    // The re-run job ended under its key: reusable now too.
    expect(manager.spawn({ task: ATTACHED, label: 'after the re-run' })).toMatchObject({ id: attached, joined: 'reused' });
    expect(manager.jobs().map((r) => r.id)).toEqual([reused, optedOut, attached, alone.id]);
    // Runs the sim saw: the reused job once, the re-run job twice (cut by the restart, then once), the opted-out task twice.
    expect(runsOf(sim, REUSED)).toBe(1);
    expect(runsOf(sim, ATTACHED)).toBe(2);
    expect(runsOf(sim, OPTED_OUT)).toBe(2);
    // And nothing else ran (a first model request has the system prompt and the task only).
    expect(runsOf(sim, '')).toBe(5);
  });
});
