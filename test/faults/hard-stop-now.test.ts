/**
 * A hard stop is at once, through the real Piscina pool and the real worker entry: the cancel
 * grace and the `shared` thread's answer time are both 60 s here, and every test's timeout is
 * well below that, so a stop that waited for either cannot pass. The grace timer is held in the
 * test's hand: firing it is the hard stop. Jobs held in a tool that never yields (a tool module
 * spinning in synchronous code) and jobs waiting on a model that never answers.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PiscinaExecutor } from '../../src/main/executors/piscina-executor.js';
import { createExecutor } from '../../src/main/jobs/executor-factory.js';
import type { BackgroundManager, ManagerEvents } from '../../src/main/jobs/manager.js';
import type { ScriptStep } from '../../src/sim/types.js';
import { ended, makeConfig, makeManager, makeWorkspace, ManualScheduler, nextEvent, startSim, useCleanup, waitFor } from '../helpers/index.js';

const cleanups = useCleanup();

/** Far above every test's timeout: a stop that waited for either never ends in time. */
const LONG_MS = 60_000;
const TEST_TIMEOUT_MS = 20_000;
const BLOCKING_TOOLS = new URL('../fixtures/tool-modules/blocking-tools.mjs', import.meta.url).pathname;

const hangOnModel: ScriptStep = { fault: { kind: 'hang_before_headers' } };
/** The model asks for `block_thread`, which writes `marker` and then holds its thread. */
const blockInTool = (marker: string): ScriptStep => ({ toolCalls: [{ name: 'block_thread', arguments: JSON.stringify({ path: marker }), id: 'block' }] });

/**
 * A manager over the real entry; `script(marker)`: the sim's replies, `marker` the file
 * block_thread writes. The executor is built from the config as the manager builds it, or, with
 * `threadAnswerMs`, by hand with that answer time for a `shared` thread.
 */
async function setup(isolation: 'shared' | 'thread', script: (marker: string) => ScriptStep[], threadAnswerMs?: number) {
  const root = await makeWorkspace(cleanups);
  const marker = path.join(root, 'blocked.txt');
  const sim = await startSim(cleanups, { script: script(marker) });
  const config = makeConfig(
    sim,
    root,
    // `shared`: one thread, so both jobs of a test share it.
    { isolation, maxConcurrent: 2, tasksPerThread: 2, threads: isolation === 'shared' ? 1 : 2, cancelGraceMs: LONG_MS },
    { toolModules: [BLOCKING_TOOLS], tools: ['block_thread'] },
  );
  const executor =
    threadAnswerMs === undefined
      ? createExecutor(config)
      : new PiscinaExecutor({ isolation, threads: config.background.threads, tasksPerThread: 2, heapMb: 0, threadAnswerMs });
  const scheduler = new ManualScheduler(['port-close']);
  const manager = makeManager(config, cleanups, executor, scheduler);
  return { manager, scheduler, marker, executor };
}

/** Cancels a job (its cooperative round cannot reach it) and fires its grace timer: the hard stop. */
function hardStop(manager: BackgroundManager, scheduler: ManualScheduler, id: string): void {
  manager.cancel(id);
  const graces = scheduler.find('cancel-grace', id);
  expect(graces).toHaveLength(1);
  for (const timer of graces) scheduler.fire(timer);
}

/** Spawns the job that blocks its thread in `block_thread`; resolves once the tool holds the thread. */
async function spawnBlocked(manager: BackgroundManager, marker: string): Promise<string> {
  const { id } = manager.spawn({ task: 'block your thread', label: 'blocked' });
  await waitFor(() => existsSync(marker), 'block_thread running');
  return id;
}

/** Spawns a job whose model request never answers; resolves once that request is out. */
async function spawnWaitingOnModel(manager: BackgroundManager): Promise<string> {
  const requested = nextEvent<ManagerEvents, 'progress'>(manager, 'progress', ({ event }) => event.type === 'model_request');
  const { id } = manager.spawn({ task: 'wait on the model', label: 'waiting' });
  await requested;
  return id;
}

async function expectHardCancelled(manager: BackgroundManager, id: string) {
  const record = await ended(manager, id);
  expect(record.status).toBe('cancelled');
  expect(record.endedBy).toBe('hard');
  expect(record.error?.code).toBe('JOB_CANCELLED');
  return record;
}

describe('a hard stop waits neither for the grace nor for its thread', () => {
  it.each([
    ['shared', 'from the config', undefined],
    ['shared', 'with a 60 s thread answer time', LONG_MS],
    ['thread', 'from the config', undefined],
  ] as const)(
    '%s isolation, executor %s: a job blocked in a tool that never yields ends at once, cancelled by a hard stop',
    async (isolation, _executor, threadAnswerMs) => {
      const { manager, scheduler, marker } = await setup(isolation, (m) => [blockInTool(m)], threadAnswerMs);
      const id = await spawnBlocked(manager, marker);
      hardStop(manager, scheduler, id);
      await expectHardCancelled(manager, id);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'shared isolation: a job waiting on the model, on a thread a neighbour holds in a tool, ends at once; then the neighbour',
    async () => {
      const { manager, scheduler, marker } = await setup('shared', (m) => [hangOnModel, blockInTool(m)], LONG_MS);
      const waiting = await spawnWaitingOnModel(manager);
      const blocked = await spawnBlocked(manager, marker);
      // Its thread is held: the cooperative cancel cannot reach it, only the hard stop ends it.
      hardStop(manager, scheduler, waiting);
      const record = await expectHardCancelled(manager, waiting);
      expect(manager.get(blocked)?.threadId).toBe(record.threadId);
      hardStop(manager, scheduler, blocked);
      await expectHardCancelled(manager, blocked);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'thread isolation: destroy() ends a job waiting on the model and one blocked in a tool at once',
    async () => {
      const { manager, marker, executor } = await setup('thread', (m) => [hangOnModel, blockInTool(m)]);
      const waiting = await spawnWaitingOnModel(manager);
      const blocked = await spawnBlocked(manager, marker);
      const report = await manager.destroy();
      expect(report.stragglers.sort()).toEqual([waiting, blocked].sort());
      for (const id of [waiting, blocked]) {
        expect(manager.get(id)).toMatchObject({ status: 'cancelled', endedBy: 'hard' });
      }
      expect(executor.threadCount()).toBe(0);
    },
    TEST_TIMEOUT_MS,
  );
});
