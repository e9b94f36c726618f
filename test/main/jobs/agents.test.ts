/**
 * Configured peer agents through the real pool: the catalog is checked at load, a peer job
 * runs the peer's model, tools and prompt (seen in the sim's request log), an unknown agent
 * starts nothing, and user jobs pick their agent.
 */
import { describe, expect, it } from 'vitest';
import { AgentSession } from '../../../src/main/session/agent-session.js';
import { BackgroundManager } from '../../../src/main/jobs/manager.js';
import { parseConfig } from '../../../src/shared/config.js';
import { ConfigError } from '../../../src/shared/errors.js';
import { configForAgent } from '../../../src/shared/agents.js';
import { BACKGROUND_PROMPT_MARKER } from '../../../src/shared/prompts.js';
import { totalUsage } from '../../../src/shared/usage.js';
import {
  SCOUT_PROMPT,
  agentConfig,
  requestsForTask,
  systemOf,
  toolNames,
  toolMessagesOf,
  toolSchema,
  useCleanup,
  RESEARCH_TASK,
  ended,
  makeManager,
  makeWorkspace,
  startSim,
} from '../../helpers/index.js';

const cleanups = useCleanup();

describe('agent catalog in the config', () => {
  it('names an unknown tool, an unknown agentTools entry and an unknown background_agent', () => {
    const base = { workspaceRoot: '/tmp' };
    // A tool name is checked against the catalog (built-ins, host tools, modules) when the manager starts.
    const badTool = () => new BackgroundManager({ config: parseConfig({ ...base, agents: { scout: { description: 'd', tools: ['grep', 'telnet'] } } }) });
    expect(badTool).toThrow(ConfigError);
    expect(badTool).toThrow(/agents\.scout\.tools\[1\].*"telnet" \(TOOL_UNKNOWN\)/);
    expect(() => parseConfig({ ...base, agents: { scout: { description: 'd', tools: ['tel net'] } } })).toThrow(/agents\.scout\.tools\.0/);
    expect(() => parseConfig({ ...base, agents: { scout: { description: 'd' } }, agentTools: ['scout', 'ghost'] })).toThrow(
      /agentTools\.1.*"scout".*received "ghost"/,
    );
    expect(() => parseConfig({ ...base, background_agent: 'ghost' })).toThrow(/background\.defaultAgent.*none is.*"ghost"/);
    expect(() => parseConfig({ ...base, agents: { 'Bad Name': { description: 'd' } } })).toThrow(/agents/);
    const ok = parseConfig({ ...base, agents: { scout: { description: 'd' } }, background_agent: 'scout' });
    expect(ok.background.defaultAgent).toBe('scout');
  });
});

describe("a peer's endpoint and key", () => {
  it("the parent's key goes only to the parent's endpoint; a peer's own key to its own", () => {
    const config = parseConfig({
      workspaceRoot: '/tmp',
      baseUrl: 'http://127.0.0.1:1/v1',
      apiKey: 'parent-key',
      agents: {
        same: { description: 'd' },
        other: { description: 'd', baseUrl: 'http://127.0.0.2:1/v1' },
        own: { description: 'd', baseUrl: 'http://127.0.0.2:1/v1', apiKey: 'own-key' },
      },
    });
    expect(configForAgent(config, 'same')).toMatchObject({ baseUrl: 'http://127.0.0.1:1/v1', apiKey: 'parent-key' });
    expect(configForAgent(config, 'other').apiKey).toBeUndefined();
    expect(configForAgent(config, 'other').baseUrl).toBe('http://127.0.0.2:1/v1');
    expect(configForAgent(config, 'own').apiKey).toBe('own-key');
  });
});

