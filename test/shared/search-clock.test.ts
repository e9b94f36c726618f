/**
 * grep's and find_files' time limit (`searchTimeoutMs`) on a thread whose loop other jobs hold
 * (issue 23: 10,000+ jobs on a `shared` thread, 2-5 % of jobs failed with a search timeout, their
 * own work a few milliseconds; in one run every search failed). The limit counts the search's own
 * work in full and each of its waits as `2 × TIMINGS.searchWaitTickMs` at most (steppedDeadline,
 * the tick rule of the tool timeout). The loop is held by a chain of synchronous holds, each
 * queued with setImmediate as the last one ends, as jobs sharing the thread do: how busy the
 * machine is changes how long things take, not which way the assertions go.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { steppedDeadline } from '../../src/shared/abort.js';
import { TIMINGS } from '../../src/shared/fixed-limits.js';
import { findFilesTool, grepTool } from '../../src/shared/tools/index.js';
import { useCleanup } from '../helpers/cleanup.js';
import { tempWorkspace } from '../helpers/config.js';
import { callTool, toolContext, toolError } from '../helpers/sandbox.js';

const cleanup = useCleanup();

const parked = new Int32Array(new SharedArrayBuffer(4));
/**
 * Holds this thread's event loop for `ms`, as a synchronous run of other work does, but without
 * the CPU: Atomics.wait blocks the thread (nothing wakes it) where a busy loop would take a core
 * from the files beside this one. The deadlines read wall time, which runs on the same.
 */
function hold(ms: number): void {
  const until = performance.now() + ms;
  // A wait may end early (spurious wake-ups are allowed): wait out the rest.
  for (let left = ms; left > 0; left = until - performance.now()) Atomics.wait(parked, 0, 0, left);
}

/** Other jobs on the thread: a hold of `turnMs` in every turn of the loop until stopped. */
function holdLoopInTurns(turnMs: number): { stop(): void; readonly turns: number } {
  let stopped = false;
  let turns = 0;
  const turn = () => {
    if (stopped) return;
    turns++;
    hold(turnMs);
    setImmediate(turn);
  };
  setImmediate(turn);
  cleanup.add(() => void (stopped = true));
  return {
    stop: () => void (stopped = true),
    get turns() {
      return turns;
    },
  };
}

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));
const expired = () => new Error('expired');
/** The most one wait counts for. */
const WAIT_MAX_MS = 2 * TIMINGS.searchWaitTickMs;

function limitsWith(ws: string, searchTimeoutMs: number) {
  return toolContext(ws, { limits: { ...toolContext(ws).limits, searchTimeoutMs } });
}

describe('steppedDeadline', () => {
  it('a wait on a loop held by other work counts 2 × tickMs at most; the steps count in full', async () => {
    const held = holdLoopInTurns(100);
    const deadline = steppedDeadline(1_000, TIMINGS.searchWaitTickMs, expired);
    const start = performance.now();
    for (let i = 0; i < 10; i++) {
      deadline.check();
      hold(5); // the work's own step, after its last check
      await nextTurn();
    }
    held.stop();
    // Ten waits behind 100 ms holds, and ten steps of 5 ms: over a second of wall time, past the limit ...
    expect(performance.now() - start).toBeGreaterThan(1_000);
    // ... yet the limit is not reached (about 10 × (20 + 5) ms counted), and the steps counted in full.
    expect(() => deadline.check()).not.toThrow();
    expect(deadline.spentMs).toBeGreaterThanOrEqual(10 * 5);
  });

  it("the work's own step counts in full, however long, also the part after its last check", async () => {
    const deadline = steppedDeadline(250, TIMINGS.searchWaitTickMs, expired);
    deadline.check();
    hold(300);
    await nextTurn();
    expect(deadline.spentMs).toBeGreaterThanOrEqual(300);
    expect(() => deadline.check()).toThrow('expired');
  });

  it('on a free loop it is wall time: checks in a long synchronous run throw at the limit', () => {
    const deadline = steppedDeadline(100, TIMINGS.searchWaitTickMs, expired);
    const start = performance.now();
    let checks = 0;
    expect(() => {
      for (;;) {
        checks++;
        deadline.check();
      }
    }).toThrow('expired');
    // Never ahead of wall time.
    expect(performance.now() - start).toBeGreaterThanOrEqual(100);
    expect(checks).toBeGreaterThan(1);
  });
});

