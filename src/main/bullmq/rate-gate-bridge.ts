import type { Redis } from 'ioredis';
import { SharedRateGate } from '../../shared/rate-gate.js';
import { redisNames } from './wire.js';

/** Keeps the latest deadline: a later "paused until" never loses to an earlier one. */
const SET_MAX = `
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
if tonumber(ARGV[1]) > current then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) return 1 end
return 0`;

/**
 * One 429 gate for a whole cluster: a worker process's jobs share a {@link SharedRateGate}
 * (one SharedArrayBuffer); this bridge copies a deadline set by any of them into a Redis key
 * and a channel, and deadlines from other machines into the local gate. So when one job of
 * one machine sees `Retry-After`, every job of every machine waits before its next model call.
 */
export class RateGateBridge {
  readonly buffer = SharedRateGate.createBuffer();
  readonly #gate = new SharedRateGate(this.buffer);
  readonly #names: ReturnType<typeof redisNames>;
  readonly #publisher: Redis;
  readonly #subscriber: Redis;
  #shared = 0;
  #timer: NodeJS.Timeout | undefined;

  constructor(queue: string, publisher: Redis, subscriber: Redis) {
    this.#names = redisNames(queue);
    this.#publisher = publisher;
    this.#subscriber = subscriber;
  }

  async start(pollMs = 50): Promise<void> {
    await this.#subscriber.subscribe(this.#names.rateGateChannel);
    this.#subscriber.on('message', (channel: string, text: string) => {
      if (channel === this.#names.rateGateChannel) this.#adopt(Number(text));
    });
    this.#adopt(Number((await this.#publisher.get(this.#names.rateGate)) ?? 0));
    // A deadline is written by a job thread into shared memory: there is no event to wait for.
    this.#timer = setInterval(() => this.#share(), pollMs);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  #adopt(until: number): void {
    if (!Number.isFinite(until) || until <= Date.now()) return;
    this.#shared = Math.max(this.#shared, until);
    this.#gate.pauseFor(until - Date.now());
  }

  #share(): void {
    const until = this.#gate.pausedUntil;
    if (until <= this.#shared || until <= Date.now()) return;
    this.#shared = until;
    const ttl = Math.max(1, until - Date.now()) + 1_000;
    void this.#publisher
      .eval(SET_MAX, 1, this.#names.rateGate, String(until), String(ttl))
      .then(() => this.#publisher.publish(this.#names.rateGateChannel, String(until)))
      .catch(() => {
        // Redis is away: this machine still waits; the others learn of the next 429.
      });
  }
}
