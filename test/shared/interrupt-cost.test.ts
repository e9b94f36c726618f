/**
 * A job's steering costs one cancel per model call (issue 40: less memory per job in flight). The
 * inbox is handed the tool loop's own cancel of the call in flight instead of making an
 * AbortController of its own per call, which every job waiting in its model call held: 50,000
 * of them on a `shared` thread at 100,000 in flight. An interrupting message still cancels that
 * call alone and the loop asks again with it.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { runToolLoop, type ToolLoopOptions } from '../../src/shared/tool-loop.js';
import { SteeringInbox } from '../../src/worker/steering.js';
import { useCleanup, waitFor } from '../helpers/cleanup.js';
import { tempWorkspace } from '../helpers/config.js';
import { toolContextFor } from '../helpers/gates.js';
import { startTestSim } from '../helpers/sim.js';

const cleanup = useCleanup();
const RealAbortController = globalThis.AbortController;
let made = 0;
/** Counts every AbortController made in this process (the loop, the model call, the client). */
class CountingAbortController extends RealAbortController {
  constructor() {
    super();
    made++;
  }
}
afterEach(() => {
  globalThis.AbortController = RealAbortController;
});

async function controllersPerRun(steering: SteeringInbox | undefined): Promise<number> {
  const t = await startTestSim(cleanup, { script: [{ content: 'first answer' }] }, { workspaceRoot: tempWorkspace({ 'a.txt': 'a' }, cleanup), stream: false });
  const options: ToolLoopOptions = {
    client: t.client,
    config: t.config,
    messages: [{ role: 'user', content: 'Look.' }],
    tools: [],
    toolContext: toolContextFor(t.config),
    ...(steering ? { interruptCall: (interrupt) => steering.duringCall(interrupt), beforeModelCall: () => steering.take() } : {}),
  };
  globalThis.AbortController = CountingAbortController;
  made = 0;
  const result = await runToolLoop(options);
  globalThis.AbortController = RealAbortController;
  expect(result.stopReason).toBe('final');
  return made;
}

describe('steering in the tool loop', () => {
  it('costs one AbortController per model call (the call’s own cancel), not two', async () => {
    const without = await controllersPerRun(undefined);
    const withSteering = await controllersPerRun(new SteeringInbox([], () => {}));
    expect(withSteering - without).toBe(1);
  });

  it('an interrupting message still cancels the call in flight alone, and the loop asks again with it', async () => {
    const t = await startTestSim(cleanup, { latencyMs: 400 }, { workspaceRoot: tempWorkspace({ 'a.txt': 'a' }, cleanup), stream: false });
    const taken: number[][] = [];
    const steering = new SteeringInbox([], (ids) => taken.push(ids));
    let calls = 0;
    const run = runToolLoop({
      client: t.client,
      config: t.config,
      messages: [{ role: 'user', content: 'Say hello.' }],
      tools: [],
      toolContext: toolContextFor(t.config),
      interruptCall: (interrupt) => steering.duringCall(interrupt),
      beforeModelCall: () => steering.take(),
      onEvent: (event) => {
        if (event.type === 'model_request') calls++;
      },
    });
    await waitFor(() => t.sim.requests.length === 1, 'the first model request');
    steering.receive({ id: 7, text: 'Use the other file.' }, true);
    const result = await run;
    expect(result.stopReason).toBe('final');
    expect(calls).toBe(2);
    expect(taken).toEqual([[7]]);
    expect(result.messages.some((m) => m.role === 'user' && typeof m.content === 'string' && m.content.includes('Use the other file.'))).toBe(true);
  });
});
