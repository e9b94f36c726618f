/**
 * The ledger's disk fills up in the middle of a run (a real, small tmpfs; needs root and mount
 * permission, else skipped with the reason). The promise: a result that reached the parent (or
 * stdout) is recorded, or the run says it is not and exits 1; no result is printed twice across
 * a run and its --resume. The built CLI runs as a child process (build first).
 */
import path from 'node:path';
import { settlesWithin } from '../../src/shared/abort.js';
import { afterAll, describe, expect, it } from 'vitest';
import { cleanupOf, type Cleanup } from '../helpers/cleanup.js';
import { describeResult, parseJsonLines, requireBuiltCli, spawnCli } from '../helpers/cli.js';
import { tempWorkspace } from '../helpers/config.js';
import { runsOf } from '../helpers/requests.js';
import { startSim } from '../helpers/sim.js';
import { mountSmallDisk, type SmallDisk } from '../helpers/small-disk.js';
import { skipWithout } from '../helpers/system.js';

requireBuiltCli();

// Mounted here to learn whether this machine lets us (else the tests are skipped with the reason).
const disk = mountSmallDisk('4m');
if (!('skip' in disk)) afterAll(() => disk.unmount());

/** A small disk of the test's own, so the tests can fill theirs side by side; unmounted after it. */
function ownDisk(cleanup: Cleanup): SmallDisk {
  const own = mountSmallDisk('4m');
  if ('skip' in own) throw new Error(`a small disk of the test's own: ${own.skip}`);
  cleanup.add(() => own.unmount());
  return own;
}

// Side by side (concurrent): each test fills and frees a disk of its own, with its own CLI processes.
describe.concurrent('a ledger whose disk fills up mid-run', () => {
  if ('skip' in disk && skipWithout('a small tmpfs (root, mount -t tmpfs)', false, disk.skip)) {
    it.skip(`skipped: ${disk.skip}`, () => {});
    return;
  }

  it('run: three jobs end while the disk is full, their follow-up cannot record its delivery: the run says so and exits 1, not 0', async (context) => {
    const cleanup = cleanupOf(context);
    const smallDisk = ownDisk(cleanup);
    smallDisk.free();
    const ledger = path.join(smallDisk.dir, 'run.db');
    const prompt = 'Answer these:\n1. Where is the tool loop implemented?\n2. How are API keys redacted?\n3. Where is the retry backoff?';
    const run = spawnCli(['run', '--sim-latency', '1000', '--ledger', ledger, prompt], { cwd: tempWorkspace({}, cleanup), cleanup, timeoutMs: 90_000 });
    // The three spawns are on disk; then the disk is full: their endings and their delivery are not.
    await run.waitForStderr((err) => (err.match(/ spawned/g) ?? []).length >= 3);
    smallDisk.fill();
    const result = await run.exited;
    smallDisk.free();
    expect(result.stderr.match(/ spawned/g) ?? []).toHaveLength(3);
    expect(result.code, describeResult(result)).toBe(1);
    expect(result.stderr).toMatch(
      /forkpool: 3 background result\(s\) ended but never reached the parent \(the ledger could not record their delivery: .*SQLITE_FULL/,
    );
  });

  it('chat: two jobs end while the disk is full, their follow-up cannot record its delivery; stdin ends: the chat says so and exits 1', async (context) => {
    const cleanup = cleanupOf(context);
    const smallDisk = ownDisk(cleanup);
    smallDisk.free();
    const ledger = path.join(smallDisk.dir, 'chat.db');
    const chat = spawnCli(['chat', '--sim-latency', '1000', '--ledger', ledger], {
      cwd: tempWorkspace({}, cleanup),
      cleanup,
      keepStdinOpen: true,
      timeoutMs: 90_000,
    });
    chat.child.stdin?.write('Where is the retry backoff? Where is the LruCache class?\n');
    await chat.waitForStderr((err) => (err.match(/ spawned in turn 1/g) ?? []).length >= 2);
    smallDisk.fill();
    // Both ended (their follow-up could not record its delivery, so none ran); then the person leaves.
    const bothEnded = await settlesWithin(
      chat.waitForStderr((err) => (err.match(/ bg-\d+ "[^"]*" \w+ in /g) ?? []).length >= 2),
      30_000,
    );
    expect(bothEnded, chat.stderr()).toBe(true);
    chat.child.stdin?.end();
    const result = await chat.exited;
    smallDisk.free();
    expect(result.code, describeResult(result)).toBe(1);
    expect(result.stderr).toMatch(
      /forkpool: 2 background result\(s\) ended but never reached the parent \(the ledger could not record their delivery: .*SQLITE_FULL/,
    );
  });

  it('fanout: results that end while the disk is full are printed only once recorded; the run exits 1 over those it could not record, and --resume prints each of them once', async (context) => {
    const cleanup = cleanupOf(context);
    const smallDisk = ownDisk(cleanup);
    smallDisk.free();
    const ledger = path.join(smallDisk.dir, 'fanout.db');
    const sim = await startSim(cleanup, { latencyMs: 60 });
    const workspace = tempWorkspace({}, cleanup);
    const count = 12;
    const tasks = Array.from({ length: count }, (_, i) => JSON.stringify({ task: `Where is the tool loop? (fan ${i + 1}.)`, label: `t${i + 1}` })).join('\n');
    const args = ['fanout', '-', '--base-url', sim.url, '--workspace', workspace, '--concurrency', '2', '--ledger', ledger, '--no-progress'];
    const first = spawnCli(args, { input: tasks, cleanup, timeoutMs: 120_000 });
    await first.waitForStdout((out) => parseJsonLines(out).length >= 2);
    smallDisk.fill();
    const full = await first.exited;
    smallDisk.free();
    const printedFirst = parseJsonLines(full.stdout) as Array<{ line: number }>;
    const resumed = await spawnCli([...args, '--resume'], { input: tasks, cleanup, timeoutMs: 120_000 }).exited;
    expect(resumed.code, describeResult(resumed)).toBe(0);
    const printedAgain = parseJsonLines(resumed.stdout) as Array<{ line: number; fromLedger?: boolean }>;

    // Every line reported as a new result exactly once across both runs (what the resume reads back from the ledger is marked so).
    const fresh = [...printedFirst.map((r) => r.line), ...printedAgain.filter((r) => !r.fromLedger).map((r) => r.line)].sort((a, b) => a - b);
    expect(fresh).toEqual(Array.from({ length: count }, (_, i) => i + 1));
    // What the first run printed was recorded: read back, never run again.
    for (const { line } of printedFirst) expect(runsOf(sim, `(fan ${line}.)`), `line ${line}`).toBe(1);
    // Some ended while the disk was full: not printed, said so, and the run failed.
    expect(printedFirst.length).toBeLessThan(count);
    expect(full.code, describeResult(full)).toBe(1);
    expect(full.stderr).toMatch(/the ledger cannot record results \(.*SQLITE_FULL/);
    expect(full.stderr).toMatch(/\d+ result\(s\) ended but the ledger could not record them .*: not printed; --resume prints them/);
  }, 240_000);
});
