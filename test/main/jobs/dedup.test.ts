/**
 * Spawn de-duplication through the real pool with the sim as the model: an identical spawn
 * joins a running job, reuses a fresh result with its age, never for an agent that can change
 * things, and two parent jobs' identical children run once.
 */
import { describe, expect, it } from 'vitest';
import { AgentSession } from '../../../src/main/session/agent-session.js';
import type { JobRecord } from '../../../src/main/ledger/ledger.js';
import { reusedResultText } from '../../../src/main/delivery/result-pages.js';
import type { ForkpoolConfigInput } from '../../../src/shared/config.js';
import { BACKGROUND_RESULTS_OPEN } from '../../../src/shared/prompts.js';
import type { SimServer } from '../../../src/sim/index.js';
import {
  messagesOf,
  useCleanup,
  ended,
  makeConfig,
  makeManager,
  makeWorkspace,
  startSim,
  startedJob,
  watchManager,
  toolResultsSent,
  requestsForTask,
} from '../../helpers/index.js';
import { Deliveries } from '../../../src/main/delivery/deliveries.js';

const cleanups = useCleanup();
/** Several jobs and parent turns each: generous, for a machine with every core busy. */
const HEAVY_TIMEOUT_MS = 240_000;

/** Tools that only read: jobs of a fork with these may be de-duplicated. */
const READ_ONLY: Partial<ForkpoolConfigInput> = { tools: ['read_file', 'grep', 'find_files', 'list_dir'] };
const LEAF = 'Where is the retry backoff implemented? Answer from the files in the workspace.';

/** A parent session over the real pool whose fork reads only, closed after the test. */
function readOnlySession(sim: SimServer, root: string): AgentSession {
  const session = new AgentSession({ config: makeConfig(sim, root, {}, READ_ONLY), closeExecutor: true });
  watchManager(session.manager);
  cleanups.add(() => session.close({ timeoutMs: 2_000 }));
  return session;
}

function blocks(sim: SimServer): string[] {
  return sim.requests
    .map((r) => messagesOf(r).at(-1))
    .filter((m) => m?.role === 'user' && String(m.content).includes(BACKGROUND_RESULTS_OPEN))
    .map((m) => String(m?.content));
}

