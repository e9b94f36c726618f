/**
 * The dispatcher's work per event at the cap (issue 23): a fan-out ends thousands of jobs, and
 * each ending pumps. With no speculative job live, a pump at the cap must not copy the live jobs
 * nor scan the queue: counted here as reads of the jobs' `speculation` (what every scan and copy
 * for preemption reads) and as the jobs handed to `preempt`, never as time.
 */
import { describe, expect, it } from 'vitest';
import { Dispatcher, type DispatchHost } from '../../../src/main/jobs/dispatcher.js';
import type { Job, JobPhase } from '../../../src/main/jobs/job.js';
import type { Speculation } from '../../../src/main/ledger/ledger.js';

/** Just what the dispatcher reads of a job; every read of `speculation` is counted. */
function fakeJob(id: string, reads: { n: number }, speculation?: Speculation): Job {
  return {
    id,
    spec: undefined,
    get speculation() {
      reads.n++;
      return speculation;
    },
  } as unknown as Job;
}

function dispatcherAt(cap: number) {
  const handed = { preempts: 0, jobs: 0, launched: [] as Job[] };
  let dispatcher: Dispatcher | undefined;
  const host: DispatchHost = {
    maxConcurrent: cap,
    budgets: { gate: () => ({ kind: 'go' }) },
    // The real engine moves a launched job to `dispatched`, which is what the dispatcher counts.
    launch: (job) => {
      handed.launched.push(job);
      dispatcher?.moved(job, 'queued', 'dispatched');
    },
    closed: () => false,
    stopQueued: () => {},
    idle: () => {},
    preempt: (waiting, live) => {
      handed.preempts++;
      handed.jobs += waiting.length + live.length;
    },
  };
  dispatcher = new Dispatcher(host);
  return { dispatcher, handed };
}

describe('Dispatcher at the cap', () => {
  it('a pump at the cap reads O(1) jobs with no guess live, however long the queue', () => {
    const cap = 100;
    const queued = 5_000;
    const reads = { n: 0 };
    const { dispatcher, handed } = dispatcherAt(cap);
    for (let i = 0; i < cap + queued; i++) dispatcher.enqueue(fakeJob(`j${i}`, reads));
    dispatcher.pump();
    expect(handed.launched).toHaveLength(cap);
    expect(dispatcher.waitingForSlot).toBe(queued);

    // 1,000 endings at the cap: each frees a slot that the next queued job takes, and pumps again
    // with the cap reached (as every `done` of a fan-out does).
    const before = reads.n;
    const endings = 1_000;
    for (let i = 0; i < endings; i++) {
      const job = handed.launched[i] as Job;
      dispatcher.moved(job, 'dispatched' satisfies JobPhase, 'ended');
      dispatcher.pump();
      dispatcher.pump();
    }
    expect(handed.launched).toHaveLength(cap + endings);
    expect(dispatcher.waitingForSlot).toBe(queued - endings);
    // A handful of reads per event (the launched job's moves, the head's check), not the queue's 4,000+.
    expect(reads.n - before).toBeLessThanOrEqual(10 * endings);
    expect(handed.preempts).toBe(0);
    expect(handed.jobs).toBe(0);
  });

  it('with a guess live, preemption still sees it and the real jobs waiting', () => {
    const reads = { n: 0 };
    const { dispatcher, handed } = dispatcherAt(2);
    dispatcher.enqueue(fakeJob('guess', reads, 'pending'));
    dispatcher.enqueue(fakeJob('real-1', reads));
    dispatcher.enqueue(fakeJob('real-2', reads));
    dispatcher.pump();
    // Real jobs first: both take the two slots, the guess waits.
    expect(handed.launched.map((job) => job.id)).toEqual(['real-1', 'real-2']);
    expect(handed.preempts).toBe(0);

    const { dispatcher: second, handed: seen } = dispatcherAt(1);
    second.enqueue(fakeJob('guess', reads, 'pending'));
    second.pump();
    second.enqueue(fakeJob('real', reads));
    second.pump();
    expect(seen.launched.map((job) => job.id)).toEqual(['guess']);
    expect(seen.preempts).toBe(1);
    expect(seen.jobs).toBe(2);
  });
});
