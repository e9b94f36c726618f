import { configForAgent } from '../../shared/agents.js';
import { modelBaseUrl, type ForkpoolConfig } from '../../shared/config.js';
import type { RateGate } from '../../shared/model-call.js';
import type { JobSpec } from '../../shared/protocol.js';
import { SharedRateGate } from '../../shared/rate-gate.js';
import { RequestGates, type RequestGateService } from './request-gate.js';

/**
 * How a manager's model requests are gated, by `background.concurrency`:
 * - `fixed`: jobs and the parent share one pause-on-Retry-After gate (a SharedArrayBuffer the
 *   worker threads read); the job cap alone bounds concurrency.
 * - `adaptive`: per endpoint, requests in flight follow AIMD ({@link RequestGates}); jobs ask
 *   over their port, the parent asks locally and goes first.
 */
export class RequestGating {
  /** The fixed mode's shared gate (also handed to every job as its buffer). */
  readonly rateGateBuffer = SharedRateGate.createBuffer();
  /** Set in adaptive mode only. */
  readonly gates: RequestGates | undefined;
  readonly #config: ForkpoolConfig;

  constructor(config: ForkpoolConfig) {
    this.#config = config;
    const { concurrency, adaptive, maxConcurrent } = config.background;
    this.gates = concurrency === 'adaptive' ? new RequestGates(adaptive, maxConcurrent) : undefined;
  }

  /** The gate the parent agent's model requests go through (its endpoint: the config's). */
  parentGate(): RateGate {
    if (!this.gates) return new SharedRateGate(this.rateGateBuffer);
    return this.gates.parentGate(endpointOf(this.#config, undefined));
  }

  /**
   * The gate one job attempt's requests ask (its Attempt answers the worker's messages with
   * it), and what to call when the attempt ends. No gate in fixed mode.
   */
  leaseFor(spec: JobSpec): { service?: RequestGateService; release(): void } {
    if (!this.gates) return NO_LEASE;
    return this.gates.leaseFor(endpointOf(this.#config, spec.agent), spec.id);
  }

  close(): void {
    this.gates?.close();
  }
}

/** Fixed mode's lease: nothing to give back (one object for every job, not one each). */
const NO_LEASE: { service?: RequestGateService; release(): void } = Object.freeze({ release: () => {} });

/** A job's endpoint: its agent's base URL, else the config's (the limit is per endpoint). */
function endpointOf(config: ForkpoolConfig, agent: string | undefined): string {
  try {
    return modelBaseUrl(configForAgent(config, agent));
  } catch {
    // No endpoint configured (an injected executor that brings its own): one shared gate.
    return 'default';
  }
}
