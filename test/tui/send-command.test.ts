/**
 * `/bg send` and `/bg interrupt` in the chat, and the parent's send_to_background_agent tool:
 * a real session (its jobs in the Piscina pool) on the sim, a job's model call held.
 */
import { describe, expect, it } from 'vitest';
import { AgentSession } from '../../src/main/session/agent-session.js';
import { parentJobTools } from '../../src/main/session/parent-tools.js';
import { steerTool } from '../../src/main/session/steer-tool.js';
import { ToolError } from '../../src/shared/errors.js';
import { ChatController } from '../../src/tui/controller.js';
import { ended, makeConfig, makeWorkspace, messagesOf, startSim, useCleanup, waitFor, watchManager } from '../helpers/index.js';

const cleanups = useCleanup();

describe('/bg send and /bg interrupt', () => {
  it('interrupts a job mid-call with the message, then refuses an ended job naming its state', async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups, { faults: { 1: { kind: 'hang_before_headers' } }, script: [{ content: 'Answered the message.' }] });
    const session = new AgentSession({ config: makeConfig(sim, root), closeExecutor: true });
    watchManager(session.manager);
    cleanups.add(() => session.close({ timeoutMs: 2_000 }));
    const chat = new ChatController({ session, closeTimeoutMs: 2_000 });
    const texts = () => chat.entries.map((e) => e.text);

    chat.submitLine('/bg start survey the workspace');
    await waitFor(() => sim.requests.length === 1, 'the job mid-call');
    chat.submitLine('/bg send');
    expect(texts().at(-1)).toBe('usage: /bg send <id|name> <message>');
    chat.submitLine('/bg interrupt bg-1 just say what src/retry.ts does');
    expect(texts().at(-1)).toMatch(/^message 1 to bg-1 ".*": its model call was interrupted; it reads it now$/);
    const record = await ended(session.manager, 'bg-1');
    expect(record.status).toBe('ok');
    const users = messagesOf(sim.requests[1] as never).filter((m) => m.role === 'user');
    expect(String(users.at(-1)?.content)).toContain('just say what src/retry.ts does');

    chat.submitLine('/bg send bg-1 too late');
    expect(chat.entries.at(-1)).toMatchObject({ kind: 'error', text: expect.stringMatching(/bg-1 .* has ended \(.*status ok\)/) });
  });
});

describe('send_to_background_agent (the parent tool)', () => {
  it('is among the parent tools; an ended job is a ToolError naming its state', async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups, { script: [{ content: 'done' }] });
    const session = new AgentSession({ config: makeConfig(sim, root), closeExecutor: true });
    watchManager(session.manager);
    cleanups.add(() => session.close({ timeoutMs: 2_000 }));
    const tool = steerTool(session.manager.parentControls);
    const { id } = session.manager.spawn({ task: 'Quick task.', label: 'quick', role: 'user', wave: null });
    await ended(session.manager, id);
    const error = await tool.run({ job_id: id, message: 'too late' }, {} as never).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(ToolError);
    expect(error).toMatchObject({ code: 'JOB_ENDED', toolName: 'send_to_background_agent' });
    // A user job's result may have been delivered already (a follow-up turn): the state is named either way.
    expect((error as ToolError).message).toMatch(/has ended \((ended|delivered), status ok\)/);
    expect(tool.parameters.safeParse({ job_id: id, message: '' }).success).toBe(false);
    const names = parentJobTools({
      config: session.agent.config,
      manager: session.manager,
      deliveries: session.deliveries,
      activity: session.activity,
      currentTurn: () => 0,
      spawnFromAgent: () => {
        throw new Error('unused');
      },
      spawnForAgentTool: () => {
        throw new Error('unused');
      },
    }).map((t) => t.name);
    expect(names).toContain('send_to_background_agent');
  });
});