describe('peer agents through the pool', () => {
  it("a peer job runs the peer's model, tools and appended prompt; a replacing prompt stands alone; usage is keyed by the peer's model", async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups);
    const config = agentConfig(sim, root);
    const manager = makeManager(config, cleanups);
    const scout = manager.spawn({ task: RESEARCH_TASK, label: 'scout job', agent: 'scout' });
    const reviewTask = 'Where is the LruCache class defined? Answer from the files in the workspace.';
    const reviewer = manager.spawn({ task: reviewTask, label: 'review job', agent: 'reviewer' });
    const [scoutRecord, reviewRecord] = await Promise.all([ended(manager, scout.id), ended(manager, reviewer.id)]);
    expect(scoutRecord.status).toBe('ok');
    expect(scoutRecord.agent).toBe('scout');

    const scoutRequests = requestsForTask(sim, RESEARCH_TASK);
    expect(scoutRequests.length).toBeGreaterThan(0);
    for (const request of scoutRequests) {
      expect(request.body.model).toBe('scout-model');
      expect(toolNames(request).sort()).toEqual(['find_files', 'grep', 'read_file', 'report_alert']);
      expect(systemOf(request)).toContain(BACKGROUND_PROMPT_MARKER);
      expect(systemOf(request).trimEnd().endsWith(SCOUT_PROMPT)).toBe(true);
    }
    const reviewRequests = requestsForTask(sim, reviewTask);
    expect(reviewRequests.length).toBeGreaterThan(0);
    for (const request of reviewRequests) {
      expect(request.body.model).toBe('reviewer-model');
      expect(systemOf(request)).toBe('You are the reviewer. Only this prompt.');
      // No tool list of its own: the parent's built-ins.
      expect(toolNames(request)).toContain('list_dir');
    }
    expect(Object.keys(scoutRecord.usage)).toEqual(['scout-model']);
    expect(Object.keys(reviewRecord.usage)).toEqual(['reviewer-model']);
  });

  it("the spawn tool's agent is the caller's agentTools: an unknown agent, or a configured one outside the list, is a tool error and nothing starts", async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups, {
      script: [
        {
          toolCalls: [
            { id: 'ghost', name: 'spawn_background_agent', arguments: { task: RESEARCH_TASK, label: 'ghost job', agent: 'ghost' } },
            { id: 'not-given', name: 'spawn_background_agent', arguments: { task: RESEARCH_TASK, label: 'reviewer job', agent: 'reviewer' } },
          ],
        },
        { content: 'Neither agent may be started.' },
      ],
    });
    const config = agentConfig(sim, root, { agentTools: ['scout'] });
    const session = new AgentSession({ config, closeExecutor: true });
    cleanups.add(() => session.close({ timeoutMs: 2_000 }));
    expect(() => session.manager.spawn({ task: RESEARCH_TASK, label: 'x', agent: 'ghost' })).toThrow(/AGENT_UNKNOWN|no agent named "ghost"/);

    const result = await session.submit('Use a ghost agent and the reviewer.');
    expect(result.answer).toBe('Neither agent may be started.');
    expect(session.manager.jobs()).toHaveLength(0);
    expect(sim.requests).toHaveLength(2);
    // The schema offered only the allow-listed peer as an enum; the model read a tool error for each.
    expect(toolSchema(sim.requests[0]!, 'spawn_background_agent').properties.agent.enum).toEqual(['scout']);
    const errors = toolMessagesOf(sim.requests[1]!.body);
    expect(errors).toHaveLength(2);
    for (const error of errors) expect(error).toMatch(/^Error: invalid arguments for spawn_background_agent: .*agent/is);
    sim.assertScriptDone();
    // A person (and the library, and HTTP) may still start any configured agent.
    const manager = makeManager(config, cleanups);
    const byPerson = manager.spawn({ task: RESEARCH_TASK, label: 'user reviewer', agent: 'reviewer', role: 'user', wave: null });
    const byCode = manager.spawn({ task: 'Review src/retry.ts.', label: 'library reviewer', agent: 'reviewer' });
    for (const { id } of [byPerson, byCode]) expect(manager.get(id)?.agent).toBe('reviewer');
    for (const { id } of [byPerson, byCode]) manager.cancel(id);
    await Promise.all([byPerson, byCode].map(({ id }) => ended(manager, id)));
  });

  it('with peers configured but no agentTools, the spawn schema has no agent field and an agent argument is a tool error', async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups, {
      script: [
        { toolCalls: [{ name: 'spawn_background_agent', arguments: { task: RESEARCH_TASK, label: 'scout job', agent: 'scout' } }] },
        { content: 'Not offered.' },
      ],
    });
    const session = new AgentSession({ config: agentConfig(sim, root), closeExecutor: true });
    cleanups.add(() => session.close({ timeoutMs: 2_000 }));
    await session.submit('Use the scout.');
    expect(toolSchema(sim.requests[0]!, 'spawn_background_agent').properties.agent).toBeUndefined();
    expect(toolMessagesOf(sim.requests[1]!.body)[0]).toMatch(/^Error: invalid arguments for spawn_background_agent: .*agent/is);
    expect(session.manager.jobs()).toHaveLength(0);
    sim.assertScriptDone();
  });

  it('without peers the spawn schema has no agent field', async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups, { script: [{ content: 'nothing to do' }] });
    const config = parseConfig({ workspaceRoot: root, baseUrl: sim.url, apiKey: 'k', maxRetries: 0 });
    const session = new AgentSession({ config, closeExecutor: true });
    cleanups.add(() => session.close({ timeoutMs: 2_000 }));
    await session.submit('hello');
    expect(toolSchema(sim.requests[0]!, 'spawn_background_agent').properties.agent).toBeUndefined();
  });

  it("a parent's peer spawn is booked under primary:subagent keyed by the peer's model; user jobs take background.defaultAgent", async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups);
    const config = agentConfig(sim, root, { background_agent: 'scout' } as never);
    const session = new AgentSession({ config, closeExecutor: true });
    cleanups.add(() => session.close({ timeoutMs: 2_000 }));
    const user = session.startUserJob(RESEARCH_TASK, 'user job');
    const explicit = session.startUserJob(RESEARCH_TASK, 'user job 2', { agent: 'reviewer' });
    const [userRecord, explicitRecord] = await Promise.all([ended(session.manager, user.id), ended(session.manager, explicit.id)]);
    expect(userRecord.agent).toBe('scout');
    expect(explicitRecord.agent).toBe('reviewer');
    await session.onIdle();
    const booked = session.agent.session.usage()['user:subagent'] ?? {};
    expect(Object.keys(booked).sort()).toEqual(['reviewer-model', 'scout-model']);
    expect(totalUsage(booked).totalTokens).toBe(totalUsage(userRecord.usage).totalTokens + totalUsage(explicitRecord.usage).totalTokens);
  });
});
