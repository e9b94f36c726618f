/**
 * Where a batch of BullMQ jobs stand, in one Redis call. BullMQ's `getJobState` looks a job up
 * in its lists with LPOS, which is linear in the list: asked for every waiting job of a large
 * fan-out every poll, it kept Redis busy and the producer's queue from filling. The poll only
 * needs to know which jobs ended and which Redis lost: a hash lookup and two sorted-set lookups
 * each, whatever the queue's length.
 */
import type { Redis } from 'ioredis';

export type PolledState = 'missing' | 'completed' | 'failed' | 'other';

const STATES: readonly PolledState[] = ['missing', 'completed', 'failed', 'other'];

// KEYS[1]: the queue's key prefix (`bull:<queue>:`); ARGV: job ids.
const SCRIPT = `
local prefix = KEYS[1]
local out = {}
for i, id in ipairs(ARGV) do
  if redis.call('EXISTS', prefix .. id) == 0 then out[i] = 0
  elseif redis.call('ZSCORE', prefix .. 'completed', id) then out[i] = 1
  elseif redis.call('ZSCORE', prefix .. 'failed', id) then out[i] = 2
  else out[i] = 3 end
end
return out
`;

/** The state of each of `ids` (at most a few thousand: one script call runs them all). */
export async function jobStates(redis: Redis, prefix: string, ids: readonly string[]): Promise<PolledState[]> {
  if (ids.length === 0) return [];
  const codes = (await redis.eval(SCRIPT, 1, prefix, ...ids)) as number[];
  return codes.map((code) => STATES[code] ?? 'other');
}
