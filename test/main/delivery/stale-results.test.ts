/**
 * Stale-on-arrival: a job records what it read (content hash, line ranges) in its worker; at
 * delivery each result is checked against the workspace as it is now. Real pool, sim model.
 */
import { createHash } from 'node:crypto';
import { readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AgentSession } from '../../../src/main/session/agent-session.js';
import { TurnDelivery } from '../../../src/main/delivery/turn-delivery.js';
import { BACKGROUND_RESULTS_OPEN, FOLLOW_UP_PROMPTS } from '../../../src/shared/prompts.js';
import type { ParentEvent } from '../../../src/main/session/parent-agent.js';
import { useCleanup, RESEARCH_TASK, ended, makeConfig, makeManager, makeWorkspace, startSim, watchManager } from '../../helpers/index.js';
import { Deliveries } from '../../../src/main/delivery/deliveries.js';

const cleanups = useCleanup();
/** Several jobs and parent turns each: generous, for a machine with every core busy. */
const HEAVY_TIMEOUT_MS = 240_000;

const sha256 = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex');

describe('stale results', () => {
  it(
    'a job records what it read; the parent edits the file before the result lands, and the delivered block says so',
    async () => {
      const root = await makeWorkspace(cleanups);
      writeFileSync(join(root, 'notes.txt'), 'alpha\nbeta\ngamma\n');
      writeFileSync(join(root, 'touched.txt'), 'same content\n');
      const sim = await startSim(cleanups);
      const session = new AgentSession({ config: makeConfig(sim, root), closeExecutor: true });
      watchManager(session.manager);
      cleanups.add(() => session.close({ timeoutMs: 2_000 }));
      // Wave 99 is never sealed: the results wait for the parent's next turn.
      const reader = session.manager.spawn({ task: '[sim-read: notes.txt] Summarize the notes', label: 'notes reader', wave: 99 });
      const toucher = session.manager.spawn({ task: '[sim-read: touched.txt] Summarize it', label: 'touched reader', wave: 99 });
      const researcher = session.manager.spawn({ task: RESEARCH_TASK, label: 'researcher', wave: 99 });
      const [read, touched, researched] = await Promise.all([reader, toucher, researcher].map((j) => ended(session.manager, j.id)));

      // What the worker recorded: the file, the hash of what it saw, the lines it was shown.
      expect(read?.reads).toEqual([expect.objectContaining({ path: 'notes.txt', sha256: sha256(join(root, 'notes.txt')), size: 17, ranges: [[1, 3]] })]);
      expect(read?.resultText).toContain('Read notes.txt: alpha');
      // grep read both matching files whole (no ranges); read_file's later window of the same
      // bytes is inside that.
      const paths = new Map(researched?.reads?.map((r) => [r.path, r.ranges]));
      expect(paths.get('src/retry.ts')).toEqual([]);
      expect(paths.get('README.md')).toEqual([]);

      // The parent edits one file; another is rewritten with the same bytes (touched, not changed).
      writeFileSync(join(root, 'notes.txt'), 'alpha\nBETA CHANGED\ngamma\n');
      const later = new Date(Date.now() + 5_000);
      utimesSync(join(root, 'touched.txt'), later, later);
      await session.submit('What did the background agents find?');

      const request = sim.requests.find(
        (r) => r.body.messages.at(-1)?.role === 'user' && String(r.body.messages.at(-1)?.content).includes(BACKGROUND_RESULTS_OPEN),
      );
      const input = String(request?.body.messages.at(-1)?.content);
      const part = (id: string | undefined) => {
        const at = input.indexOf(`job ${id},`);
        const next = input.indexOf('[Background agent', at);
        return input.slice(at, next < 0 ? undefined : next);
      };
      expect(part(read?.id)).toMatch(
        /\[stale: this result rests on files changed since the job read them: notes\.txt \(it read lines 1-3\) modified \d+\.\d s after the job read it\. Check them/,
      );
      expect(part(touched?.id)).not.toContain('[stale');
      expect(part(researched?.id)).not.toContain('[stale');
      expect(input.match(/\[stale:/g)).toHaveLength(1);
      // Delivered once, annotated, not re-run (the default is to annotate).
      expect(session.manager.get(read?.id as string)).toMatchObject({ deliveredInTurn: 1, attempts: 1 });
    },
    HEAVY_TIMEOUT_MS,
  );

  it(
    'with staleResults "rerun" a stale job runs again once instead of being delivered; stale again, it is delivered annotated',
    async () => {
      const root = await makeWorkspace(cleanups);
      const file = join(root, 'notes.txt');
      writeFileSync(file, 'version 1\n');
      const sim = await startSim(cleanups);
      const config = makeConfig(sim, root, {}, { delivery: { staleResults: 'rerun' } });
      const manager = makeManager(config, cleanups);
      const delivery = new TurnDelivery(manager, new Deliveries(manager), config);
      const job = manager.spawn({ task: '[sim-read: notes.txt] Summarize the notes', label: 'notes', wave: 1 });
      new Deliveries(manager).sealWave(1);
      const first = await ended(manager, job.id);
      expect(first.resultText).toContain('version 1');

      writeFileSync(file, 'version 2\n');
      const turn1 = delivery.deliver(1, await delivery.checkStale());
      // Not delivered: re-run instead, with a note saying why.
      expect(turn1).toMatchObject({ block: '', jobs: [], rerun: [job.id] });
      expect(manager.get(job.id)?.state).not.toBe('ended');
      expect(manager.get(job.id)?.notes.at(-1)).toMatch(/^re-run once: files it read changed before its result was delivered/);
      const second = await ended(manager, job.id);
      expect(second.resultText).toContain('version 2');
      expect(second.attempts).toBe(2);

      // Changed again before this delivery: it is not re-run a second time, it is delivered annotated.
      writeFileSync(file, 'version 3\n');
      const turn2 = delivery.deliver(2, await delivery.checkStale());
      expect(turn2.rerun).toEqual([]);
      expect(turn2.jobs.map((j) => j.id)).toEqual([job.id]);
      expect(turn2.block).toMatch(/\[stale: .*notes\.txt \(it read lines 1\) modified .* It was already re-run once because of this\.\]/);
      expect(turn2.block).toContain('| Read notes.txt: version 2');
      // Two runs in all: two model calls each (read, answer).
      expect(sim.requests).toHaveLength(4);
    },
    HEAVY_TIMEOUT_MS,
  );

  it(
    'with staleResults "rerun" through a session: no follow-up runs while the wave\'s only result is re-run; the new result comes in one follow-up, once',
    async () => {
      const root = await makeWorkspace(cleanups);
      const file = join(root, 'notes.txt');
      writeFileSync(file, 'version 1\n');
      const sim = await startSim(cleanups);
      const session = new AgentSession({ config: makeConfig(sim, root, {}, { delivery: { staleResults: 'rerun' } }), closeExecutor: true });
      watchManager(session.manager);
      cleanups.add(() => session.close({ timeoutMs: 2_000 }));
      const starts: Array<Extract<ParentEvent, { type: 'turn_start' }>> = [];
      session.on('parent', (e) => (e.type === 'turn_start' ? starts.push(e) : undefined));
      const followUps: string[] = [];
      session.on('follow-up', (f) => followUps.push(f.reason));

      // Wave 7 is sealed only once its job has ended and the file it read has changed: the
      // wave's follow-up then finds its one result stale.
      const job = session.manager.spawn({ task: '[sim-read: notes.txt] Summarize the notes', label: 'notes', wave: 7 });
      await ended(session.manager, job.id);
      writeFileSync(file, 'version 2\n');
      session.deliveries.sealWave(7);
      await session.onIdle();

      // Owed twice (the wave's end, the re-run's end), run once: the first had nothing to deliver.
      expect(followUps).toEqual(['wave', 'rerun']);
      expect(starts).toHaveLength(1);
      expect(starts[0]).toMatchObject({ turn: 1, followUp: true, cause: { reasons: [{ kind: 'wave', wave: 7 }, { kind: 'rerun' }] } });
      expect(session.manager.get(job.id)).toMatchObject({ attempts: 2, deliveredInTurn: 1 });
      // Every parent request carries a block: none says "in the block above" without one.
      const parentRequests = sim.requests.filter((r) => String(r.body.messages[0]?.content).startsWith('You are the primary'));
      expect(parentRequests.length).toBeGreaterThan(0);
      for (const r of parentRequests) expect(String(r.body.messages.at(-1)?.content)).toContain(BACKGROUND_RESULTS_OPEN);
      const input = String(parentRequests[0]?.body.messages.at(-1)?.content);
      expect(input).toContain('| Read notes.txt: version 2');
      expect(input).not.toContain('version 1');
      expect(input.match(/\[Background agent "notes"/g)).toHaveLength(1);
      expect(input).toContain(FOLLOW_UP_PROMPTS.agents);
    },
    HEAVY_TIMEOUT_MS,
  );
});
