/**
 * One validation of a spawn (manager-api.ts `checkSpawn`): the booking parses a request once,
 * whatever door it came through, and the refusals keep their codes and messages. The request is
 * a Proxy that counts how often its keys are listed: a zod object parse lists them once, so a
 * second parse of the same spawn (a dedup pre-check, a second admission) shows as a second count.
 */
import { describe, expect, it } from 'vitest';
import { ForkpoolError } from '../../../src/shared/errors.js';
import type { SpawnRequest } from '../../../src/main/jobs/manager.js';
import { RESEARCH_TASK, ended, makeConfig, makeManager, makeWorkspace, startSim, useCleanup } from '../../helpers/index.js';

const cleanups = useCleanup();

function counted(request: SpawnRequest): { request: SpawnRequest; listed: () => number } {
  let listed = 0;
  const proxy = new Proxy(request, {
    ownKeys(target) {
      listed++;
      return Reflect.ownKeys(target);
    },
  });
  return { request: proxy, listed: () => listed };
}

function refusal(run: () => unknown): { code: string; message: string } {
  try {
    run();
  } catch (error) {
    if (error instanceof ForkpoolError) return { code: error.code, message: error.message };
    throw error;
  }
  throw new Error('the spawn was not refused');
}

describe('one validation per spawn', () => {
  it('a library spawn is parsed once, booked and run; with dedup on, an identical one is parsed once and joins', async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups, { latencyMs: 200 });
    // Read-only tools: a spawn with a gated tool never joins (dedup.ts).
    const manager = makeManager(makeConfig(sim, root, {}, { tools: ['read_file', 'grep'], dedup: { attach: true, reuseWithinSeconds: 0 } }), cleanups);
    const first = counted({ task: RESEARCH_TASK, label: 'first' });
    const { id } = manager.spawn(first.request);
    expect(first.listed()).toBe(1);
    const second = counted({ task: RESEARCH_TASK, label: 'second' });
    const joined = manager.spawn(second.request);
    expect(joined).toMatchObject({ id, joined: 'attached' });
    expect(second.listed()).toBe(1);
    expect((await ended(manager, id)).status).toBe('ok');
  });

  it('a refused spawn is parsed once too, with the codes and messages it always had', async () => {
    const root = await makeWorkspace(cleanups);
    const manager = makeManager(makeConfig(undefined, root), cleanups);
    const bad = counted({ task: '   ', label: 'empty' });
    const invalid = refusal(() => manager.spawn(bad.request));
    expect(invalid.code).toBe('TOOL_ARGUMENTS_INVALID');
    expect(invalid.message).toMatch(/^invalid spawn request: .*task must not be empty/s);
    expect(bad.listed()).toBe(1);
    const model = counted({ task: 'x', label: 'model', model: 'no-such-model' });
    const refused = refusal(() => manager.spawn(model.request));
    expect(refused.code).toBe('MODEL_NOT_ALLOWED');
    expect(refused.message).toMatch(/^model: "no-such-model" is not allowed for a spawn; allowed: /);
    expect(model.listed()).toBe(1);
    expect(refusal(() => manager.spawn({ task: 'x', label: 'agent', agent: 'nobody' })).code).toBe('AGENT_UNKNOWN');
    expect(manager.jobs()).toEqual([]);
  });
});
