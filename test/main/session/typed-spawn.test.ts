/**
 * A typed job from the parent's model (docs/delivery.md "Typed results"): `output_schema` on
 * spawn_background_agent only when `background.allowOutputSchema` is on (else the argument is
 * not offered at all, and a call with it is a tool error); the job runs on the real pool and its
 * value reaches the parent's next turn as JSON in the delivery block.
 */
import { describe, expect, it } from 'vitest';
import { AgentSession, type SessionEvents } from '../../../src/main/session/agent-session.js';
import { createModelClient } from '../../../src/shared/model-call.js';
import type { ScriptStep } from '../../../src/sim/index.js';
import { RESEARCH_TASK, makeConfig, makeWorkspace, nextEvent, startSim, useCleanup } from '../../helpers/index.js';

const cleanups = useCleanup();
const SCHEMA = { type: 'object', properties: { file: { type: 'string' } }, required: ['file'], additionalProperties: false };

async function sessionWith(parentScript: ScriptStep[], allowOutputSchema: boolean) {
  const jobsSim = await startSim(cleanups);
  const parentSim = await startSim(cleanups, { script: parentScript });
  const config = makeConfig(jobsSim, await makeWorkspace(cleanups), { maxAlertsPerJob: 0, allowOutputSchema });
  const session = new AgentSession({
    config,
    closeExecutor: true,
    client: createModelClient({ baseUrl: parentSim.url, apiKey: 'k', requestTimeoutMs: 10_000 }),
  });
  cleanups.add(() => session.close({ timeoutMs: 2_000 }));
  return { session, parentSim };
}

/** The spawn tool's parameters as the parent's model was shown them. */
function spawnParameters(body: unknown): { properties: Record<string, unknown> } {
  const tools = (body as { tools: Array<{ function: { name: string; parameters: { properties: Record<string, unknown> } } }> }).tools;
  return tools.find((t) => t.function.name === 'spawn_background_agent')!.function.parameters;
}

describe('output_schema on spawn_background_agent', () => {
  it('allowed: offered; the job ends with data, and the follow-up turn reads it as JSON in the delivery block', async () => {
    const { session, parentSim } = await sessionWith(
      [
        { toolCalls: [{ id: 'typed', name: 'spawn_background_agent', arguments: { task: RESEARCH_TASK, label: 'typed', output_schema: SCHEMA } }] },
        { content: 'Started.' },
        { content: 'Got it.' },
      ],
      true,
    );
    const followUp = nextEvent<SessionEvents, 'turn-result'>(session, 'turn-result', (t) => t.followUp);
    await session.submit('Where is the backoff?');
    await followUp;
    expect(spawnParameters(parentSim.requests[0]?.body).properties.output_schema).toMatchObject({ type: 'object' });
    const job = session.manager.jobs().find((j) => j.label === 'typed');
    expect(job).toMatchObject({ status: 'ok', data: { file: 'src/retry.ts' } });
    const followUpInput = JSON.stringify(parentSim.requests.at(-1)?.body);
    expect(followUpInput).toContain('typed result as JSON');
    expect(followUpInput).toContain(JSON.stringify(JSON.stringify({ file: 'src/retry.ts' })).slice(1, -1));
    parentSim.assertScriptDone();
  });

  it('not allowed (the default): not offered, and a call that sends it anyway is a tool error; nothing starts', async () => {
    const { session, parentSim } = await sessionWith(
      [
        { toolCalls: [{ id: 'typed', name: 'spawn_background_agent', arguments: { task: RESEARCH_TASK, label: 'typed', output_schema: SCHEMA } }] },
        { content: 'It was refused.' },
      ],
      false,
    );
    await session.submit('Where is the backoff?');
    expect(spawnParameters(parentSim.requests[0]?.body).properties).not.toHaveProperty('output_schema');
    expect(session.manager.jobs()).toHaveLength(0);
    const answer = (parentSim.requests[1]?.body as { messages: Array<{ role: string; content: string }> }).messages.find((m) => m.role === 'tool');
    expect(answer?.content).toMatch(/^Error: invalid arguments for spawn_background_agent:[\s\S]*output_schema/);
  });
});
