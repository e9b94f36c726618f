/**
 * The main side's store of job requests (job-request.ts) in Redis: each distinct request once,
 * as canonical JSON under the sha256 of that text, instead of a copy in every job (a request is
 * 2–3 KB: model settings, tools, tool limits, models, agent; the jobs of a fan-out share one).
 * A key lives `ttlS` seconds (the orphan age of the jobs), refreshed while a run of this process
 * uses it; it is never deleted here, since another producer on the same queue may share it.
 */
import { createHash } from 'node:crypto';
import type { ChainableCommander, Redis } from 'ioredis';
import type { JobSpec } from '../../shared/protocol.js';
import { requestForRedis } from './job-request.js';

interface StoredRequest {
  hash: string;
  text: string;
}

export class RequestStore {
  readonly #redis: Redis;
  readonly #key: (hash: string) => string;
  readonly #ttlS: number;
  /** Per config object (jobs of a fan-out share theirs) and agent: its request, hashed once. */
  readonly #byConfig = new WeakMap<object, Map<string, StoredRequest>>();
  /** Requests of runs out now, with how many use each. */
  readonly #used = new Map<string, { text: string; runs: number }>();

  constructor(redis: Redis, key: (hash: string) => string, ttlS: number) {
    this.#redis = redis;
    this.#key = key;
    this.#ttlS = ttlS;
  }

  /** The hash of the spec's request, counted as used until {@link release}. */
  use(spec: JobSpec): string {
    const request = this.#requestOf(spec);
    const used = this.#used.get(request.hash);
    if (used) used.runs += 1;
    else this.#used.set(request.hash, { text: request.text, runs: 1 });
    return request.hash;
  }

  release(hash: string): void {
    const used = this.#used.get(hash);
    if (used && --used.runs <= 0) this.#used.delete(hash);
  }

  /** Writes these requests (with a fresh expiry) into `batch`, which must run before their jobs are added. */
  store(batch: ChainableCommander, hashes: Iterable<string>): void {
    for (const hash of new Set(hashes)) {
      const used = this.#used.get(hash);
      if (used) batch.set(this.#key(hash), used.text, 'EX', this.#ttlS);
    }
  }

  /**
   * Pushes back the expiry of every request in use (one pipeline; as many commands as distinct
   * requests). SET, not EXPIRE: a Redis that restarted empty gets them back too.
   */
  async refresh(): Promise<void> {
    if (this.#used.size === 0) return;
    const batch = this.#redis.pipeline();
    for (const [hash, used] of this.#used) batch.set(this.#key(hash), used.text, 'EX', this.#ttlS);
    await batch.exec();
  }

  #requestOf(spec: JobSpec): StoredRequest {
    let perAgent = this.#byConfig.get(spec.config);
    if (!perAgent) this.#byConfig.set(spec.config, (perAgent = new Map<string, StoredRequest>()));
    const agent = spec.agent ?? '';
    let request = perAgent.get(agent);
    if (!request) {
      const text = canonicalJson(requestForRedis(spec));
      request = { hash: createHash('sha256').update(text).digest('hex'), text };
      perAgent.set(agent, request);
    }
    return request;
  }
}

/** JSON with every object's keys sorted, so equal requests have one text (and one hash). */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}
