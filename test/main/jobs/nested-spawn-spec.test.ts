/**
 * A job's own spawn tool (depth above 1), in the real pool on a scripted sim: its `agent` enum is
 * the config's allow-list (`agentTools`), it takes the same spec arguments as the parent's tool
 * (system_prompt, tools, model), the child runs with that spec, and a spec the main thread
 * refuses comes back to the job's model as a tool error, with nothing started.
 *
 * One slot (`maxConcurrent: 1`) makes the script's order certain: the parent asks, answers and
 * is suspended (its slot given back), then the child runs, then the parent is resumed.
 */
import { describe, expect, it } from 'vitest';
import type { ScriptStep } from '../../../src/sim/index.js';
import {
  FakeExecutor,
  SCOUT_PROMPT,
  makeConfig,
  waitFor,
  agentConfig,
  ended,
  makeManager,
  makeWorkspace,
  messagesOf,
  startSim,
  systemOf,
  toolMessagesOf,
  toolNames,
  toolSchema,
  useCleanup,
} from '../../helpers/index.js';

const cleanups = useCleanup();

const CHILD_PROMPT = 'CHILD-SPEC-PROMPT: answer in one line.';
const spawnCall = (args: Record<string, unknown>, id: string) => ({ name: 'spawn_background_agent', arguments: JSON.stringify(args), id });

async function setUp(script: ScriptStep[]) {
  const root = await makeWorkspace(cleanups);
  const sim = await startSim(cleanups, { script });
  const config = agentConfig(sim, root, { agentTools: ['scout'] }, { maxDepth: 2, maxConcurrent: 1, spawnModels: ['child-model'] });
  return { sim, manager: makeManager(config, cleanups) };
}

describe("a job's own spawn tool", () => {
  it("offers only the allow-list and the spec arguments, and the child's model request carries the spec", async () => {
    const { sim, manager } = await setUp([
      {
        toolCalls: [
          spawnCall(
            { task: 'find the retry code', label: 'child', agent: 'scout', system_prompt: CHILD_PROMPT, tools: ['read_file'], model: 'child-model' },
            'c1',
          ),
        ],
      },
      { content: 'waiting for my child' },
      { content: 'the retry code is in retry.ts' },
      { content: 'final: retry.ts' },
    ]);
    const top = manager.spawn({ task: 'delegate the search', label: 'top' });
    const parent = await ended(manager, top.id);
    await manager.onIdle();
    sim.assertScriptDone();

    expect(parent.status).toBe('ok');
    const jobs = manager.jobs();
    expect(jobs).toHaveLength(2);
    const child = jobs.find((j) => j.parentJobId === parent.id);
    expect(child).toMatchObject({ agent: 'scout', status: 'ok', depth: 2 });

    // The parent's tool: the allow-list (not every configured agent) and the spec arguments.
    const first = sim.requests[0];
    if (!first) throw new Error('no request');
    const schema = toolSchema(first, 'spawn_background_agent');
    expect(schema.properties.agent.enum).toEqual(['scout']);
    expect(schema.properties.agent.description).toContain('"scout": Finds where things are');
    expect(schema.properties.agent.description).not.toContain('reviewer');
    expect(Object.keys(schema.properties)).toEqual(expect.arrayContaining(['system_prompt', 'replace_system_prompt', 'tools', 'model']));

    // The child's model request: its model, its agent's prompt with the spawn's appended, only the tool it was given.
    const childRequests = sim.requests.filter((r) => messagesOf(r).find((m) => m.role === 'user')?.content === 'find the retry code');
    expect(childRequests).toHaveLength(1);
    const [childRequest] = childRequests;
    if (!childRequest) throw new Error('no child request');
    expect(childRequest.body.model).toBe('child-model');
    expect(systemOf(childRequest)).toContain(SCOUT_PROMPT);
    expect(systemOf(childRequest).endsWith(CHILD_PROMPT)).toBe(true);
    const builtins = toolNames(childRequest).filter((name) => name !== 'report_alert');
    expect(builtins).toEqual(['read_file']);
  });

  it("refuses a spec outside what the config allows: a tool error to the job's model, and no child", async () => {
    const { sim, manager } = await setUp([
      {
        toolCalls: [
          spawnCall({ task: 'a', label: 'a', model: 'gpt-unlisted' }, 'm1'),
          spawnCall({ task: 'b', label: 'b', agent: 'scout', tools: ['bash'] }, 't1'),
          spawnCall({ task: 'c', label: 'c', tools: ['no_such_tool'] }, 'u1'),
          spawnCall({ task: 'd', label: 'd', agent: 'reviewer' }, 'r1'),
        ],
      },
      { content: 'could not delegate' },
    ]);
    const top = manager.spawn({ task: 'delegate badly', label: 'top' });
    const parent = await ended(manager, top.id);
    await manager.onIdle();
    sim.assertScriptDone();

    expect(parent.status).toBe('ok');
    expect(manager.jobs()).toHaveLength(1);
    const results = toolMessagesOf(sim.requests[1]?.body);
    expect(results).toHaveLength(4);
    const [model, tools, unknown, agent] = results;
    expect(model).toContain('model: "gpt-unlisted" is not allowed for a spawn; allowed: "child-model"');
    expect(tools).toContain('tools: "bash" is not among agent "scout"\'s tools');
    expect(unknown).toContain('tools: "no_such_tool" is not a built-in tool');
    // Outside the allow-list: refused by the tool's own enum before it reaches the main thread.
    expect(agent).toContain('expected "scout"');
    expect(agent).toContain('at agent');
  });
});

/**
 * The main thread's own checks, past the worker's tool: a fake executor posts the spawn requests
 * a job's model could not get past its tool's schema (an agent outside the allow-list), and the
 * manager refuses them itself (the same admission as any spawn for the spec).
 */
