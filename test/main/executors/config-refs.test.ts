/**
 * A job's config crosses to its thread once per distinct config, not once per job (issue 40:
 * memory per job in flight): a spawn burst posts every task at once, and each used to carry a
 * clone of the config (~3 KB queued on the thread's port per job). Measured on the tasks the
 * real pool posts, through real threads: never a time.
 */
import { serialize, Serializer } from 'node:v8';
import { MessagePort } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigRefs } from '../../../src/main/executors/config-refs.js';
import { createExecutor } from '../../../src/main/jobs/executor-factory.js';
import { parseConfig } from '../../../src/shared/config.js';
import { makeConfig, makeManager, makeWorkspace, startSim, useCleanup } from '../../helpers/index.js';

const cleanups = useCleanup();

/** The bytes of a message as a port would serialize it (a SharedArrayBuffer counts as a reference). */
class MessageSizer extends Serializer {
  _getSharedArrayBufferId(): number {
    return 0;
  }
}
function messageBytes(message: unknown): number {
  const sizer = new MessageSizer();
  sizer.writeHeader();
  sizer.writeValue(message);
  return sizer.releaseBuffer().length;
}

/** Sizes of the tasks Piscina posts to its threads (its messages carry `taskId` and `task`) while the spy is on. */
function spyOnPostedTasks(): number[] {
  const sizes: number[] = [];
  // eslint-disable-next-line @typescript-eslint/unbound-method -- called below with the port as `this`
  const post = MessagePort.prototype.postMessage;
  MessagePort.prototype.postMessage = function (this: MessagePort, message: unknown, transfer?: never) {
    if (typeof message === 'object' && message !== null && 'taskId' in message && 'task' in message) sizes.push(messageBytes(message));
    return post.call(this, message, transfer);
  };
  spies.push(() => (MessagePort.prototype.postMessage = post));
  return sizes;
}
const spies: Array<() => void> = [];
afterEach(() => {
  for (const restore of spies.splice(0)) restore();
});

describe('configs cross to the threads by reference', { timeout: 120_000 }, () => {
  it('a posted task is smaller than its config alone, and every job still runs with that config', async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups);
    const config = makeConfig(sim, root, { isolation: 'shared', tasksPerThread: 20, maxConcurrent: 20, threads: 1 });
    const manager = makeManager(config, cleanups);
    const sizes = spyOnPostedTasks();
    const ids = Array.from({ length: 12 }, (_, i) => manager.spawn({ task: `Where is the retry backoff? (${i})`, label: `job-${i}` }).id);
    await manager.onIdle();
    for (const id of ids) expect(manager.get(id)?.status).toBe('ok');
    expect(sizes).toHaveLength(ids.length);
    // The config alone (its key and agents, limits, prompts) against the whole task that carried it before.
    const configBytes = serialize(config).length;
    expect(configBytes).toBeGreaterThan(1_000);
    expect(Math.max(...sizes)).toBeLessThan(configBytes);
    // What its jobs sent is what their config says.
    expect(sim.requests.length).toBeGreaterThan(0);
    for (const request of sim.requests) expect(request.body.model).toBe(config.model);
  });

  it('jobs of two configs on one thread each run with their own', async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups);
    const background = { isolation: 'shared' as const, tasksPerThread: 20, maxConcurrent: 20, threads: 1 };
    const configA = makeConfig(sim, root, background, { model: 'model-a' });
    const configB = makeConfig(sim, root, background, { model: 'model-b' });
    // One pool (one thread) under two managers, as a server's sessions share theirs.
    const executor = createExecutor(configA, undefined, 'piscina');
    cleanups.add(() => executor.close());
    const a = makeManager(configA, cleanups, executor);
    const b = makeManager(configB, cleanups, executor);
    const jobs = Array.from({ length: 6 }, (_, i) => [
      a.spawn({ task: `Where is the retry backoff? (from-a-${i})`, label: `a-${i}` }).id,
      b.spawn({ task: `Where is the retry backoff? (from-b-${i})`, label: `b-${i}` }).id,
    ]);
    await Promise.all([a.onIdle(), b.onIdle()]);
    for (const [idA, idB] of jobs) {
      expect(a.get(idA as string)?.status).toBe('ok');
      expect(b.get(idB as string)?.status).toBe('ok');
    }
    let checked = 0;
    for (const request of sim.requests) {
      const body = JSON.stringify(request.body.messages);
      const from = body.includes('from-a-') ? 'model-a' : body.includes('from-b-') ? 'model-b' : undefined;
      if (!from) continue;
      expect(request.body.model).toBe(from);
      checked++;
    }
    expect(checked).toBeGreaterThanOrEqual(12);
  });
});

describe('ConfigRefs', () => {
  it('equal configs share a ref; a config edited in place is a new one', () => {
    const refs = new ConfigRefs();
    const config = parseConfig({ workspaceRoot: '/tmp', baseUrl: 'http://127.0.0.1:1/v1' });
    const first = refs.refFor(config);
    expect(refs.refFor(config)).toBe(first);
    expect(refs.refFor({ ...config })).toBe(first);
    config.background.maxConcurrent += 1;
    const edited = refs.refFor(config);
    expect(edited?.id).not.toBe(first?.id);
    // The bytes are the config as it was when its ref was made.
    expect(refs.refFor({ ...config, background: { ...config.background, maxConcurrent: config.background.maxConcurrent - 1 } })).toBe(first);
  });
});