describe('grep and find_files on a thread held by other jobs', () => {
  it.each([
    ['grep', grepTool, { pattern: 'needle' }, 'src/a.ts:1: const needle = 1;\nsrc/deep/c.ts:1: export const needle = 3;'],
    ['find_files', findFilesTool, { pattern: '**/*.ts' }, 'src/a.ts\nsrc/b.ts\nsrc/deep/c.ts\n[3 files]'],
  ] as const)('%s: a small search whose waits span more wall time than its limit ends with its answer, not TOOL_TIMEOUT', async (_name, tool, args, answer) => {
    const ws = tempWorkspace(
      {
        'src/a.ts': 'const needle = 1;\n',
        'src/b.ts': 'const hay = 2;\n',
        'src/deep/c.ts': 'export const needle = 3;\n',
        'docs/d.md': '# no\n',
      },
      cleanup,
    );
    const limitMs = 500;
    // Each turn of the loop holds it 100 ms: every wait of the search (an open, a folder read) lasts that
    // long. About 30 turns here: 3 s of wall time in the search; its 9 or so waits are counted about
    // 9 × 20 ms (by wall time they would be 900 ms, past the limit).
    const held = holdLoopInTurns(100);
    const start = performance.now();
    const out = await callTool(tool, args, limitsWith(ws, limitMs)).finally(() => held.stop());
    // The search spanned more than its limit of wall time (so a wall clock would have stopped it) ...
    expect(performance.now() - start).toBeGreaterThan(limitMs);
    // ... and still gave the whole answer.
    expect(out).toBe(answer);
  });

  it('a search that needs many turns of the held loop still ends with TOOL_TIMEOUT', async () => {
    const ws = tempWorkspace({}, cleanup);
    // 30 folders of 20 files: a wait or more per folder, each counted up to WAIT_MAX_MS.
    for (let d = 0; d < 30; d++) {
      mkdirSync(path.join(ws, `d${d}`));
      for (let f = 0; f < 20; f++) writeFileSync(path.join(ws, `d${d}`, `f${f}.txt`), 'hay\n');
    }
    const limitMs = 5 * WAIT_MAX_MS;
    for (const [tool, args] of [
      [grepTool, { pattern: 'needle' }],
      [findFilesTool, { pattern: '**/*.md' }],
    ] as const) {
      // 50 ms a turn: each wait still counts its 2 × tickMs (20 ms), so about as many turns end it.
      const held = holdLoopInTurns(50);
      const error = await toolError(callTool(tool, args, limitsWith(ws, limitMs)).finally(() => held.stop()));
      expect(error.code).toBe('TOOL_TIMEOUT');
      expect(error.message).toMatch(new RegExp(`${tool.name} stopped after its ${limitMs} ms time limit`));
    }
  });

  it('a huge search on a free loop still stops at its limit', async () => {
    const ws = tempWorkspace({}, cleanup);
    // 40 files of 50,000 short lines (each checked against the limit): far more work than 50 ms (0.6 s here).
    const text = 'hay and more hay\n'.repeat(50_000);
    for (let f = 0; f < 40; f++) writeFileSync(path.join(ws, `f${f}.txt`), text);
    const limitMs = 50;
    const start = performance.now();
    const error = await toolError(callTool(grepTool, { pattern: 'needle' }, limitsWith(ws, limitMs)));
    expect(error.code).toBe('TOOL_TIMEOUT');
    // Counted time is never ahead of wall time.
    expect(performance.now() - start).toBeGreaterThanOrEqual(limitMs);
  });
});
