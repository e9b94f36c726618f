import type { MessagePort } from 'node:worker_threads';
import { configForAgent } from '../shared/agents.js';
import { modelBaseUrl } from '../shared/config.js';
import { connectionSlotsFor, type SlotSource } from '../shared/connection-slots.js';
import type { ForkpoolConfig } from '../shared/config.js';
import { threadBacklog } from '../shared/thread-backlog.js';
import { mainMessageSchema, type JobSpec, type StopRequest } from '../shared/protocol.js';
import { applySpawnSpec } from '../shared/spawn-spec.js';

/** A started job's model connections; `leave` when it ends, whatever happened (a second call does nothing). */
export interface JobLane extends SlotSource {
  leave(): void;
}

/**
 * Waits for the job's turn in its thread's backlog (thread-backlog.ts), then gives its lane: the
 * thread's connections to its endpoint, its first request ending its entering.
 */
export async function enterThread(config: Pick<ForkpoolConfig, 'baseUrl' | 'modelConnectionsPerThread'>, signal: AbortSignal): Promise<JobLane> {
  const slots = connectionSlotsFor(modelBaseUrl(config), config.modelConnectionsPerThread);
  const arrived = await threadBacklog.enter(slots.limit, signal);
  return {
    acquire: (callSignal) => {
      // Waiting for a slot (if it must) before it stops entering: its place passes on in one step.
      const slot = slots.acquire(callSignal);
      arrived();
      return slot;
    },
    leave: arrived,
  };
}

/**
 * A started job's wait for its turn to build its loop (see {@link enterThread}): until fewer
 * than its thread's connections to its endpoint have a job waiting in the thread's queues, it holds only its spec
 * and this wait (a job that built its tools, messages and loop first held ~20 KB to wait for a
 * connection the same time). What the main thread sends meanwhile is kept, in order, for the
 * job's own handler; a cancel also aborts the wait (it rejects with an AbortError).
 */
export async function waitToStart(
  spec: JobSpec,
  port: Pick<MessagePort, 'on' | 'off'>,
  controller: AbortController,
  cancelReason: (reason: StopRequest) => Error,
): Promise<{ lane: JobLane; early: unknown[] }> {
  const early: unknown[] = [];
  const onEarly = (raw: unknown) => {
    early.push(raw);
    const parsed = mainMessageSchema.safeParse(raw);
    if (parsed.success && parsed.data.type === 'cancel') controller.abort(cancelReason(parsed.data.reason));
  };
  port.on('message', onEarly);
  try {
    const config = applySpawnSpec(configForAgent(spec.config, spec.agent), spec);
    return { lane: await enterThread(config, controller.signal), early };
  } finally {
    port.off('message', onEarly);
  }
}
