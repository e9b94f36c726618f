/**
 * A spawn's own spec (system prompt, tool subset, model) through the real pool: from the
 * parent's model (spawn_background_agent) and from the library (manager.spawn). The worker's
 * model requests on the sim show what it really ran with; a bad spec is refused before
 * anything starts, with a code (library) or a tool error naming it (the model).
 */
import { describe, expect, it } from 'vitest';
import { AgentSession, type SessionEvents } from '../../../src/main/session/agent-session.js';
import type { ParentEvent } from '../../../src/main/session/parent-agent.js';
import { createModelClient } from '../../../src/shared/model-call.js';
import type { LoopEvent } from '../../../src/shared/loop-events.js';
import type { ForkpoolConfigInput } from '../../../src/shared/config.js';
import type { ScriptStep } from '../../../src/sim/index.js';
import {
  RESEARCH_TASK,
  agentConfig,
  ended,
  makeConfig,
  makeManager,
  makeWorkspace,
  nextEvent,
  requestsForTask,
  startSim,
  systemOf,
  toolMessagesOf,
  toolNames,
  useCleanup,
} from '../../helpers/index.js';

const cleanups = useCleanup();

/** Read-only tools (no bash, no writes), a priced second model, no alert tool (so a job's tool list is exactly its built-ins). */
const READ_TOOLS = ['read_file', 'list_dir', 'find_files', 'grep', 'code_outline'] as const;
const extra: Partial<ForkpoolConfigInput> = { tools: [...READ_TOOLS], models: { 'cheap-model': { inputUsdPerMTok: 0.1, outputUsdPerMTok: 0.4 } } };
const PROMPT = 'Answer in one sentence and start it with SPEC-MARKER.';
const OTHER_TASK = 'Where is the LruCache class defined? Answer from the files in the workspace.';

async function sessionWith(parentScript: ScriptStep[], background: NonNullable<ForkpoolConfigInput['background']> = {}) {
  const root = await makeWorkspace(cleanups);
  const jobsSim = await startSim(cleanups);
  const parentSim = await startSim(cleanups, { script: parentScript });
  const config = makeConfig(jobsSim, root, { maxAlertsPerJob: 0, ...background }, extra);
  const session = new AgentSession({
    config,
    closeExecutor: true,
    client: createModelClient({ baseUrl: parentSim.url, apiKey: 'k', requestTimeoutMs: 10_000 }),
  });
  cleanups.add(() => session.close({ timeoutMs: 2_000 }));
  const toolCalls: Array<Extract<LoopEvent, { type: 'tool_call' }>> = [];
  session.on('parent', (event: ParentEvent) => {
    if (event.type === 'loop' && event.event.type === 'tool_call') toolCalls.push(event.event);
  });
  return { session, jobsSim, parentSim, toolCalls };
}