describe('spawn de-duplication', () => {
  it(
    'attach: an identical spawn (case and spacing aside) while the first runs joins it; the tool says so and the result is delivered once',
    async () => {
      const root = await makeWorkspace(cleanups);
      const sim = await startSim(cleanups);
      const session = readOnlySession(sim, root);
      const delivered: string[] = [];
      session.on('delivered', ({ jobs }) => delivered.push(...jobs.map((j) => j.id)));

      await session.submit('Please research:\n1. Where is the retry backoff implemented?\n2. where is the RETRY   backoff implemented?');
      await session.onIdle();

      const jobs = session.manager.jobs();
      expect(jobs).toHaveLength(1);
      const [job] = jobs as [JobRecord];
      expect(job.status).toBe('ok');
      // The second spawn's answer names the running job and says no new one started.
      expect([...toolResultsSent(sim).values()].filter((t) => t.startsWith('Started background agent'))).toHaveLength(1);
      const joined = [...toolResultsSent(sim).values()].filter((t) => t.startsWith('Joined background agent'));
      expect(joined).toHaveLength(1);
      expect(joined[0]).toMatch(
        new RegExp(
          `^Joined background agent ${job.id} \\(".*"\\): an identical task for the same agent and model is already (queued|running), so no new agent was started`,
        ),
      );
      // Delivered once, in one block.
      expect(delivered).toEqual([job.id]);
      expect(blocks(sim)).toHaveLength(1);
      expect(blocks(sim)[0]?.split(`job ${job.id},`)).toHaveLength(2);
    },
    HEAVY_TIMEOUT_MS,
  );

  it(
    'reuse: an identical spawn after the job ended gets its result with its age instead of running again; reuseWithinSeconds 0 runs it again',
    async () => {
      const root = await makeWorkspace(cleanups);
      const sim = await startSim(cleanups);
      const manager = makeManager(makeConfig(sim, root, {}, READ_ONLY), cleanups);
      const first = manager.spawn({ task: LEAF, label: 'first', wave: 1 });
      await ended(manager, first.id);
      const calls = sim.requestCount;

      const again = manager.spawn({ task: `  ${LEAF.toUpperCase()} `, label: 'again', wave: 2 });
      expect(again).toMatchObject({ id: first.id, state: 'ended', joined: 'reused' });
      expect(again.ageMs).toBeGreaterThanOrEqual(0);
      expect(again.ageMs).toBeLessThan(120_000);
      expect(manager.jobs()).toHaveLength(1);
      expect(sim.requestCount).toBe(calls);

      // Through the parent's spawn tool: the answer carries the result and its age, and reading it there is its delivery.
      const session = readOnlySession(sim, root);
      await session.submit('Research:\n1. Where is the retry backoff implemented?\n2. Where is the LruCache class defined?');
      await session.onIdle();
      expect(session.manager.jobs()).toHaveLength(2);
      const before = session.manager.jobs().map((j) => j.id);
      const jobCalls = sim.requestCount;
      await session.submit('Again, please:\n1. Where is the retry backoff implemented?\n2. Where is the LruCache class defined?');
      await session.onIdle();
      expect(session.manager.jobs().map((j) => j.id)).toEqual(before);
      const reused = [...toolResultsSent(sim).values()].filter((t) =>
        /answered this identical task \d+\.\d s ago, so it was not run again\. Its result \(as of/.test(t),
      );
      expect(reused).toHaveLength(2);
      expect(reused.some((t) => t.includes('retry.ts'))).toBe(true);
      // Only the parent's own two calls of that turn: no job ran.
      expect(sim.requestCount - jobCalls).toBe(2);

      // Off: the same spawn runs again.
      const off = makeManager(makeConfig(sim, root, {}, { ...READ_ONLY, dedup: { reuseWithinSeconds: 0 } }), cleanups);
      const a = off.spawn({ task: LEAF, label: 'a' });
      await ended(off, a.id);
      const b = off.spawn({ task: LEAF, label: 'b' });
      expect(b.id).not.toBe(a.id);
      expect(b.joined).toBeUndefined();
    },
    HEAVY_TIMEOUT_MS,
  );

  it(
    'a reused result not yet delivered is delivered by the reuse, once: the next turn does not inject it again',
    async () => {
      const root = await makeWorkspace(cleanups);
      const sim = await startSim(cleanups);
      const session = readOnlySession(sim, root);
      // Wave 99 is never sealed: the result waits, undelivered.
      const first = session.manager.spawn({ task: LEAF, label: 'first', wave: 99 });
      await ended(session.manager, first.id);
      const again = session.manager.spawn({ task: LEAF, label: 'again', wave: 99 });
      expect(again).toMatchObject({ id: first.id, joined: 'reused' });
      const text = reusedResultText(session.manager, session.deliveries, again.id, 3, 6_000);
      expect(text).toBe(session.manager.get(first.id)?.resultText);
      expect(session.manager.get(first.id)?.deliveredInTurn).toBe(3);
      await session.submit('Anything new?');
      expect(blocks(sim)).toHaveLength(0);
    },
    HEAVY_TIMEOUT_MS,
  );

  it(
    'an agent whose tools include bash, write_file or edit_file never attaches or reuses',
    async () => {
      const root = await makeWorkspace(cleanups);
      const sim = await startSim(cleanups, { latencyMs: 200 });
      const config = makeConfig(
        sim,
        root,
        {},
        {
          // The default fork has every tool, bash included.
          agents: {
            writer: { description: 'edits files', tools: ['read_file', 'edit_file'] },
            reader: { description: 'reads files', tools: ['read_file', 'grep', 'find_files'] },
          },
        },
      );
      const manager = makeManager(config, cleanups);
      for (const agent of [undefined, 'writer'] as const) {
        const spec = { task: LEAF, label: 'x', ...(agent ? { agent } : {}) };
        const one = manager.spawn(spec);
        await startedJob(manager, one.id);
        const two = manager.spawn(spec);
        expect(two.id).not.toBe(one.id);
        expect(two.joined).toBeUndefined();
        await Promise.all([ended(manager, one.id), ended(manager, two.id)]);
        const three = manager.spawn(spec);
        expect(three.joined).toBeUndefined();
        await ended(manager, three.id);
      }
      expect(manager.jobs()).toHaveLength(6);
      // The read-only agent in the same config does attach.
      const r1 = manager.spawn({ task: LEAF, label: 'r', agent: 'reader' });
      expect(manager.spawn({ task: LEAF, label: 'r', agent: 'reader' })).toMatchObject({ id: r1.id, joined: 'attached' });
      await ended(manager, r1.id);
    },
    HEAVY_TIMEOUT_MS,
  );

  it(
    "two parent jobs' identical spawns in one wave run once, and each parent gets the result once",
    async () => {
      const root = await makeWorkspace(cleanups);
      const sim = await startSim(cleanups);
      // One slot: top a runs, spawns the child (queued behind top b) and waits with its slot given
      // back; top b runs next and spawns the same task while the child is still queued.
      const manager = makeManager(makeConfig(sim, root, { maxDepth: 2, maxConcurrent: 1 }, READ_ONLY), cleanups);
      // Named, so the two parents are never de-duplicated themselves; their children's task is the same.
      const tops = [
        manager.spawn({ task: `Delegate: ${LEAF}`, label: 'top a', name: 'top-a', wave: 1 }),
        manager.spawn({ task: `Delegate:  ${LEAF}`, label: 'top b', name: 'top-b', wave: 1 }),
      ];
      new Deliveries(manager).sealWave(1);
      const ends = await Promise.all(tops.map((t) => ended(manager, t.id)));
      await manager.onIdle();

      const children = manager.jobs().filter((j) => j.depth === 2);
      expect(children).toHaveLength(1);
      const child = children[0] as JobRecord;
      expect(child.status).toBe('ok');
      expect(ends.map((e) => e.status)).toEqual(['ok', 'ok']);
      // The child ran once: its own model calls are those whose first user message is its task.
      expect(requestsForTask(sim, LEAF)).toHaveLength(3);
      // Each parent's last conversation holds the child's result exactly once.
      for (const top of tops) {
        const task = manager.get(top.id)?.task;
        const last = requestsForTask(sim, task as string).at(-1);
        const text = messagesOf(last as never)
          .filter((m) => m.role === 'user')
          .map((m) => String(m.content))
          .join('\n');
        expect(text.split(`job ${child.id}, status ok`)).toHaveLength(2);
      }
      // Top a owns it; top b joined it, and its spawn tool said so.
      expect(child.parentJobId).toBe(tops[0]?.id);
      expect([...toolResultsSent(sim).values()].filter((t) => t.startsWith(`Joined background agent ${child.id} `))).toHaveLength(1);
      expect([...toolResultsSent(sim).values()].filter((t) => t.startsWith('Started background agent'))).toHaveLength(1);
    },
    HEAVY_TIMEOUT_MS,
  );
});
