/**
 * What travels through Redis between the main process and `forkpool worker`s: the BullMQ job's
 * data (a job spec without secrets), the events channel (worker → main: a job's port messages,
 * tagged with the run's lock token), the control channel (main → workers: cancel, hard stop,
 * a message for the job)
 * and the value a run completes with. Validated with zod where it enters.
 */
import { z } from 'zod';
import {
  STEERING_MAX_CHARS,
  STOP_REQUESTS,
  serializedErrorSchema,
  workerMessageSchema,
  type JobOutcome,
  type ResumeState,
  type StopRequest,
  type WorkerMessage,
} from '../../shared/protocol.js';
import type { SerializedError } from '../../shared/errors.js';
import type { WireJob, WireSpec } from './job-request.js';

/** Redis key and channel names of one queue (BullMQ's own keys live under `bull:<queue>:`). */
export function redisNames(queue: string) {
  const base = `forkpool:${queue}`;
  return {
    queue,
    events: `${base}:events`,
    control: `${base}:control`,
    /** Set when a job is cancelled, so a worker that picks it up later ends it at once. */
    cancelled: (jobId: string) => `${base}:cancelled:${jobId}`,
    /** The messages sent to a launch (JSON, in order), so a worker that picks it up later, or runs it again, is given them. */
    steering: (jobId: string) => `${base}:steering:${jobId}`,
    /** The cluster-wide 429 gate: "paused until" epoch ms, the latest deadline wins. */
    rateGate: `${base}:rate-gate`,
    rateGateChannel: `${base}:rate-gate`,
    /** A job request (JSON), shared by the jobs that ask the same, under the sha256 of its text. */
    request: (hash: string) => `${base}:request:${hash}`,
  };
}

/**
 * What a producer that died leaves in Redis goes after this long (seconds): its requests and
 * cancel keys a day when a restart on the same namespace (a durable ledger's) may take the
 * results over, an hour when nobody can.
 */
export const ORPHAN_AGE_S = { adoptable: 86_400, random: 3_600 } as const;

/**
 * A finished BullMQ job goes after this long (seconds; the workers' `removeOnComplete` and
 * `removeOnFail` age): the main side removes the jobs it took the results of, so this bounds
 * only what a producer that died leaves, and must let a restart on the same namespace find its
 * results. Set once on the workers, not in every job (it cost each queued job 88 bytes).
 */
export const FINISHED_JOB_AGE_S = ORPHAN_AGE_S.adoptable;

/** The BullMQ job id of a job's launch: one BullMQ job per (namespace, job id, launch). */
export function bullJobId(namespace: string, jobId: string, launch: number, owner?: string): string {
  return owner === undefined ? `${namespace}.${jobId}.${launch}` : `${namespace}.${owner}.${jobId}.${launch}`;
}

/**
 * What a job's BullMQ data holds: the job without its config, and the hash of what it asks of a
 * worker (job-request.ts), stored once per fan-out under {@link redisNames}`.request` (see
 * request-store.ts). A spec that carries its request inline (the earlier format) is read too.
 */
export interface RemoteJobData {
  spec: WireJob | WireSpec;
  request?: string;
}

/** How one run ended on its worker (an {@link import('../executors/attempt.js').AttemptEnd}, serialized). */
export type RemoteEnd =
  | { kind: 'done'; outcome: JobOutcome }
  | { kind: 'lost'; error: SerializedError }
  | { kind: 'protocol'; error: SerializedError }
  /**
   * `sleep` scheduler: the run ended asleep until `at`. The sleep is the main process's (its
   * timer and ledger), so the worker's slot and the BullMQ job are done; the wake is a new launch.
   */
  | { kind: 'sleeping'; state: Omit<ResumeState, 'childResults'>; at: number; reason: string };

/** The value a run completes its BullMQ job with. `token` is the run's lock token. */
export interface RunResult {
  token: string;
  worker: string;
  /** 1 on the first start of the BullMQ job; a re-run after a stall counts up. */
  run: number;
  /** False when the worker ended it without starting it (it found the job cancelled). */
  started: boolean;
  end: RemoteEnd;
}

const remoteEndSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('done'), outcome: z.looseObject({ stopReason: z.string(), text: z.string() }) }),
  z.object({ kind: z.literal('lost'), error: serializedErrorSchema }),
  z.object({ kind: z.literal('protocol'), error: serializedErrorSchema }),
  // The state is checked again, as the port's `sleep` message, by the job's Attempt on the main side.
  z.object({
    kind: z.literal('sleeping'),
    state: z.looseObject({ messages: z.array(z.unknown()), usage: z.record(z.string(), z.unknown()), iterations: z.number() }),
    at: z.number(),
    reason: z.string(),
  }),
]);

export const runResultSchema = z.object({
  token: z.string().min(1),
  worker: z.string(),
  run: z.number().int().min(1),
  started: z.boolean(),
  end: remoteEndSchema,
});

/** Worker → main, on the events channel. */
export type RemoteEvent =
  /** A port message of the job's run (`started`, `progress`, `alert`). */
  | { type: 'message'; jobId: string; bullId: string; token: string; run: number; worker: string; message: WorkerMessage }
  /** The worker could not renew the run's lock: it aborted the run, whose completion is void. */
  | { type: 'lock-lost'; jobId: string; bullId: string; token: string; run: number; worker: string };

export const remoteEventSchema = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('message'),
    jobId: z.string(),
    bullId: z.string(),
    token: z.string(),
    run: z.number(),
    worker: z.string(),
    message: workerMessageSchema,
  }),
  z.object({ type: z.literal('lock-lost'), jobId: z.string(), bullId: z.string(), token: z.string(), run: z.number(), worker: z.string() }),
]);

/** Main → workers, on the control channel: stop a run, or give it a message (send_to_background_agent). */
export type ControlMessage =
  { bullId: string; action: 'cancel' | 'hard-stop'; reason: StopRequest } | { bullId: string; action: 'steer'; message: SteeringWire; interrupt: boolean };

/** One message for a job, as it is kept in Redis and sent on the control channel. */
export interface SteeringWire {
  id: number;
  text: string;
}

export const steeringWireSchema = z.object({ id: z.number().int().min(1), text: z.string().min(1).max(STEERING_MAX_CHARS) });

export const controlMessageSchema = z.union([
  z.object({ bullId: z.string(), action: z.enum(['cancel', 'hard-stop']), reason: z.enum(STOP_REQUESTS) }),
  z.object({ bullId: z.string(), action: z.literal('steer'), message: steeringWireSchema, interrupt: z.boolean() }),
]);
