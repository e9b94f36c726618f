/**
 * Sim helpers: a sim server closed after the test, and a model client on it built the way
 * forkpool builds one (`createModelClient`).
 *
 *   const { sim, client, config } = await startTestSim(cleanup, { script: [...] }, { maxRetries: 0 });
 */
import type { ForkpoolConfig, ForkpoolConfigInput } from '../../src/shared/config.js';
import { createModelClient, type ModelClient } from '../../src/shared/model-call.js';
import { startSimServer, type SimServer, type SimServerOptions } from '../../src/sim/index.js';
import type { Cleanup } from './cleanup.js';
import { tempWorkspace, testConfig } from './config.js';

export interface TestSim {
  sim: SimServer;
  /** `testConfig({ baseUrl: sim.url, ...configOverrides })`. */
  config: ForkpoolConfig;
  /** `createModelClient(config)`: forkpool's own client (fetch, no SDK), pointed at the sim. */
  client: ModelClient;
}

/**
 * Starts a loopback sim (closed after the test) and a config + client pointing at it. The
 * workspace defaults to a fresh {@link tempWorkspace} removed after the test.
 */
export async function startTestSim(cleanup: Cleanup, simOptions: SimServerOptions = {}, configOverrides: Partial<ForkpoolConfigInput> = {}): Promise<TestSim> {
  // Tests read request bodies (`sim.requests[i].body`): ask the sim to keep them (its default is not to).
  const sim = await startSimServer({ recordBodies: true, ...simOptions });
  cleanup.add(() => sim.close());
  const config = testConfig({ baseUrl: sim.url, workspaceRoot: configOverrides.workspaceRoot ?? tempWorkspace(undefined, cleanup), ...configOverrides });
  return { sim, config, client: createModelClient(config) };
}

/** A loopback sim, closed after the test, that keeps request bodies (tests read `sim.requests[i].body`). */
export async function startSim(cleanups: Cleanup, options: SimServerOptions = {}): Promise<SimServer> {
  // The sim's default is not to keep them.
  const sim = await startSimServer({ recordBodies: true, ...options });
  cleanups.add(() => sim.close());
  return sim;
}
