/**
 * A child's result held on a sleeping parent's wait record survives the process (docs/delivery.md
 * "A child's result while its parent has no run"), with a durable ledger (node:sqlite), through
 * the real pool and worker threads on the sim: the parent sleeps, its child ends and its result
 * is held on `sleepWait.childResults`; then the manager is closed (and, apart, the process is
 * killed with SIGKILL, as durable-kill.test.ts does); the next manager on the ledger wakes the
 * parent, whose run reads the result exactly once. One slot (maxConcurrent 1): the child runs
 * only once the parent has given its slot back, so the order is fixed, not raced.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { BackgroundManager, type ManagerEvents } from '../../../src/main/jobs/manager.js';
import { Deliveries } from '../../../src/main/delivery/deliveries.js';
import { openSqliteLedger } from '../../../src/main/ledger/sqlite-store.js';
import type { JobRecord } from '../../../src/main/ledger/ledger.js';
import type { ScriptStep } from '../../../src/sim/types.js';
import {
  cleanupOf,
  ended,
  ledgerFile,
  makeConfig,
  makeWorkspace,
  messagesOf,
  nextEvent,
  parseJsonLines,
  spawnCli,
  startSim,
  waitFor,
  watchManager,
} from '../../helpers/index.js';
import { ManualScheduler } from '../../helpers/fake-executor.js';

const ANSWER = 'The retry backoff is in src/net/retry.ts (answer 4242).';
const TASK = 'Supervise: delegate the search, then sleep.';
const FINAL = 'Supervisor: the finder says src/net/retry.ts.';

function script(after: string): ScriptStep[] {
  return [
    {
      toolCalls: [
        { name: 'spawn_background_agent', arguments: { task: 'Find where the retry backoff is.', label: 'finder' } },
        { name: 'schedule_next_turn', arguments: { after, reason: 'read the finder result' } },
      ],
    },
    { content: ANSWER },
    { content: FINAL },
  ];
}

/**
 * How long the parent sleeps in the SIGKILL test: about ten times what its child's run and the kill
 * take on a loaded machine (about 1 s), as sleeps-restart.test.ts sleeps.
 */
const KILL_SLEEP_S = 10;

/** How many user messages of request `n` (0-based) carry the child's answer. */
function answerCount(sim: { requests: unknown[] }, n: number): number {
  const request = sim.requests[n] as Parameters<typeof messagesOf>[0];
  return messagesOf(request).filter((m) => m.role === 'user' && String(m.content).includes('answer 4242')).length;
}

/** Every timer runs for real but the sleep's wake, which the test fires. */
const manualWake = () => new ManualScheduler(['timeout', 'cancel-grace', 'port-close', 'budget', 'wave-deadline', 'approval']);

/** The jobs as the ledger on disk has them (read beside the live process, as `jobs show` reads them). */
function storedJobs(file: string, scope: string): Array<Readonly<JobRecord>> {
  const store = openSqliteLedger(file);
  try {
    return store
      .jobs(scope)
      .load()
      .jobs.map((j) => j.record);
  } finally {
    store.close();
  }
}

