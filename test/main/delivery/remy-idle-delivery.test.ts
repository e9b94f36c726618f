/**
 * Issue 38, C3: with `delivery.format: "remy"` a job that ends while the parent is idle is
 * delivered at once, in a hidden automated follow-up of its own, not held for its wave; the
 * `forkpool` format keeps the wave's one follow-up. The parent on this thread, its jobs in the
 * real Piscina pool, the sim as the model behind two holding proxies that order the scenario by
 * events: every job's model call waits until the spawning turn is over, and the second job's
 * until the first has been delivered.
 */
import { describe, expect, it } from 'vitest';
import { AgentSession } from '../../../src/main/session/agent-session.js';
import type { SessionEvents } from '../../../src/main/session/agent-session.js';
import type { FollowUpCause } from '../../../src/main/views/follow-up.js';
import { AUTOMATED_RESULTS_MARKER, BACKGROUND_PROMPT_MARKER } from '../../../src/shared/prompts.js';
import { ended, makeConfig, makeWorkspace, startHoldingProxy, startSim, useCleanup, waitFor, watchManager } from '../../helpers/index.js';

const cleanups = useCleanup();
const HEAVY_TIMEOUT_MS = 240_000;
const TWO_QUESTIONS = 'Please research these:\n1. Where is the retry backoff implemented?\n2. Where is the LruCache class defined?';

async function twoJobsOneHeld(format: 'forkpool' | 'remy') {
  const root = await makeWorkspace(cleanups);
  const sim = await startSim(cleanups);
  const isJob = (body: string) => body.includes(BACKGROUND_PROMPT_MARKER);
  // Inner: the LruCache job's calls, until released. Outer: every job's, until turn 1 is over.
  const slowGate = await startHoldingProxy(cleanups, sim.url, (body) => isJob(body) && body.includes('LruCache'));
  const turnGate = await startHoldingProxy(cleanups, slowGate.url, isJob);
  const session = new AgentSession({ config: makeConfig(undefined, root, {}, { baseUrl: turnGate.url, delivery: { format } }), closeExecutor: true });
  watchManager(session.manager);
  cleanups.add(() => session.close({ timeoutMs: 2_000 }));
  const followUps: SessionEvents['follow-up'][0][] = [];
  session.on('follow-up', (e) => followUps.push(e));
  const starts: Array<{ turn: number; followUp: boolean; cause?: FollowUpCause | undefined }> = [];
  session.on('parent', (e) => (e.type === 'turn_start' ? starts.push({ turn: e.turn, followUp: e.followUp, cause: e.cause }) : undefined));
  const turnsDone: number[] = [];
  session.on('turn-result', (r) => turnsDone.push(r.turn));

  await session.submit(TWO_QUESTIONS);
  const jobs = session.manager.jobs();
  expect(jobs).toHaveLength(2);
  const slow = jobs.find((j) => j.task.includes('LruCache'));
  const fast = jobs.find((j) => !j.task.includes('LruCache'));
  if (!slow || !fast) throw new Error(`expected one LruCache job: ${jobs.map((j) => j.task).join(' | ')}`);
  // The parent is idle now (turn 1 returned); only then may the jobs' calls go through.
  turnGate.release();
  await ended(session.manager, fast.id);
  return { session, slowGate, fast, slow, followUps, starts, turnsDone };
}

describe('delivery format "remy": a job that ends while the parent is idle', () => {
  it(
    'is delivered at once in a hidden follow-up of its own while the rest of its wave runs; the rest comes in the next',
    async () => {
      const { session, slowGate, fast, slow, followUps, starts, turnsDone } = await twoJobsOneHeld('remy');
      // Asked for in the same step as the job's end: the parent was idle.
      expect(followUps).toEqual([{ reason: 'idle', queued: false }]);
      await waitFor(() => turnsDone.includes(2), 'follow-up turn 2 over', { timeoutMs: 90_000 });
      expect(session.manager.get(fast.id)?.deliveredInTurn).toBe(2);
      expect(starts[1]).toMatchObject({ turn: 2, followUp: true, cause: { reasons: [{ kind: 'idle' }], delivered: { agents: 1, user: 0 } } });
      // Its wave is not over: the other job is still running (its model call held).
      expect(session.manager.get(slow.id)?.state).not.toBe('ended');
      const followUpInput = session.agent.session.messages
        .flatMap((m) => (m.role === 'user' && typeof m.content === 'string' ? [m.content] : []))
        .filter((text) => text.startsWith(AUTOMATED_RESULTS_MARKER));
      expect(followUpInput).toHaveLength(1);
      expect(followUpInput[0]).toContain(`job_id="${fast.id}"`);
      expect(followUpInput[0]).not.toContain(`job_id="${slow.id}"`);

      slowGate.release();
      await ended(session.manager, slow.id);
      await session.onIdle();
      expect(session.manager.get(slow.id)?.deliveredInTurn).toBe(3);
      expect(starts.map((s) => [s.turn, s.followUp])).toEqual([
        [1, false],
        [2, true],
        [3, true],
      ]);
    },
    HEAVY_TIMEOUT_MS,
  );

  it(
    'the forkpool format holds it for its wave: one follow-up when the last job ends',
    async () => {
      const { session, slowGate, fast, slow, followUps, starts } = await twoJobsOneHeld('forkpool');
      // A tick after its end: no follow-up asked for, nothing delivered.
      await new Promise((resolve) => setImmediate(resolve));
      expect(followUps).toEqual([]);
      expect(session.manager.get(fast.id)?.deliveredInTurn).toBeUndefined();

      slowGate.release();
      await ended(session.manager, slow.id);
      await session.onIdle();
      expect(followUps).toEqual([{ reason: 'wave', queued: false }]);
      expect([session.manager.get(fast.id)?.deliveredInTurn, session.manager.get(slow.id)?.deliveredInTurn]).toEqual([2, 2]);
      expect(starts.map((s) => [s.turn, s.followUp])).toEqual([
        [1, false],
        [2, true],
      ]);
    },
    HEAVY_TIMEOUT_MS,
  );
});
