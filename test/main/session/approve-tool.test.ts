/**
 * `approve_background_tool_call`: the parent's model answers a job's approval, only where the
 * config allows it (`parentModelApprovals`, default false: the tool is not offered at all). A real
 * session on the sim, its job in the Piscina pool, `approvals: "ask"`: the job asks to write a
 * file, then the parent's scripted model calls the tool.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { AgentSession } from '../../../src/main/session/agent-session.js';
import { approveTool } from '../../../src/main/session/approve-tool.js';
import { ToolError } from '../../../src/shared/errors.js';
import { ended, makeConfig, makeWorkspace, startSim, toolMessagesOf, useCleanup, waitFor, watchManager } from '../../helpers/index.js';

const cleanups = useCleanup();

const write = { toolCalls: [{ name: 'write_file', arguments: { path: 'notes.txt', content: 'parent allowed it\n' } }] };
const approveCall = { toolCalls: [{ name: 'approve_background_tool_call', arguments: { job: 'bg-1', decision: 'allow' } }] };
/** Answers for whatever asks next (the job, the parent after its tool call, a follow-up turn): their order is not fixed. */
const spare = Array.from({ length: 4 }, () => ({ content: 'Fine.' }));

async function waitingSession(parentModelApprovals: boolean) {
  const root = await makeWorkspace(cleanups);
  const sim = await startSim(cleanups, { script: [write, approveCall, ...spare] });
  const session = new AgentSession({ config: makeConfig(sim, root, {}, { approvals: 'ask', parentModelApprovals }), closeExecutor: true });
  watchManager(session.manager);
  cleanups.add(() => session.close({ timeoutMs: 2_000 }));
  session.manager.spawn({ task: 'Write notes.txt.', label: 'writer', role: 'user', wave: null });
  await waitFor(() => session.manager.approvals().length === 1, 'bg-1 to wait for an approval');
  return { root, sim, session };
}

const offered = (body: unknown) => ((body as { tools?: Array<{ function: { name: string } }> }).tools ?? []).map((t) => t.function.name);

describe('approve_background_tool_call', () => {
  it('is not offered by default: the model calling it anyway gets an unknown-tool error and the job still waits', async () => {
    const { root, sim, session } = await waitingSession(false);
    await session.submit('Let bg-1 write its notes.');
    const parentCall = sim.requests[1]?.body;
    expect(offered(parentCall)).not.toContain('approve_background_tool_call');
    expect(offered(parentCall)).toContain('spawn_background_agent');
    expect(toolMessagesOf(sim.requests[2]?.body as never).join('\n')).toMatch(/approve_background_tool_call/);
    expect(session.manager.approvals().map((p) => p.jobId)).toEqual(['bg-1']);
    expect(existsSync(path.join(root, 'notes.txt'))).toBe(false);
  });

  it('with parentModelApprovals: offered, and its allow runs the call, recorded as by parent-model', async () => {
    const { root, sim, session } = await waitingSession(true);
    await session.submit('Let bg-1 write its notes.');
    expect(offered(sim.requests[1]?.body)).toContain('approve_background_tool_call');
    const record = await ended(session.manager, 'bg-1');
    expect(record.status).toBe('ok');
    expect(record.approvals).toMatchObject([{ tool: 'write_file', decision: 'allow', by: 'parent-model' }]);
    expect(readFileSync(path.join(root, 'notes.txt'), 'utf8')).toBe('parent allowed it\n');
    const told = sim.requests.flatMap((r) => toolMessagesOf(r.body as never)).find((text) => text.startsWith('Allowed: job bg-1'));
    expect(told).toMatch(/^Allowed: job bg-1 runs its write_file call \S+ now\./);
    // A job that waits for nothing is a tool error naming it, not a silent success.
    const error = await approveTool(session.manager)
      .run({ job: 'bg-1', decision: 'deny' }, {} as never)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ToolError);
    expect((error as ToolError).message).toMatch(/bg-1/);
  });
});
