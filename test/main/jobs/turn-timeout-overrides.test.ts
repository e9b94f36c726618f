/**
 * Issue 38 (B10): a turn timeout per agent (`agents.<name>.turnTimeoutMs`) and per spawn
 * (`turnTimeoutMs` on SpawnRequest and POST /v1/jobs), beside the config-wide `turnTimeoutMs`.
 * Through the real pool on the sim, whose one model call hangs: only a turn deadline can end
 * it. Codes and the deadline the error names are asserted, never durations.
 */
import { describe, expect, it } from 'vitest';
import { startForkpoolServer } from '../../../src/server/app.js';
import { ended, makeConfig, makeManager, makeWorkspace, startSim, useCleanup } from '../../helpers/index.js';
import { TOKEN } from '../../helpers/server.js';

const cleanups = useCleanup();
const POOL_TEST_TIMEOUT_MS = 60_000;
/** Request and idle timers far away: the hung call ends only at a turn deadline. */
const FAR = { requestTimeoutMs: 600_000, streamIdleTimeoutMs: 600_000, firstByteTimeoutMs: 600_000 };

async function hangingSim() {
  return startSim(cleanups, { script: [{ content: 'never sent' }], faults: { 1: { kind: 'hang_before_headers' } } });
}

describe('turnTimeoutMs per agent and per spawn (B10)', { timeout: POOL_TEST_TIMEOUT_MS }, () => {
  it("an agent's turnTimeoutMs ends its job's hung turn with TURN_TIMEOUT though the config's is off", async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await hangingSim();
    const config = makeConfig(sim, root, {}, { ...FAR, turnTimeoutMs: 0, agents: { quick: { description: 'Answers fast', turnTimeoutMs: 1_000 } } });
    const manager = makeManager(config, cleanups);
    const record = await ended(manager, manager.spawn({ task: 'survey', label: 'quick agent', agent: 'quick' }).id);
    expect(record).toMatchObject({ status: 'failed', stopReason: 'error', agent: 'quick' });
    expect(record.error).toMatchObject({ code: 'TURN_TIMEOUT', timeoutMs: 1_000 });
  });

  it("a spawn's turnTimeoutMs wins over its agent's and the config's", async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await hangingSim();
    const config = makeConfig(sim, root, {}, { ...FAR, turnTimeoutMs: 600_000, agents: { slow: { description: 'Takes its time', turnTimeoutMs: 500_000 } } });
    const manager = makeManager(config, cleanups);
    const record = await ended(manager, manager.spawn({ task: 'survey', label: 'own deadline', agent: 'slow', turnTimeoutMs: 1_500 }).id);
    expect(record).toMatchObject({ status: 'failed', stopReason: 'error' });
    expect(record.error).toMatchObject({ code: 'TURN_TIMEOUT', timeoutMs: 1_500 });
  });

  it('a bad turnTimeoutMs is refused naming the field: at spawn (nothing starts) and in the config', async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups, { script: [] });
    const manager = makeManager(makeConfig(sim, root), cleanups);
    expect(() => manager.spawn({ task: 'survey', label: 'bad', turnTimeoutMs: -5 })).toThrow(
      expect.objectContaining({ code: 'TOOL_ARGUMENTS_INVALID', message: expect.stringContaining('turnTimeoutMs') }),
    );
    expect(manager.jobs()).toHaveLength(0);
    expect(() => makeConfig(sim, root, {}, { agents: { quick: { description: 'x', turnTimeoutMs: 'soon' as never } } })).toThrow(
      /agents\.quick\.turnTimeoutMs/,
    );
    expect(sim.requests).toHaveLength(0);
  });

  it('POST /v1/jobs takes turnTimeoutMs: the job ends TURN_TIMEOUT at it; a bad one is a 400 naming it', async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await hangingSim();
    const server = await startForkpoolServer({ config: makeConfig(sim, root, {}, { ...FAR, turnTimeoutMs: 0 }), token: TOKEN, port: 0 });
    cleanups.add(() => server.close());
    const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
    const post = (body: unknown) => fetch(`${server.url}/v1/jobs`, { method: 'POST', headers, body: JSON.stringify(body) });

    const bad = await post({ task: 'survey', turnTimeoutMs: 'soon' });
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain('turnTimeoutMs');

    const created = await post({ task: 'survey', label: 'http deadline', turnTimeoutMs: 1_000 });
    expect(created.status).toBe(202);
    const [job] = ((await created.json()) as { jobs: Array<{ id: string }> }).jobs;
    const result = await fetch(`${server.url}/v1/jobs/${job!.id}/result?wait=60`, { headers });
    const body = await result.text();
    expect(body).toContain('TURN_TIMEOUT');
    expect(sim.requests).toHaveLength(1);
  });
});
