/**
 * A fan-out frozen in a known state, for the jobs list's tests (API and page): one slot per
 * manager on a scripted sim. bg-1 fails (its only model call gets a 503, no retries), bg-2 makes
 * one tool call and answers, bg-3 hangs in its model call (running until cancelled), the rest
 * wait in the queue; an open session holds two jobs, the first of them hung too. Then nothing
 * moves until the test acts. Before a retry, `answerNext` scripts the answers the sim gives next
 * (a cancelled hung job may still send a request as it stops, so the original script is not counted on).
 */
import type { Cleanup } from './cleanup.js';
import { waitFor } from './cleanup.js';
import { startTestServer, type TestServer } from './server.js';

export const SCOUT = { description: 'Finds where things are', model: 'forkpool-sim-scout' };

export interface FrozenFanout extends TestServer {
  /** The open session's id. */
  session: string;
  /** The sim answers the next model calls with these texts, one call each (then fails loudly). */
  answerNext: (...texts: string[]) => void;
}

/** `jobs` server jobs labelled `alpha-1`…, every third one (3, 6, …) of agent `scout`; two session jobs `sess-a`, `sess-b`. */
export async function startFrozenFanout(cleanup: Cleanup, jobs: number): Promise<FrozenFanout> {
  const testServer = await startTestServer(
    cleanup,
    // The hung calls hang until cancelled: no request timeout ends them first.
    { maxRetries: 0, requestTimeoutMs: 600_000, firstByteTimeoutMs: 600_000, agents: { scout: SCOUT }, background: { maxConcurrent: 1, threads: 3 } },
    {
      // Request numbers: 1 bg-1, 2-3 bg-2, 4 bg-3, 5 the session's first job.
      faults: { 1: { kind: '503' }, 4: { kind: 'hang_before_headers' }, 5: { kind: 'hang_before_headers' } },
      script: [{ toolCalls: [{ name: 'list_dir', arguments: { path: '.' } }] }, { content: 'Second job: the answer.' }],
    },
  );
  const { api, sim, server } = testServer;
  for (let from = 1; from <= jobs; from += 100) {
    const tasks = [];
    for (let i = from; i < Math.min(from + 100, jobs + 1); i++)
      tasks.push({ task: `Task number ${i}.`, label: `alpha-${i}`, ...(i % 3 === 0 ? { agent: 'scout' } : {}) });
    const response = await api('/v1/jobs', { json: { tasks } });
    if (response.status !== 202) throw new Error(`spawn: HTTP ${response.status} ${await response.text()}`);
  }
  await waitFor(() => sim.requests.length === 4 && server.state.manager.count('ended') === 2, 'bg-1 failed, bg-2 answered, bg-3 hung', { timeoutMs: 60_000 });
  const { id, session } = server.state.createSession();
  for (const label of ['sess-a', 'sess-b']) session.manager.spawn({ task: `Session task ${label}.`, label, role: 'user', wave: null });
  await waitFor(() => sim.requests.length === 5, "the session's first job hung");
  return { ...testServer, session: id, answerNext: (...texts) => sim.setOptions({ script: texts.map((content) => ({ content })) }) };
}
