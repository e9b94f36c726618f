/**
 * A worker's cache of job requests (request-store.ts): each is read from Redis once and kept
 * (least recently used first out, `max` of them), checked against its hash, so a key rewritten
 * with other content is refused rather than trusted. The request itself is validated with every
 * job, by the same strict schema as a spec that carries it inline (worker.ts).
 */
import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';

export const REQUEST_HASH = /^[0-9a-f]{64}$/;

/** Why a job's request could not be had; the job fails with this (retrying cannot help). */
export class RequestUnavailable extends Error {
  override readonly name = 'RequestUnavailable';
}

export class RequestCache {
  readonly #redis: Redis;
  readonly #key: (hash: string) => string;
  readonly #max: number;
  /** Insertion order is recency: a hit is moved to the end, the first entry goes when full. */
  readonly #entries = new Map<string, unknown>();
  /** Reads under way, so jobs arriving together read a request once. */
  readonly #reading = new Map<string, Promise<unknown>>();

  constructor(redis: Redis, key: (hash: string) => string, max = 64) {
    this.#redis = redis;
    this.#key = key;
    this.#max = max;
  }

  /** The parsed JSON stored under `hash`; rejects with RequestUnavailable when it is gone or does not match. */
  get(hash: string): Promise<unknown> {
    if (this.#entries.has(hash)) {
      const value = this.#entries.get(hash);
      this.#entries.delete(hash);
      this.#entries.set(hash, value);
      return Promise.resolve(value);
    }
    let reading = this.#reading.get(hash);
    if (!reading) {
      reading = this.#read(hash).finally(() => this.#reading.delete(hash));
      this.#reading.set(hash, reading);
    }
    return reading;
  }

  async #read(hash: string): Promise<unknown> {
    if (!REQUEST_HASH.test(hash)) throw new RequestUnavailable(`its request reference ${JSON.stringify(hash.slice(0, 80))} is not a sha256`);
    const text = await this.#redis.get(this.#key(hash));
    if (text === null) {
      throw new RequestUnavailable(
        `its request ${hash} is gone from Redis (key ${this.#key(hash)} expired or was lost: the producer stopped refreshing it, or Redis restarted empty)`,
      );
    }
    if (createHash('sha256').update(text).digest('hex') !== hash) throw new RequestUnavailable(`its request ${hash} in Redis does not match its hash`);
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      throw new RequestUnavailable(`its request ${hash} in Redis is not JSON`);
    }
    this.#entries.set(hash, value);
    if (this.#entries.size > this.#max) this.#entries.delete(this.#entries.keys().next().value as string);
    return value;
  }
}
