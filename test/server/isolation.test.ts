/**
 * Crash isolation in the server: a job that runs out of heap and one stuck in synchronous
 * code run in worker threads while `/healthz` is polled back to back. The invariant is that
 * every poll is answered (no poll fails or goes unanswered), not a latency window; the
 * latencies are printed for the record. Then the server still runs a normal job.
 */
import { HEAP_CAP_ABORTS_PROCESS, FAULTY_WORKER, testConfig, useCleanup } from '../helpers/index.js';
import { describe, expect, it } from 'vitest';
import { createExecutor } from '../../src/main/jobs/executor-factory.js';
import { startTestServer } from '../helpers/server.js';

const cleanup = useCleanup();

describe('crash isolation', () => {
  it.skipIf(HEAP_CAP_ABORTS_PROCESS)(
    'answers every /healthz poll while one job runs out of heap and another spins in sync code until its hard stop',
    async () => {
      // The timeout is long enough that the out-of-heap job always dies of its heap first, even on a loaded machine.
      const background = { maxConcurrent: 3, heapMb: 32, timeoutMs: 6_000, cancelGraceMs: 200 };
      const executor = createExecutor(testConfig({ background }), undefined, 'piscina', FAULTY_WORKER);
      const { api, url } = await startTestServer(cleanup, { background }, {}, { executor });
      const started = await api('/v1/jobs', {
        json: {
          tasks: [
            { task: 'FAULT:oom', label: 'oom' },
            { task: 'FAULT:loop', label: 'spin' },
          ],
        },
      });
      expect(started.status).toBe(202);

      const latencies: number[] = [];
      let failures = 0;
      let bothEnded = false;
      const ended = (async () => {
        const results = await Promise.all(['bg-1', 'bg-2'].map(async (id) => (await api(`/v1/jobs/${id}/result?wait=60`)).json() as Promise<any>));
        bothEnded = true;
        return results;
      })();
      while (!bothEnded) {
        const t0 = performance.now();
        try {
          const response = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(30_000) });
          if (response.status !== 200) failures++;
          await response.arrayBuffer();
        } catch {
          failures++;
        }
        latencies.push(performance.now() - t0);
      }
      const [oom, spin] = await ended;
      expect(oom).toMatchObject({ status: 'failed', error: { code: 'WORKER_OUT_OF_MEMORY' } });
      expect(spin).toMatchObject({ status: 'timed_out', endedBy: 'hard', error: { code: 'JOB_TIMEOUT' } });
      expect(failures).toBe(0);
      expect(latencies.length).toBeGreaterThan(0);
      const sorted = [...latencies].sort((a, b) => a - b);
      const pick = (q: number) => (sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number).toFixed(1);
      console.log(`healthz during oom + sync spin: ${latencies.length} polls, all answered; p50 ${pick(0.5)} ms, p99 ${pick(0.99)} ms, max ${pick(1)} ms`);

      // The pool replaced its dead threads: a normal job still runs.
      await api('/v1/jobs', { json: { task: 'Where is the retry backoff implemented?' } });
      const after = (await (await api('/v1/jobs/bg-3/result?wait=60')).json()) as { status: string };
      expect(after.status).toMatch(/ok|partial/);
    },
  );
});