describe("the main thread's check of a job's spawn", () => {
  it('refuses an agent outside agentTools and a model outside spawnModels; books an allowed one', async () => {
    const root = await makeWorkspace(cleanups);
    const executor = new FakeExecutor();
    const config = makeConfig(
      undefined,
      root,
      { maxDepth: 2, spawnModels: ['child-model'] },
      { agents: { scout: { description: 'finds things' }, reviewer: { description: 'reviews' } }, agentTools: ['scout'] },
    );
    const manager = makeManager(config, cleanups, executor);
    const top = manager.spawn({ task: 'parent', label: 'parent' });
    await waitFor(() => executor.tasks.has(top.id), 'the parent to be run', { timeoutMs: 10_000 });
    executor.say(top.id, { kind: 'spawn', request: { agent: 'reviewer' } });
    executor.say(top.id, { kind: 'spawn', request: { agent: 'scout', model: 'gpt-unlisted' } });
    executor.say(top.id, { kind: 'spawn', request: { agent: 'scout', model: 'child-model', tools: ['read_file'] } });
    const spawns = executor.tasks.get(top.id)?.spawns;
    await waitFor(() => spawns && [...spawns.values()].every((s) => s.answered), 'the three answers', { timeoutMs: 10_000 });
    expect([...(spawns?.values() ?? [])].map(({ ok, code }) => ({ ok, code }))).toEqual([
      { ok: false, code: 'AGENT_UNKNOWN' },
      { ok: false, code: 'MODEL_NOT_ALLOWED' },
      { ok: true, code: undefined },
    ]);
    const children = manager.jobs().filter((j) => j.parentJobId === top.id);
    expect(children.map((j) => j.agent)).toEqual(['scout']);
    const childSpec = [...executor.tasks.values()].find((t) => t.task.spec.id === children[0]?.id)?.task.spec;
    expect(childSpec).toMatchObject({ model: 'child-model', tools: ['read_file'] });
  });
});

/** Issue 38 audit: a job's own spawn may type its child's answer, behind the same gate as the parent's `output_schema`. */
describe("output_schema on a job's own spawn tool", () => {
  const SCHEMA = { type: 'object', properties: { file: { type: 'string' } }, required: ['file'], additionalProperties: false };
  const typedSetUp = async (script: ScriptStep[], allowOutputSchema: boolean) => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups, { script });
    const config = agentConfig(sim, root, { agentTools: ['scout'] }, { maxDepth: 2, maxConcurrent: 1, allowOutputSchema });
    return { sim, manager: makeManager(config, cleanups) };
  };

  it('allowed: offered, and the child ends with its typed value, handed to its parent', async () => {
    const { sim, manager } = await typedSetUp(
      [
        { toolCalls: [spawnCall({ task: 'find the retry code', label: 'typed child', output_schema: SCHEMA }, 'c1')] },
        { content: 'waiting for my child' },
        { toolCalls: [{ name: 'submit_result', arguments: { file: 'src/retry.ts' } }] },
        { content: 'final: src/retry.ts' },
      ],
      true,
    );
    const parent = await ended(manager, manager.spawn({ task: 'delegate the search', label: 'top' }).id);
    await manager.onIdle();
    sim.assertScriptDone();
    expect(parent.status).toBe('ok');
    expect(toolSchema(sim.requests[0]!, 'spawn_background_agent').properties.output_schema).toMatchObject({ type: 'object' });
    expect(manager.jobs().find((j) => j.parentJobId === parent.id)).toMatchObject({ status: 'ok', depth: 2, data: { file: 'src/retry.ts' } });
    // The child's request offered submit_result: its answer was bound to the schema.
    expect(toolNames(sim.requests[2]!)).toContain('submit_result');
  });

  it('not allowed (the default): not offered (no prompt bytes), a call with it is a tool error, and the main thread refuses one sent anyway', async () => {
    const { sim, manager } = await typedSetUp(
      [{ toolCalls: [spawnCall({ task: 'find the retry code', label: 'typed child', output_schema: SCHEMA }, 'c1')] }, { content: 'could not delegate' }],
      false,
    );
    const parent = await ended(manager, manager.spawn({ task: 'delegate the search', label: 'top' }).id);
    sim.assertScriptDone();
    expect(parent.status).toBe('ok');
    expect(toolSchema(sim.requests[0]!, 'spawn_background_agent').properties).not.toHaveProperty('output_schema');
    expect(JSON.stringify(sim.requests[0]?.body)).not.toContain('output_schema');
    expect(toolMessagesOf(sim.requests[1]?.body)[0]).toMatch(/invalid arguments for spawn_background_agent[\s\S]*output_schema/);
    expect(manager.jobs()).toHaveLength(1);

    const executor = new FakeExecutor();
    const config = makeConfig(undefined, await makeWorkspace(cleanups), { maxDepth: 2 });
    const fake = makeManager(config, cleanups, executor);
    const top = fake.spawn({ task: 'parent', label: 'parent' });
    await waitFor(() => executor.tasks.has(top.id), 'the parent to be run', { timeoutMs: 10_000 });
    executor.say(top.id, { kind: 'spawn', request: { outputSchema: SCHEMA } });
    const spawns = executor.tasks.get(top.id)?.spawns;
    await waitFor(() => spawns && [...spawns.values()].every((s) => s.answered), 'the answer', { timeoutMs: 10_000 });
    expect([...(spawns?.values() ?? [])].map(({ ok, code }) => ({ ok, code }))).toEqual([{ ok: false, code: 'TOOL_ARGUMENTS_INVALID' }]);
    expect(fake.jobs()).toHaveLength(1);
  });
});
