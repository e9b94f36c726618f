/**
 * What a job may start, through the real manager, pool and workers on a scripted sim: a child's
 * tools are at most its parent's (without `tools` it gets its own narrowed to the parent's; asking
 * for one the parent lacks is a TOOL_NOT_ALLOWED tool error), and a tree is bounded by
 * `background.maxChildrenPerJob` and the default `queueLimit`, each refusal a tool error the
 * spawning job's model reads.
 *
 * One slot (`maxConcurrent: 1`) makes each script's order certain: the parent asks, answers and
 * is suspended (its slot given back), then the child runs, then the parent is resumed.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ScriptStep } from '../../../src/sim/index.js';
import { ended, makeConfig, makeManager, makeWorkspace, messagesOf, startSim, toolMessagesOf, toolNames, useCleanup } from '../../helpers/index.js';

const cleanups = useCleanup();

const spawnCall = (args: Record<string, unknown>, id: string) => ({ name: 'spawn_background_agent', arguments: JSON.stringify(args), id });

async function setUp(script: ScriptStep[], background: Record<string, unknown> = {}) {
  const root = await makeWorkspace(cleanups);
  const sim = await startSim(cleanups, { script });
  // The config's tools write (and are granted): only the spawn narrows them.
  const config = makeConfig(
    sim,
    root,
    { maxDepth: 2, maxConcurrent: 1, ...background },
    { tools: ['read_file', 'grep', 'write_file'], grantedTools: ['write_file'] },
  );
  return { root, sim, manager: makeManager(config, cleanups) };
}

describe("a child's tools", () => {
  it("are at most its parent's: a job narrowed to read_file and grep starts a child without tools, and the child cannot write", async () => {
    const { root, sim, manager } = await setUp([
      { toolCalls: [spawnCall({ task: 'write the summary file', label: 'writer' }, 'c1')] },
      { content: 'waiting for my child' },
      { toolCalls: [{ name: 'write_file', arguments: { path: 'summary.txt', content: 'written by the child' } }] },
      { content: 'child done' },
      { content: 'parent done' },
    ]);
    const top = manager.spawn({ task: 'delegate the writing', label: 'top', tools: ['read_file', 'grep'] });
    await ended(manager, top.id);
    await manager.onIdle();
    sim.assertScriptDone();

    const child = manager.jobs().find((j) => j.parentJobId === top.id);
    expect(child).toBeDefined();
    const childRequest = sim.requests.find((r) => messagesOf(r).find((m) => m.role === 'user')?.content === 'write the summary file');
    if (!childRequest) throw new Error('no child request');
    expect(toolNames(childRequest).filter((name) => name !== 'report_alert')).toEqual(['read_file', 'grep']);
    expect(existsSync(path.join(root, 'summary.txt'))).toBe(false);
    // The child's model was told the tool does not exist for it.
    const answer = toolMessagesOf(sim.requests[3]?.body as never).at(-1);
    expect(answer).toMatch(/unknown tool "write_file"/);
  });

  it("asking for a tool its parent lacks is refused: TOOL_NOT_ALLOWED, a tool error the parent's model reads, and no child", async () => {
    const { sim, manager } = await setUp([
      { toolCalls: [spawnCall({ task: 'write the summary file', label: 'writer', tools: ['read_file', 'write_file'] }, 'c1')] },
      { content: 'no child then' },
    ]);
    const top = manager.spawn({ task: 'delegate the writing', label: 'top', tools: ['read_file', 'grep'] });
    expect((await ended(manager, top.id)).status).toBe('ok');
    sim.assertScriptDone();
    expect(manager.jobs()).toHaveLength(1);
    const refusal = toolMessagesOf(sim.requests[1]?.body as never).at(-1);
    expect(refusal).toContain(`tools: "write_file" is not among the spawning job's tools (read_file, grep)`);
  });
});

describe('a tree is bounded', () => {
  it("past background.maxChildrenPerJob a job's spawn is refused with CHILDREN_LIMIT, a tool error its model reads; the children it has run", async () => {
    const { sim, manager } = await setUp(
      [
        { toolCalls: [1, 2, 3].map((i) => spawnCall({ task: `part ${i}`, label: `part-${i}` }, `s${i}`)) },
        { content: 'waiting for my children' },
        { content: 'child done' },
        { content: 'child done' },
        { content: 'parent done' },
      ],
      { maxChildrenPerJob: 2 },
    );
    const top = manager.spawn({ task: 'split the work', label: 'top' });
    expect((await ended(manager, top.id)).status).toBe('ok');
    await manager.onIdle();
    sim.assertScriptDone();

    expect(manager.jobs().filter((j) => j.parentJobId === top.id)).toHaveLength(2);
    const answers = toolMessagesOf(sim.requests[1]?.body as never);
    expect(answers).toHaveLength(3);
    expect(answers[2]).toContain(`job ${top.id} has spawned 2 children, the most one job may (background.maxChildrenPerJob 2)`);
  });

  it("with background.nestedQueueLimit jobs waiting for a slot, a job's spawn is refused with QUEUE_FULL, a tool error its model reads", async () => {
    const { sim, manager } = await setUp(
      [
        { toolCalls: [1, 2].map((i) => spawnCall({ task: `part ${i}`, label: `part-${i}` }, `s${i}`)) },
        { content: 'waiting for my child' },
        { content: 'child done' },
        { content: 'parent done' },
      ],
      { nestedQueueLimit: 1 },
    );
    const top = manager.spawn({ task: 'split the work', label: 'top' });
    expect((await ended(manager, top.id)).status).toBe('ok');
    await manager.onIdle();
    sim.assertScriptDone();

    // The first child waits for the one slot (the parent holds it): the second spawn finds the queue at its bound.
    expect(manager.jobs().filter((j) => j.parentJobId === top.id)).toHaveLength(1);
    const answers = toolMessagesOf(sim.requests[1]?.body as never);
    expect(answers[1]).toContain('the background queue has 1 jobs waiting, the most at which a job may spawn (background.nestedQueueLimit 1)');
  });

  it('has default bounds: maxChildrenPerJob and nestedQueueLimit are set without any config', () => {
    const config = makeConfig(undefined, '/tmp');
    expect(config.background.maxChildrenPerJob).toBe(50);
    expect(config.background.nestedQueueLimit).toBe(1_000);
  });
});
