import { AbortError } from '../../shared/errors.js';
import type { AdmissionGate, GateTicket, RequestOutcome } from '../../shared/model-call.js';
import type { AdaptiveConfig } from '../../shared/scheduling-config.js';
import { AimdController, type AimdChange } from './adaptive-cap.js';
import { TypedEmitter } from '../../shared/typed-emitter.js';
import type { RequestGateService } from '../../shared/protocol.js';

/** Who sends a request: the parent agent (goes first) or a background job. */
export type RequestOrigin = { kind: 'parent' } | { kind: 'job'; jobId: string };

export interface GateEventBase {
  endpoint: string;
  /** Unique per gate registry, in arrival order. */
  ticket: number;
  origin: RequestOrigin;
}

export type RequestGateEvents = {
  /** A request found no free slot (or a Retry-After pause) and waits; `jobsAhead`: job requests already waiting. */
  queued: [GateEventBase & { jobsAhead: number; inFlight: number; limit: number }];
  /** A request got its slot. */
  admitted: [GateEventBase & { inFlight: number; limit: number; waited: boolean }];
  settled: [GateEventBase & { outcome: RequestOutcome['kind']; status?: number }];
  /** The endpoint's limit moved (AIMD). */
  limit: [{ endpoint: string; limit: number; reason: NonNullable<AimdChange>['reason'] }];
};

export type { RequestGateService };

/** Slots above the limit only the parent may take. */
const PARENT_HEADROOM = 1;

type Emit = <K extends keyof RequestGateEvents>(event: K, ...args: RequestGateEvents[K]) => void;

interface Waiter {
  ticket: number;
  origin: RequestOrigin;
  admit: () => void;
}

interface Held {
  ticket: number;
  origin: RequestOrigin;
  epoch: number;
  atLimit: boolean;
}

/**
 * The requests one endpoint is sent at once: at most the AIMD limit in flight; the rest wait
 * in two lanes, the parent's ahead of the jobs' (FIFO within each). The parent never waits
 * behind jobs: it may also take one slot above the limit (a person is waiting for that answer;
 * one request over the estimate costs at worst one 429). A Retry-After holds both lanes until
 * it has passed; then the parent still goes first.
 */
class EndpointLimiter {
  readonly endpoint: string;
  readonly #controller: AimdController;
  readonly #events: { emit: Emit };
  readonly #parents: Waiter[] = [];
  readonly #jobs: Waiter[] = [];
  readonly #held = new Map<number, Held>();
  #pausedUntil = 0;
  #resumeTimer: NodeJS.Timeout | undefined;

  constructor(endpoint: string, controller: AimdController, events: { emit: Emit }) {
    this.endpoint = endpoint;
    this.#controller = controller;
    this.#events = events;
  }

  get limit(): number {
    return this.#controller.limit;
  }

  get inFlight(): number {
    return this.#held.size;
  }

  get waiting(): number {
    return this.#parents.length + this.#jobs.length;
  }

  request(ticket: number, origin: RequestOrigin, admit: () => void): void {
    const waiter = { ticket, origin, admit };
    const lane = origin.kind === 'parent' ? this.#parents : this.#jobs;
    if (this.#canAdmit(origin) && lane.length === 0 && (origin.kind === 'parent' || this.#parents.length === 0)) return this.#admit(waiter, false);
    this.#events.emit('queued', {
      endpoint: this.endpoint,
      ticket,
      origin,
      jobsAhead: origin.kind === 'parent' ? 0 : this.#jobs.length,
      inFlight: this.inFlight,
      limit: this.limit,
    });
    lane.push(waiter);
    this.#schedule();
  }

  /** Ends a request: frees its slot if it held one, takes it off its lane if it was waiting. */
  settle(ticket: number, outcome: RequestOutcome): void {
    const held = this.#held.get(ticket);
    if (!held) {
      this.#withdraw(ticket);
      return;
    }
    this.#held.delete(ticket);
    const status = outcome.kind === 'overloaded' ? { status: outcome.status } : {};
    this.#events.emit('settled', { endpoint: this.endpoint, ticket, origin: held.origin, outcome: outcome.kind, ...status });
    let change: AimdChange;
    if (outcome.kind === 'ok') change = this.#controller.record({ kind: 'success', latencyMs: outcome.latencyMs, epoch: held.epoch, atLimit: held.atLimit });
    else if (outcome.kind === 'overloaded') change = this.#controller.record({ kind: 'overload', epoch: held.epoch });
    if (change) this.#events.emit('limit', { endpoint: this.endpoint, ...change });
    if ((outcome.kind === 'overloaded' || outcome.kind === 'failed') && outcome.retryAfterMs !== undefined) {
      this.#pausedUntil = Math.max(this.#pausedUntil, Date.now() + outcome.retryAfterMs);
    }
    this.#dispatch();
  }

  close(): void {
    clearTimeout(this.#resumeTimer);
    // Nothing waits forever on a closed gate: the requests go (and fail or not on their own).
    for (const waiter of [...this.#parents.splice(0), ...this.#jobs.splice(0)]) waiter.admit();
  }

  #canAdmit(origin: RequestOrigin): boolean {
    const headroom = origin.kind === 'parent' ? PARENT_HEADROOM : 0;
    return this.#held.size < this.#controller.limit + headroom && Date.now() >= this.#pausedUntil;
  }

  #admit(waiter: Waiter, waited: boolean): void {
    // "At the limit": the slot was scarce, so a success says the limit could grow. (Not the
    // parent's: its slot may lie above the limit.)
    const atLimit = waiter.origin.kind === 'job' && (waited || this.#held.size + 1 >= this.#controller.limit);
    this.#held.set(waiter.ticket, { ticket: waiter.ticket, origin: waiter.origin, epoch: this.#controller.epoch, atLimit });
    this.#events.emit('admitted', {
      endpoint: this.endpoint,
      ticket: waiter.ticket,
      origin: waiter.origin,
      inFlight: this.#held.size,
      limit: this.#controller.limit,
      waited,
    });
    waiter.admit();
  }

  #dispatch(): void {
    for (;;) {
      // The parent's lane first: its requests never wait behind the jobs'.
      const lane = this.#parents.length > 0 ? this.#parents : this.#jobs;
      const next = lane[0];
      if (!next || !this.#canAdmit(next.origin)) break;
      lane.shift();
      this.#admit(next, true);
    }
    this.#schedule();
  }

  /** While paused by a Retry-After, wake up when it has passed. */
  #schedule(): void {
    if (this.#resumeTimer !== undefined || this.waiting === 0) return;
    const wait = this.#pausedUntil - Date.now();
    if (wait <= 0) return;
    this.#resumeTimer = setTimeout(() => {
      this.#resumeTimer = undefined;
      this.#dispatch();
    }, wait);
  }

  #withdraw(ticket: number): void {
    for (const lane of [this.#parents, this.#jobs]) {
      const at = lane.findIndex((w) => w.ticket === ticket);
      if (at >= 0) lane.splice(at, 1);
    }
  }
}

