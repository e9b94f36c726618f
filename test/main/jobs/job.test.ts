/**
 * Invariants of one job's object and its table: an ending happens once, a throw in it is
 * reported (never thrown), and a job the ledger forgot leaves the table and the job tree.
 */
import { describe, expect, it, vi } from 'vitest';
import { DeliveryLedger, type JobEnding } from '../../../src/main/ledger/ledger.js';
import { Job, type JobContext } from '../../../src/main/jobs/job.js';
import { JobTable, type TableHost } from '../../../src/main/jobs/job-table.js';
import type { JobSpec } from '../../../src/shared/protocol.js';

const ending: JobEnding = { status: 'ok', endedBy: 'completed', resultText: 'done', usage: {}, iterations: 1 };

function setup(retention = {}) {
  const ledger = new DeliveryLedger(retention, undefined, undefined, (id) => table.forget(id));
  const ctx = { ledger, durable: false, moved: vi.fn(), completeEnding: (_job, e) => e, ended: vi.fn(), reportFault: vi.fn() } satisfies JobContext;
  const table: JobTable = new JobTable({ context: ctx } as unknown as TableHost);
  const add = (id: string, options: { parent?: Job; name?: string } = {}) => {
    ledger.add({
      id,
      label: id,
      task: 't',
      role: 'primary',
      wave: null,
      ...(options.name ? { name: options.name } : {}),
      ...(options.parent ? { parentJobId: options.parent.id } : {}),
    });
    return table.add({ id, label: id, task: 't', role: 'primary', attempt: 1 } as JobSpec, 'queued', options);
  };
  return { ledger, ctx, table, add };
}

describe('Job', () => {
  it('ends once: a second end() records nothing, tells nobody and returns undefined', () => {
    const { ledger, ctx, add } = setup();
    const job = add('bg-1');
    expect(job.end(ending)?.state).toBe('ended');
    expect(job.end({ ...ending, status: 'failed' })).toBeUndefined();
    expect(ctx.ended).toHaveBeenCalledTimes(1);
    expect(ledger.get('bg-1')?.status).toBe('ok');
    expect(job.phase).toBe('ended');
    expect(ctx.moved.mock.calls.map(([, from, to]) => `${from}→${to}`)).toEqual(['queued→ended']);
  });

  it('reports a throw inside its ending instead of throwing it, and stays ended', async () => {
    const { ctx, add } = setup();
    const job = add('bg-1');
    const result = job.result();
    ctx.ended.mockImplementation(() => {
      throw new Error('a listener broke');
    });
    expect(() => job.end(ending)).not.toThrow();
    expect(ctx.reportFault).toHaveBeenCalledWith('ending job bg-1', expect.objectContaining({ message: 'a listener broke' }));
    expect((await result).status).toBe('ok');
    expect(job.end(ending)).toBeUndefined();
  });

  it('records first: when the ledger throws on the ending the job stays where it was, no waiter wakes with an unended record, and a later end() ends it', async () => {
    const { ledger, ctx, add } = setup();
    const job = add('bg-1');
    const early = job.result();
    const markEnded = vi.spyOn(ledger, 'markEnded').mockImplementationOnce(() => {
      throw new Error('the ledger broke');
    });
    expect(job.end(ending)).toBeUndefined();
    expect(ctx.reportFault).toHaveBeenCalledWith(
      'recording the ending of job bg-1 (it stays queued)',
      expect.objectContaining({ message: 'the ledger broke' }),
    );
    expect(job.phase).toBe('queued');
    expect(job.isOver).toBe(false);
    expect(ctx.ended).not.toHaveBeenCalled();
    expect(ctx.moved).not.toHaveBeenCalled();
    // A second ending (the disk, or the bug, gone) ends it; the early waiter and a late one get the ended record.
    expect(job.end(ending)?.state).toBe('ended');
    expect(markEnded).toHaveBeenCalledTimes(2);
    expect((await early).state).toBe('ended');
    expect((await job.result()).state).toBe('ended');
    expect(ctx.ended).toHaveBeenCalledTimes(1);
  });

  it('reads delivered from its record', () => {
    const { ledger, add } = setup();
    const job = add('bg-1');
    job.end(ending);
    expect(job.state).toBe('ended');
    ledger.markDelivered('bg-1', 3);
    expect(job.state).toBe('delivered');
  });
});

describe('JobTable', () => {
  it('finds by name the live holder first, else the newest job that had it', () => {
    const { table, add } = setup();
    const first = add('bg-1', { name: 'scout' });
    first.end(ending);
    table.releaseName(first);
    expect(table.find('scout')).toBe(first);
    const second = add('bg-2', { name: 'scout' });
    expect(table.find('scout')).toBe(second);
  });

  it('forgets a job the ledger forgot, and drops it from the job tree', () => {
    const { ledger, table, add } = setup({ keepRecords: 1 });
    const parent = add('bg-1');
    const child = add('bg-2', { parent, name: 'kid' });
    const other = add('bg-3', { parent });
    expect(parent.links.children).toEqual([child, other]);
    child.end(ending);
    table.releaseName(child);
    ledger.markDelivered('bg-2', 1);
    other.end(ending);
    // A second delivered record pushes the first out (keepRecords 1): the ledger forgets bg-2.
    ledger.markDelivered('bg-3', 1);
    expect(ledger.get('bg-2')).toBeUndefined();
    expect(table.get('bg-2')).toBeUndefined();
    expect(table.find('kid')).toBeUndefined();
    expect(parent.links.children).toEqual([other]);
    expect(child.links.parent).toBeUndefined();
  });
});