describe("a spawn's own spec from spawn_background_agent", () => {
  it("the worker runs with the appended prompt, only the subset's tools and the chosen model; the job carries the call's id and the call's event says background", async () => {
    const { session, jobsSim, parentSim, toolCalls } = await sessionWith([
      {
        toolCalls: [
          {
            id: 'call-spec',
            name: 'spawn_background_agent',
            arguments: { task: RESEARCH_TASK, label: 'spec job', system_prompt: PROMPT, tools: ['grep', 'read_file', 'grep'], model: 'cheap-model' },
          },
          { id: 'call-plain', name: 'spawn_background_agent', arguments: { task: OTHER_TASK, label: 'plain job' } },
          { id: 'call-list', name: 'list_dir', arguments: { path: '.' } },
        ],
      },
      { content: 'Two jobs started.' },
      { content: 'Both answered.' },
    ]);
    const followUp = nextEvent<SessionEvents, 'turn-result'>(session, 'turn-result', (t) => t.followUp);
    await session.submit('Look into the retry backoff and the cache.');
    await followUp;
    await session.onIdle();

    const specJob = session.manager.jobs().find((j) => j.label === 'spec job');
    const plainJob = session.manager.jobs().find((j) => j.label === 'plain job');
    expect(specJob).toMatchObject({ status: 'ok', parentToolId: 'call-spec' });
    expect(plainJob).toMatchObject({ status: 'ok', parentToolId: 'call-plain' });
    expect(Object.keys(specJob?.usage ?? {})).toEqual(['cheap-model']);

    const specRequests = requestsForTask(jobsSim, RESEARCH_TASK);
    const plainRequests = requestsForTask(jobsSim, OTHER_TASK);
    expect(specRequests.length).toBeGreaterThan(0);
    expect(plainRequests.length).toBeGreaterThan(0);
    for (const request of specRequests) {
      // The baseline a plain job gets, with the spawn's prompt appended.
      expect(systemOf(request)).toBe(`${systemOf(plainRequests[0]!)}\n\n${PROMPT}`);
      expect(toolNames(request).sort()).toEqual(['grep', 'read_file']);
      expect(request.body.model).toBe('cheap-model');
    }
    for (const request of plainRequests) {
      expect(toolNames(request).sort()).toEqual([...READ_TOOLS].sort());
      expect(request.body.model).toBe('forkpool-sim');
    }

    // The parent's tool-call events: a spawn is marked background, another tool is not.
    const byId = new Map(toolCalls.map((call) => [call.callId, call]));
    expect(byId.get('call-spec')?.background).toBe(true);
    expect(byId.get('call-plain')?.background).toBe(true);
    expect(byId.get('call-list')).toBeDefined();
    expect(byId.get('call-list')?.background).toBeUndefined();
    parentSim.assertScriptDone();
  });

  it("an unknown tool, a tool outside the caller's, a model outside the allowed ones and a replace the config does not allow: each a tool error naming it, nothing starts", async () => {
    const spawn = (id: string, spec: Record<string, unknown>) => ({
      id,
      name: 'spawn_background_agent',
      arguments: { task: RESEARCH_TASK, label: id, ...spec },
    });
    const { session, parentSim } = await sessionWith([
      {
        toolCalls: [
          spawn('unknown-tool', { tools: ['grep', 'rm_rf'] }),
          spawn('outside-tool', { tools: ['bash'] }),
          spawn('outside-model', { model: 'gpt-9-ultra' }),
          spawn('replace', { system_prompt: PROMPT, replace_system_prompt: true }),
          spawn('too-long', { system_prompt: 'x'.repeat(50_001) }),
        ],
      },
      { content: 'None of them started.' },
    ]);
    await session.submit('Try some spawns.');
    expect(session.manager.jobs()).toHaveLength(0);
    const results = new Map(
      (parentSim.requests[1]!.body.messages as Array<{ role: string; tool_call_id?: string; content: string }>)
        .filter((m) => m.role === 'tool')
        .map((m) => [m.tool_call_id, m.content]),
    );
    expect(results.get('unknown-tool')).toMatch(
      /^Error: tools: "rm_rf" is not a built-in tool or a tool of this catalog; the caller's tools are: read_file, list_dir/,
    );
    expect(results.get('outside-tool')).toMatch(
      /^Error: tools: "bash" is not among the caller's tools \(read_file, list_dir, find_files, grep, code_outline\)/,
    );
    expect(results.get('outside-model')).toMatch(/^Error: model: "gpt-9-ultra" is not allowed for a spawn; allowed: "forkpool-sim", "cheap-model"$/);
    expect(results.get('replace')).toMatch(/^Error: replaceSystemPrompt: .*background\.allowSystemPromptReplace is false/);
    expect(results.get('too-long')).toMatch(/^Error: invalid arguments for spawn_background_agent: .*system_prompt/s);
    expect(toolMessagesOf(parentSim.requests[1]!.body)).toHaveLength(5);
    parentSim.assertScriptDone();
  });
});

