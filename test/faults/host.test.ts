/**
 * Issue 18, "the host must not die": public calls and storage faults that used to end the
 * embedding process (an "ended twice" thrown in the event loop, an unhandled rejection at a
 * job's end) or lose a result. Real pool, real workers, the simulator on loopback; storage
 * faults are real SQLite failures on the real ledger file (see storage-faults.test.ts).
 */
import { describe, expect, it } from 'vitest';
import {
  ended,
  makeConfig,
  makeManager,
  makeWorkspace,
  recordEvents,
  RESEARCH_TASK,
  startedJob,
  startSim,
  useCleanup,
  watchProcess,
  okEnding,
} from '../helpers/index.js';
import { engineOf } from '../../src/main/jobs/manager.js';

describe('completeAttempt from outside', () => {
  const cleanup = useCleanup();

  it('refuses a queued job (attempt 0) with ATTEMPT_NOT_RUNNING; it then runs and ends once, nothing thrown in the event loop', async () => {
    const thrown = watchProcess(cleanup);
    const sim = await startSim(cleanup, { latencyMs: 30 });
    const manager = makeManager(makeConfig(sim, await makeWorkspace(cleanup), { maxConcurrent: 1 }), cleanup);
    const events = recordEvents(manager);
    const first = manager.spawn({ task: `${RESEARCH_TASK} (1)`, label: 'first' });
    const second = manager.spawn({ task: `${RESEARCH_TASK} (2)`, label: 'second' });
    await startedJob(manager, first.id);
    expect(manager.get(second.id)?.state).toBe('queued');

    const refused = engineOf(manager).completeAttempt(second.id, 0, okEnding('forged'));
    expect(refused).toMatchObject({ accepted: false, reason: 'not-running' });
    expect(!refused.accepted && refused.error.code).toBe('ATTEMPT_NOT_RUNNING');
    expect(engineOf(manager).completeAttempt('bg-999', 1, okEnding('x'))).toMatchObject({ accepted: false, reason: 'unknown', error: { code: 'JOB_UNKNOWN' } });

    const [a, b] = await Promise.all([ended(manager, first.id), ended(manager, second.id)]);
    expect([a.status, b.status]).toEqual(['ok', 'ok']);
    expect(b.resultText).not.toBe('forged');
    await manager.onIdle();
    // Each job started once and ended once.
    for (const id of [first.id, second.id]) {
      expect(events.filter((e) => e.id === id).map((e) => e.type)).toEqual(['spawned', 'started', 'done']);
    }
    expect(thrown).toEqual([]);
  });

  it('accepts the running attempt once: its own thread is stopped, the job ends once with the reported ending; a second report is a duplicate', async () => {
    const thrown = watchProcess(cleanup);
    const sim = await startSim(cleanup, { latencyMs: 2_000 });
    const manager = makeManager(makeConfig(sim, await makeWorkspace(cleanup)), cleanup);
    const events = recordEvents(manager);
    const job = manager.spawn({ task: RESEARCH_TASK, label: 'remote' });
    const running = await startedJob(manager, job.id);
    expect(engineOf(manager).completeAttempt(job.id, running.attempts - 1, okEnding('old'))).toMatchObject({ accepted: false, reason: 'stale' });
    const accepted = engineOf(manager).completeAttempt(job.id, running.attempts, okEnding('reported'));
    expect(accepted).toMatchObject({ accepted: true, record: { state: 'ended', resultText: 'reported' } });
    expect(engineOf(manager).completeAttempt(job.id, running.attempts, okEnding('again'))).toMatchObject({
      accepted: false,
      reason: 'duplicate',
      error: { code: 'ATTEMPT_NOT_RUNNING' },
    });
    await manager.onIdle();
    await manager.close();
    expect(events.filter((e) => e.id === job.id).map((e) => e.type)).toEqual(['spawned', 'started', 'done']);
    expect(manager.get(job.id)?.resultText).toBe('reported');
    expect(thrown).toEqual([]);
  });
});