// Side by side (concurrent): each test has its own sim, workspace, ledger file and cleanup list.
describe.concurrent('a held child result across a restart', () => {
  it('held on a sleeping parent, the manager closed: the next manager on the ledger wakes the parent, whose run reads the result once', async (context) => {
    const cleanups = cleanupOf(context);
    const workspace = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups, { script: script('1h'), recordBodies: true });
    const file = ledgerFile(cleanups, 'held.db');
    const config = makeConfig(sim, workspace, { maxConcurrent: 1, maxDepth: 2, maxAlertsPerJob: 0 }, { ledger: { path: file } });

    const first = openSqliteLedger(file);
    const a = watchManager(new BackgroundManager({ config, store: first.jobs('s'), scheduler: manualWake() }));
    cleanups.add(() => a.close({ timeoutMs: 2_000 }));
    const { id } = a.spawn({ task: TASK, label: 'supervisor', scheduler: 'sleep' });
    await nextEvent<ManagerEvents, 'sleeping'>(a, 'sleeping', (r) => r.id === id);
    const child = a.jobs().find((r) => r.parentJobId === id) as JobRecord;
    expect((await ended(a, child.id)).status).toBe('ok');
    await a.close({ timeoutMs: 2_000 });
    first.close();
    // On disk: still asleep, the result held on its wait record; the child handed to it.
    const stored = storedJobs(file, 's');
    expect(stored.find((r) => r.id === id)).toMatchObject({ state: 'running', sleepWait: { childResults: [expect.stringContaining('answer 4242')] } });
    expect(stored.find((r) => r.id === child.id)?.deliveredInTurn).toBeDefined();

    const second = openSqliteLedger(file);
    cleanups.add(() => second.close());
    const scheduler = manualWake();
    const b = watchManager(new BackgroundManager({ config, store: second.jobs('s'), scheduler }));
    cleanups.add(() => b.close({ timeoutMs: 2_000 }));
    expect(b.recovery?.sleeping).toEqual([id]);
    expect(sim.requests).toHaveLength(2);
    scheduler.fire(scheduler.find('sleep', id)[0] as number);
    const record = await ended(b, id);

    expect(record).toMatchObject({ status: 'ok', resultText: FINAL });
    expect(answerCount(sim, 2)).toBe(1);
    // The session gets the supervisor only, once; the child was its parent's.
    const deliveries = new Deliveries(b);
    expect(deliveries.drain(1).map((r) => r.id)).toEqual([id]);
    expect(deliveries.drain(2)).toEqual([]);
    sim.assertScriptDone();
  });

  it('held on a sleeping parent, the process killed (SIGKILL): fanout --resume wakes the parent, whose run reads the result once and prints it once', async (context) => {
    const cleanups = cleanupOf(context);
    const workspace = await makeWorkspace(cleanups);
    const file = ledgerFile(cleanups, 'held-kill.db');
    const configFile = path.join(workspace, 'held.config.json');
    writeFileSync(
      configFile,
      JSON.stringify({ model: 'forkpool-sim', maxRetries: 0, background: { scheduler: 'sleep', maxDepth: 2, maxConcurrent: 1, maxAlertsPerJob: 0 } }),
    );
    // The resumed process waits this sleep out, so it is short; what must fit in it is only the
    // child's run (one answer of the sim) and the kill, which land while the parent sleeps.
    const sim = await startSim(cleanups, { script: script(`${KILL_SLEEP_S}s`), recordBodies: true });
    const input = JSON.stringify({ task: TASK, label: 'supervisor' });
    const args = ['fanout', '-', '--config', configFile, '--base-url', sim.url, '--workspace', workspace, '--ledger', file, '--no-progress'];
    const first = spawnCli(args, { input, cleanup: cleanups });
    const parentOf = () => storedJobs(file, 'fanout').find((r) => r.parentJobId === undefined);
    await waitFor(() => (parentOf()?.sleepWait?.childResults?.length ?? 0) > 0, 'the child result is held on the sleeping parent', {
      timeoutMs: 30_000,
      intervalMs: 100,
    });
    first.child.kill('SIGKILL');
    const killed = await first.exited;
    expect(killed.signal).toBe('SIGKILL');
    const parent = parentOf() as Readonly<JobRecord>;
    // Nothing of the parent was printed before the kill.
    expect((parseJsonLines(killed.stdout) as Array<{ id: string }>).filter((line) => line.id === parent.id)).toEqual([]);
    expect(parent).toMatchObject({ state: 'running', sleepWait: { childResults: [expect.stringContaining('answer 4242')] } });
    expect(sim.requests).toHaveLength(2);

    const resumed = await spawnCli([...args, '--resume'], { input, cleanup: cleanups, timeoutMs: 90_000 }).exited;
    expect(resumed.code, resumed.stderr).toBe(0);
    const out = parseJsonLines(resumed.stdout) as Array<{ id: string; status: string; result: string; parentJobId?: string | null }>;
    // The parent's line, once (the fan-out also prints its child's record, read back from the ledger: not this test's concern).
    expect(out.filter((line) => !line.parentJobId)).toEqual([expect.objectContaining({ id: parent.id, status: 'ok', result: FINAL })]);
    expect(sim.requests).toHaveLength(3);
    expect(answerCount(sim, 2)).toBe(1);
    expect(storedJobs(file, 'fanout').find((r) => r.id === parent.id)).toMatchObject({ state: 'ended', status: 'ok' });
    sim.assertScriptDone();
  }, 180_000);
  it('handed to a woken parent whose run is cut (the manager closed mid-call): the next manager re-runs it from its task, whose first turn reads the result once', async (context) => {
    const cleanups = cleanupOf(context);
    const workspace = await makeWorkspace(cleanups);
    // The woken run's model call hangs (it has read the held result): the close cuts that run.
    const steps = script('1h');
    const sim = await startSim(cleanups, {
      script: [steps[0], steps[1], { fault: { kind: 'hang_before_headers' } }, steps[2]] as ScriptStep[],
      recordBodies: true,
    });
    const file = ledgerFile(cleanups, 'handed.db');
    const config = makeConfig(sim, workspace, { maxConcurrent: 1, maxDepth: 2, maxAlertsPerJob: 0 }, { ledger: { path: file } });

    const first = openSqliteLedger(file);
    const scheduler = manualWake();
    const a = watchManager(new BackgroundManager({ config, store: first.jobs('s'), scheduler }));
    cleanups.add(() => a.close({ timeoutMs: 2_000 }));
    const { id } = a.spawn({ task: TASK, label: 'supervisor', scheduler: 'sleep' });
    await nextEvent<ManagerEvents, 'sleeping'>(a, 'sleeping', (r) => r.id === id);
    const child = a.jobs().find((r) => r.parentJobId === id) as JobRecord;
    expect((await ended(a, child.id)).status).toBe('ok');
    scheduler.fire(scheduler.find('sleep', id)[0] as number);
    await waitFor(() => sim.requests.length === 3, 'the woken run asks the model');
    expect(answerCount(sim, 2)).toBe(1);
    // On disk: running, its wait record gone (markRunning), the result kept as handed to this run.
    expect(storedJobs(file, 's').find((r) => r.id === id)).toMatchObject({ state: 'running', handedResults: [expect.stringContaining('answer 4242')] });
    await a.close({ timeoutMs: 2_000 });
    first.close();

    const second = openSqliteLedger(file);
    cleanups.add(() => second.close());
    const b = watchManager(new BackgroundManager({ config, store: second.jobs('s'), scheduler: manualWake() }));
    cleanups.add(() => b.close({ timeoutMs: 2_000 }));
    expect(b.recovery?.rerun).toEqual([id]);
    const record = await ended(b, id);

    expect(record).toMatchObject({ status: 'ok', resultText: FINAL });
    expect(sim.requests).toHaveLength(4);
    // The re-run from its task reads the child's result once, in its first turn.
    expect(answerCount(sim, 3)).toBe(1);
    expect(record.handedResults).toBeUndefined();
    sim.assertScriptDone();
  });
});
