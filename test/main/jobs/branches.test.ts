/**
 * Issue 38, B20: each job's branch, `<parent-branch>.bg.<name>` (the seed's composeBranch: empty
 * for the top level, so `bg.<name>`; a nested job under its parent job's). Kept as an audit trail
 * in the record, the manager's events, the transcript page and every transition row of the
 * durable ledger. Real pool, real nesting over the job's port, the sim as the model.
 */
import { describe, expect, it } from 'vitest';
import { BackgroundManager } from '../../../src/main/jobs/manager.js';
import { Deliveries } from '../../../src/main/delivery/deliveries.js';
import { openSqliteLedger } from '../../../src/main/ledger/sqlite-store.js';
import type { JobRecord } from '../../../src/main/ledger/ledger.js';
import { branchSegment, composeBranch } from '../../../src/shared/branch.js';
import { ended, ledgerFile, makeConfig, makeWorkspace, RawDatabase, startSim, useCleanup, watchManager } from '../../helpers/index.js';

const cleanup = useCleanup();
const LEAF = 'Where is the retry backoff implemented? Answer from the files in the workspace.';

describe('job branches', () => {
  it('compose as <parent>.bg.<name|agent|id>, a dot in a name kept out of the path', () => {
    expect(composeBranch('', 'scout')).toBe('bg.scout');
    expect(composeBranch('bg.scout', 'reader')).toBe('bg.scout.bg.reader');
    expect(branchSegment({ name: 'scan', agent: 'scout', id: 'bg-1' })).toBe('scan');
    expect(branchSegment({ agent: 'scout', id: 'bg-1' })).toBe('scout');
    expect(branchSegment({ id: 'bg-1' })).toBe('bg-1');
    expect(branchSegment({ name: 'v1.2', id: 'bg-1' })).toBe('v1-2');
  });

  it("a nested job's branch nests under its parent's: in the record, the events, the transcript and the ledger's transitions", async () => {
    const sim = await startSim(cleanup);
    const file = ledgerFile(cleanup);
    const workspace = await makeWorkspace(cleanup);
    const ledger = openSqliteLedger(file);
    cleanup.add(() => ledger.close());
    const manager = watchManager(
      new BackgroundManager({ config: makeConfig(sim, workspace, { maxDepth: 3 }, { ledger: { path: file } }), store: ledger.jobs('s') }),
    );
    cleanup.add(() => manager.close({ timeoutMs: 2_000 }));
    const seen = new Map<string, Set<string | undefined>>();
    for (const event of ['spawned', 'started', 'done'] as const) {
      manager.on(event, (record: Readonly<JobRecord>) => seen.set(`${event} ${record.id}`, new Set([record.branch])));
    }

    const top = manager.spawn({ task: `Delegate: Delegate: ${LEAF}`, label: 'top', name: 'lead', wave: 1 });
    new Deliveries(manager).sealWave(1);
    await ended(manager, top.id);
    await manager.onIdle();
    const jobs = manager.jobs();
    expect(jobs).toHaveLength(3);
    const [a, b, c] = [1, 2, 3].map((depth) => jobs.find((j) => (j.depth ?? 1) === depth));
    expect(a?.branch).toBe('bg.lead');
    expect(b?.branch).toBe(`bg.lead.bg.${b?.id}`);
    expect(c?.branch).toBe(`bg.lead.bg.${b?.id}.bg.${c?.id}`);
    for (const job of [a, b, c]) {
      if (!job) throw new Error('a level of the tree is missing');
      for (const event of ['spawned', 'started', 'done']) expect(seen.get(`${event} ${job.id}`), `${event} ${job.id}`).toEqual(new Set([job.branch]));
      expect(manager.transcript(job.id)?.branch).toBe(job.branch);
    }

    // Every transition row the durable ledger wrote names its job's branch.
    const raw = new RawDatabase(file);
    cleanup.add(() => raw.close());
    const rows = raw.prepare('SELECT id, state, branch FROM transitions ORDER BY rowid').all() as Array<{ id: string; state: string; branch: string | null }>;
    expect(rows.length).toBeGreaterThanOrEqual(9);
    for (const row of rows) expect(row.branch, `${row.id} ${row.state}`).toBe(jobs.find((j) => j.id === row.id)?.branch);
  });
});