/**
 * Adaptive concurrency's gates, one per endpoint (base URL), on the main thread: jobs reach
 * theirs over their port's `gate-admit`/`gate-settle` messages ({@link RequestGateService}, answered by their Attempt), the parent through {@link parentGate}.
 */
export class RequestGates extends TypedEmitter<RequestGateEvents> {
  readonly #settings: Required<Pick<AdaptiveConfig, 'floor' | 'decreaseFactor' | 'latencyTolerance'>> & { ceiling: number; initial: number };
  readonly #limiters = new Map<string, EndpointLimiter>();
  #nextTicket = 1;

  /** `ceilingFallback`: the ceiling when the config sets none (`background.maxConcurrent`). */
  constructor(adaptive: AdaptiveConfig, ceilingFallback: number) {
    super();
    const ceiling = adaptive.ceiling ?? Math.max(ceilingFallback, adaptive.floor);
    this.#settings = {
      floor: adaptive.floor,
      ceiling,
      initial: adaptive.initial ?? adaptive.floor,
      decreaseFactor: adaptive.decreaseFactor,
      latencyTolerance: adaptive.latencyTolerance,
    };
  }

  /** The endpoint's current limit (its initial one before its first request). */
  limit(endpoint: string): number {
    return this.#limiter(endpoint).limit;
  }

  /** Requests in flight and waiting, per endpoint. */
  snapshot(): Array<{ endpoint: string; limit: number; inFlight: number; waiting: number }> {
    return [...this.#limiters.values()].map((l) => ({ endpoint: l.endpoint, limit: l.limit, inFlight: l.inFlight, waiting: l.waiting }));
  }

  /** The parent's gate for `endpoint`: its requests take the priority lane. */
  parentGate(endpoint: string): AdmissionGate {
    return { admit: (signal) => this.#admitLocal(endpoint, { kind: 'parent' }, signal) };
  }

  /**
   * One job attempt's service: its tickets are the worker's numbers, mapped to the registry's.
   * `release()` (when the attempt ends) frees whatever it still holds or waits for: a thread
   * that died mid-request never gives its slot back by itself.
   */
  leaseFor(endpoint: string, jobId: string): { service: RequestGateService; release(): void } {
    const limiter = this.#limiter(endpoint);
    const tickets = new Map<number, number>();
    let released = false;
    const service: RequestGateService = {
      admitRequest: (workerTicket) =>
        new Promise<void>((resolve) => {
          if (released) return resolve();
          const ticket = this.#nextTicket++;
          tickets.set(workerTicket, ticket);
          limiter.request(ticket, { kind: 'job', jobId }, resolve);
        }),
      settleRequest: (workerTicket, outcome) => {
        const ticket = tickets.get(workerTicket);
        if (ticket === undefined) return;
        tickets.delete(workerTicket);
        limiter.settle(ticket, outcome);
      },
    };
    const release = () => {
      released = true;
      for (const ticket of tickets.values()) limiter.settle(ticket, { kind: 'abandoned' });
      tickets.clear();
    };
    return { service, release };
  }

  close(): void {
    for (const limiter of this.#limiters.values()) limiter.close();
  }

  #admitLocal(endpoint: string, origin: RequestOrigin, signal: AbortSignal): Promise<GateTicket> {
    if (signal.aborted) return Promise.reject(new AbortError(signal.reason));
    const limiter = this.#limiter(endpoint);
    const ticket = this.#nextTicket++;
    const gateTicket: GateTicket = { settle: (outcome) => limiter.settle(ticket, outcome) };
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        limiter.settle(ticket, { kind: 'abandoned' });
        reject(new AbortError(signal.reason));
      };
      signal.addEventListener('abort', onAbort, { once: true });
      limiter.request(ticket, origin, () => {
        signal.removeEventListener('abort', onAbort);
        resolve(gateTicket);
      });
    });
  }

  #limiter(endpoint: string): EndpointLimiter {
    let limiter = this.#limiters.get(endpoint);
    if (!limiter) {
      const s = this.#settings;
      const controller = new AimdController({
        floor: s.floor,
        ceiling: s.ceiling,
        initial: Math.min(s.ceiling, s.initial),
        decreaseFactor: s.decreaseFactor,
        latencyTolerance: s.latencyTolerance,
      });
      limiter = new EndpointLimiter(endpoint, controller, { emit: (event, ...args) => this.emit(event, ...args) });
      this.#limiters.set(endpoint, limiter);
    }
    return limiter;
  }
}