describe("a spawn's own spec from the library", () => {
  it('replaces the prompt where the config allows, narrows an agent to its own tools, and refuses the rest with a code before anything is booked', async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups);
    const open = makeManager(agentConfig(sim, root, extra, { maxAlertsPerJob: 0, allowSystemPromptReplace: true }), cleanups);
    const replaced = open.spawn({ task: RESEARCH_TASK, label: 'replaced', systemPrompt: PROMPT, replaceSystemPrompt: true });
    const narrowed = open.spawn({ task: OTHER_TASK, label: 'scout narrowed', agent: 'scout', tools: ['grep'], model: 'cheap-model' });
    expect((await ended(open, replaced.id)).status).toBe('ok');
    expect((await ended(open, narrowed.id)).status).toBe('ok');
    for (const request of requestsForTask(sim, RESEARCH_TASK)) expect(systemOf(request)).toBe(PROMPT);
    const scoutRequests = requestsForTask(sim, OTHER_TASK);
    expect(scoutRequests.length).toBeGreaterThan(0);
    for (const request of scoutRequests) {
      expect(toolNames(request)).toEqual(['grep']);
      expect(request.body.model).toBe('cheap-model');
      // The agent's own prompt is still there: the spawn added none.
      expect(systemOf(request)).toContain('You are the scout');
    }

    const closed = makeManager(agentConfig(sim, root, extra, { maxAlertsPerJob: 0 }), cleanups);
    const refusals: Array<[Record<string, unknown>, string, RegExp]> = [
      [{ tools: ['nope'] }, 'TOOL_UNKNOWN', /tools: "nope" is not a built-in tool/],
      [{ tools: ['bash'] }, 'TOOL_NOT_ALLOWED', /"bash" is not among the caller's tools/],
      // The scout's own tools are find_files, grep and read_file: list_dir is the caller's, not its.
      [{ agent: 'scout', tools: ['list_dir'] }, 'TOOL_NOT_ALLOWED', /"list_dir" is not among agent "scout"'s tools \(find_files, grep, read_file\)/],
      [{ model: 'elsewhere' }, 'MODEL_NOT_ALLOWED', /allowed: "forkpool-sim", "scout-model", "reviewer-model", "cheap-model"/],
      [{ systemPrompt: PROMPT, replaceSystemPrompt: true }, 'PROMPT_REPLACE_NOT_ALLOWED', /allowSystemPromptReplace is false/],
      [{ replaceSystemPrompt: true }, 'TOOL_ARGUMENTS_INVALID', /needs a systemPrompt/],
      [{ systemPrompt: 'x'.repeat(50_001) }, 'TOOL_ARGUMENTS_INVALID', /systemPrompt/],
    ];
    for (const [spec, code, message] of refusals) {
      let thrown: unknown;
      try {
        closed.spawn({ task: RESEARCH_TASK, label: 'refused', ...spec });
      } catch (error) {
        thrown = error;
      }
      expect(thrown, JSON.stringify(spec)).toMatchObject({ code, message: expect.stringMatching(message) });
    }
    expect(closed.jobs()).toHaveLength(0);
  });

  it("a resumed job keeps its spawn's tool subset and model, and its prompt (in the conversation)", async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups);
    const manager = makeManager(makeConfig(sim, root, { maxAlertsPerJob: 0 }, extra), cleanups);
    const first = manager.spawn({ task: RESEARCH_TASK, label: 'first', systemPrompt: PROMPT, tools: ['grep', 'read_file'], model: 'cheap-model' });
    expect((await ended(manager, first.id)).status).toBe('ok');
    const instruction = 'Now say which function computes the delay.';
    const resumed = manager.parentControls.resume(first.id, instruction);
    expect((await ended(manager, resumed.id)).status).toBe('ok');
    const after = sim.requests.filter((r) => JSON.stringify(r.body.messages).includes(instruction));
    expect(after.length).toBeGreaterThan(0);
    for (const request of after) {
      expect(toolNames(request).sort()).toEqual(['grep', 'read_file']);
      expect(request.body.model).toBe('cheap-model');
      expect(systemOf(request).endsWith(`\n\n${PROMPT}`)).toBe(true);
    }
  });

  it('identical tasks with different specs are different spawns; with the same spec, the second joins the first', async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups, { latencyMs: 200 });
    const manager = makeManager(makeConfig(sim, root, { maxAlertsPerJob: 0 }, extra), cleanups);
    const first = manager.spawn({ task: RESEARCH_TASK, label: 'a', model: 'cheap-model' });
    const otherModel = manager.spawn({ task: RESEARCH_TASK, label: 'b' });
    const otherTools = manager.spawn({ task: RESEARCH_TASK, label: 'c', model: 'cheap-model', tools: ['grep'] });
    const otherPrompt = manager.spawn({ task: RESEARCH_TASK, label: 'd', model: 'cheap-model', systemPrompt: PROMPT });
    const same = manager.spawn({ task: RESEARCH_TASK, label: 'e', model: 'cheap-model' });
    expect(new Set([first.id, otherModel.id, otherTools.id, otherPrompt.id]).size).toBe(4);
    expect([otherModel.joined, otherTools.joined, otherPrompt.joined]).toEqual([undefined, undefined, undefined]);
    expect(same).toMatchObject({ id: first.id, joined: 'attached' });
    await Promise.all([first, otherModel, otherTools, otherPrompt].map((h) => ended(manager, h.id)));
  });
});
