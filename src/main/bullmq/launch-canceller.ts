/**
 * Cancels launches that no run has reported starting, in batches: the cancels of one tick (a
 * manager closing with 100,000 jobs queued sends them all at once) go to Redis as one script
 * call per batch. Each launch still waiting in BullMQ's wait list (no worker has taken it) is
 * taken out with its job hash and its cancel and message keys; each other one (a worker took it,
 * or it is elsewhere) gets its cancel key and a control message, as a running job's cancel
 * does, so the worker that has it, or takes it later, ends it.
 *
 * Before, each cancel was a control write, BullMQ's `queue.remove` (a script whose LREMs walk
 * the whole wait list) and a DEL: thousands of round trips, and work quadratic in the queue's
 * length. Here a batch walks the wait list once, marks its launches in place and removes the
 * marks with one LREM.
 */
import type { Redis } from 'ioredis';
import type { StopRequest } from '../../shared/protocol.js';
import { BulkAdder } from './bulk-adder.js';
import type { ControlMessage } from './wire.js';

/** Launches one script call cancels at most. */
const CANCEL_BATCH = 1_000;

/** The Redis names the script needs, per launch and for the queue. */
export interface CancelNames {
  /** BullMQ's key prefix of the queue (`bull:<queue>:`). */
  queuePrefix: string;
  control: string;
  cancelled(bullId: string): string;
  steering(bullId: string): string;
}

interface PendingCancel {
  bullId: string;
  reason: StopRequest;
  action: 'cancel' | 'hard-stop';
  /** Set by the batch's write: the job was taken out of the wait list. */
  removed?: boolean;
}

// Why LSET then one LREM: an LREM per launch walks the list once per launch. A placeholder no
// job id can equal marks the batch's launches as the walk finds them; the script is atomic, so
// no worker ever sees one. A job whose lock exists is a worker's, whatever list it is in.
// Why from the tail (negative indexes for LSET and LREM, which then walk from there): BullMQ
// pushes new jobs at the head, so a fan-out's oldest jobs, which a close cancels first, are at
// the tail; walking from the head, each batch of 100,000 queued jobs crossed the whole list.
// KEYS[1]: the queue prefix; KEYS[2]: the control channel. ARGV[1]: the cancel keys' TTL (ms);
// then five per launch: job id, cancel key, message key, reason, control message.
const SCRIPT = `
local prefix, channel, ttl = KEYS[1], KEYS[2], ARGV[1]
local n = (#ARGV - 1) / 5
-- Looked for in the wait list: the launches no worker holds (no lock) that have not finished,
-- so that a batch with a running job in it does not walk the whole list looking for it.
local wanted, removed, found, looked = {}, {}, 0, 0
for i = 1, n do
  local id = ARGV[2 + (i - 1) * 5]
  if redis.call('EXISTS', prefix .. id .. ':lock') == 0 and redis.call('HEXISTS', prefix .. id, 'finishedOn') == 0 then
    wanted[id] = i
    looked = looked + 1
  end
end
local wait = prefix .. 'wait'
local mark = '\\0forkpool-cancelled'
local length = redis.call('LLEN', wait)
local last = length - 1
while last >= 0 and found < looked do
  local first = math.max(0, last - 999)
  local ids = redis.call('LRANGE', wait, first, last)
  for j, id in ipairs(ids) do
    local i = wanted[id]
    if i and not removed[i] then
      redis.call('LSET', wait, first + j - 1 - length, mark)
      removed[i] = true
      found = found + 1
    end
  end
  last = first - 1
end
if found > 0 then redis.call('LREM', wait, -found, mark) end
local out = {}
for i = 1, n do
  local at = 2 + (i - 1) * 5
  local id = ARGV[at]
  if removed[i] then
    redis.call('DEL', prefix .. id, prefix .. id .. ':logs', ARGV[at + 1], ARGV[at + 2])
    out[i] = 1
  else
    redis.call('SET', ARGV[at + 1], ARGV[at + 3], 'PX', ttl)
    redis.call('PUBLISH', channel, ARGV[at + 4])
    out[i] = 0
  end
end
return out
`;

export class LaunchCanceller {
  readonly #redis: Redis;
  readonly #names: CancelNames;
  readonly #ttlMs: number;
  readonly #batches: BulkAdder<PendingCancel>;

  /** `ttlMs`: how long a cancel key outlives a producer that died (the orphan age). */
  constructor(redis: Redis, names: CancelNames, ttlMs: number) {
    this.#redis = redis;
    this.#names = names;
    this.#ttlMs = ttlMs;
    this.#batches = new BulkAdder((batch) => this.#write(batch), CANCEL_BATCH);
  }

  /**
   * True when the launch was still waiting and is gone from Redis; false when it was marked
   * cancelled for its worker (`action`: what the control message asks of a run that has it).
   */
  async cancel(bullId: string, reason: StopRequest, action: 'cancel' | 'hard-stop' = 'cancel'): Promise<boolean> {
    const pending: PendingCancel = { bullId, reason, action };
    await this.#batches.add(pending);
    return pending.removed === true;
  }

  /** Batches of cancels written (or failed) so far. */
  get progress(): number {
    return this.#batches.settledBatches;
  }

  /** Resolves once every cancel asked so far has been written (or failed). */
  flush(): Promise<void> {
    return this.#batches.flush();
  }

  async #write(batch: PendingCancel[]): Promise<void> {
    const args: string[] = [String(this.#ttlMs)];
    for (const { bullId, reason, action } of batch) {
      const message: ControlMessage = { bullId, action, reason };
      args.push(bullId, this.#names.cancelled(bullId), this.#names.steering(bullId), reason, JSON.stringify(message));
    }
    const removed = (await this.#redis.eval(SCRIPT, 2, this.#names.queuePrefix, this.#names.control, ...args)) as number[];
    batch.forEach((pending, i) => (pending.removed = removed[i] === 1));
  }
}
