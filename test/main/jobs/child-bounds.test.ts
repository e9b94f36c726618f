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
