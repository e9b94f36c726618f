/**
 * `full_context: true` through the real pool: what the job's model received (the sim's request
 * log) includes the parent's current request and what it did in this turn, even in turn 1.
 */
import { describe, expect, it } from 'vitest';
import { AgentSession } from '../../../src/main/session/agent-session.js';
import { createModelClient } from '../../../src/shared/model-call.js';
import { parseConfig } from '../../../src/shared/config.js';
import { messagesOf, requestsForTask, systemOf, useCleanup, RESEARCH_TASK, ended, makeWorkspace, startSim } from '../../helpers/index.js';

const cleanups = useCleanup();

describe('full_context', () => {
  it("a job spawned in the parent's first turn gets the current request and this turn's actions; a later turn's job gets the earlier turns too", async () => {
    const root = await makeWorkspace(cleanups);
    const jobsSim = await startSim(cleanups);
    const LATER_TASK = 'Where is the LruCache class defined? Answer from the files in the workspace.';
    const parentSim = await startSim(cleanups, {
      script: [
        { content: 'Let me look at the README first.', toolCalls: [{ name: 'read_file', arguments: { path: 'README.md' } }] },
        { toolCalls: [{ name: 'spawn_background_agent', arguments: { task: RESEARCH_TASK, label: 'with context', full_context: true } }] },
        { content: 'Started.' },
        { content: 'Noted the results.' },
        { toolCalls: [{ name: 'spawn_background_agent', arguments: { task: LATER_TASK, label: 'later', full_context: true } }] },
        { content: 'Started again.' },
        { content: 'Done.' },
      ],
    });
    const config = parseConfig({ workspaceRoot: root, baseUrl: jobsSim.url, apiKey: 'k', maxRetries: 0, background: { cancelGraceMs: 200 } });
    const session = new AgentSession({
      config,
      closeExecutor: true,
      client: createModelClient({ baseUrl: parentSim.url, apiKey: 'k', requestTimeoutMs: 10_000 }),
    });
    cleanups.add(() => session.close({ timeoutMs: 2_000 }));

    await session.submit('Why does the demo workspace retry? Check the README and research the backoff.');
    await ended(session.manager, session.manager.jobs()[0]!.id);
    await session.onIdle();
    const [first] = requestsForTask(jobsSim, RESEARCH_TASK);
    // The orientation follows the fixed system prompt, which stays the same for every job (issue 40).
    expect(systemOf(first!)).not.toContain('Orientation');
    const orientation = String(messagesOf(first!)[1]?.content);
    expect(orientation).toContain('Orientation from the agent that started you');
    expect(orientation).toContain('Current request: Why does the demo workspace retry? Check the README and research the backoff.');
    expect(orientation).toContain('Said: Let me look at the README first.');
    expect(orientation).toMatch(/Used read_file\(\{"path":"README\.md"\}\)/);

    await session.submit('Now find the cache class.');
    await session.onIdle();
    const [later] = requestsForTask(jobsSim, LATER_TASK);
    const laterOrientation = String(messagesOf(later!)[1]?.content);
    expect(laterOrientation).toContain('User asked: Why does the demo workspace retry?');
    expect(laterOrientation).toContain('Current request: Now find the cache class.');
    expect(systemOf(later!)).toBe(systemOf(first!));
    expect(messagesOf(later!)[2]?.content).toBe(LATER_TASK);
    parentSim.assertScriptDone();
  });
});
