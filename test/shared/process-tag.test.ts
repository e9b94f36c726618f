/**
 * The orphan sweep (a job's tagged processes, killed when its thread died or was stopped): right
 * processes killed, and the jobs of one burst share one pass over /proc with a bounded number of
 * reads at once. Before, each job read every /proc/<pid>/environ at once: a shared thread that
 * died with thousands of jobs ran the host out of descriptors. Real processes; /proc reads counted.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it, vi } from 'vitest';
import { waitFor } from '../helpers/cleanup.js';

const reads = vi.hoisted(() => ({ total: 0, inFlight: 0, peak: 0 }));

vi.mock('node:fs/promises', async (original) => {
  const fs = await original<typeof import('node:fs/promises')>();
  return {
    ...fs,
    readFile: async (...args: Parameters<typeof fs.readFile>) => {
      reads.total++;
      reads.inFlight++;
      reads.peak = Math.max(reads.peak, reads.inFlight);
      try {
        return await fs.readFile(...args);
      } finally {
        reads.inFlight--;
      }
    },
  };
});

const { killTagged, PROCESS_TAG_VAR } = await import('../../src/shared/tools/process-tag.js');

function sleeper(tag?: string): ChildProcess {
  const env = { ...process.env, ...(tag === undefined ? {} : { [PROCESS_TAG_VAR]: tag }) };
  return spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)'], { env, stdio: 'ignore' });
}

function exited(child: ChildProcess): Promise<NodeJS.Signals | null> {
  return new Promise((resolve) =>
    child.exitCode !== null || child.signalCode !== null ? resolve(child.signalCode) : child.once('exit', (_code, signal) => resolve(signal)),
  );
}

describe('killTagged', () => {
  it('kills the tagged processes asked for, and no other', async () => {
    const tag = `t${process.pid}-${Date.now()}`;
    const [a, b, other, untagged] = [sleeper(`${tag}-a`), sleeper(`${tag}-b`), sleeper(`${tag}-other`), sleeper()];
    try {
      // Tagged once it has exec'd (before, a forked child still shows this process's environment).
      for (const [child, suffix] of [
        [a, 'a'],
        [b, 'b'],
        [other, 'other'],
      ] as const) {
        await waitFor(
          () => readFileSync(`/proc/${child?.pid}/environ`, 'latin1').includes(`${PROCESS_TAG_VAR}=${tag}-${suffix}\0`),
          `process ${suffix} to start`,
        );
      }
      const [killedA, killedB] = await Promise.all([killTagged(`${tag}-a`), killTagged(`${tag}-b`)]);
      expect([killedA, killedB]).toEqual([1, 1]);
      expect(await exited(a)).toBe('SIGKILL');
      expect(await exited(b)).toBe('SIGKILL');
      expect(other?.exitCode).toBeNull();
      expect(other?.signalCode).toBeNull();
      expect(untagged?.signalCode).toBeNull();
      // A prefix of a tag is not that tag.
      expect(await killTagged(tag)).toBe(0);
    } finally {
      for (const child of [a, b, other, untagged]) child?.kill('SIGKILL');
    }
  });

  it('sweeps /proc once for a burst of 500 jobs, with a bounded number of reads at once', async () => {
    const processes = readdirSync('/proc').filter((entry) => /^\d+$/.test(entry)).length;
    reads.total = 0;
    reads.peak = 0;
    const counts = await Promise.all(Array.from({ length: 500 }, (_, i) => killTagged(`no-such-job-${i}`)));
    expect(counts.every((n) => n === 0)).toBe(true);
    // One pass (a few processes may come and go meanwhile), not one per job.
    expect(reads.total).toBeLessThan(processes * 2 + 20);
    expect(reads.peak).toBeLessThanOrEqual(64);
  });
});
