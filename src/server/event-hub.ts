/**
 * The server's event stream: every manager event becomes one numbered {@link HubEvent}, kept
 * in a bounded ring so a client that reconnects with `Last-Event-ID` gets what it missed.
 * A client further behind than the ring is told to `reset` (refetch the list) instead.
 */
export interface HubEvent {
  /** Increasing from 1 for the life of the server. */
  id: number;
  type: HubEventType;
  data: unknown;
}

export const HUB_EVENT_TYPES = [
  'spawned',
  'started',
  'progress',
  'alert',
  'done',
  'requeued',
  'delivered',
  'wave-done',
  'approval-requested',
  'approval-resolved',
  'sleeping',
  'reset',
] as const;
export type HubEventType = (typeof HUB_EVENT_TYPES)[number];

export type HubListener = (event: HubEvent) => void;

export class EventHub {
  readonly #capacity: number;
  readonly #ring: HubEvent[] = [];
  readonly #listeners = new Set<HubListener>();
  #nextId = 1;

  constructor(capacity: number) {
    this.#capacity = capacity;
  }

  get lastId(): number {
    return this.#nextId - 1;
  }

  get listenerCount(): number {
    return this.#listeners.size;
  }

  publish(type: Exclude<HubEventType, 'reset'>, data: unknown): HubEvent {
    const event: HubEvent = { id: this.#nextId++, type, data };
    this.#ring.push(event);
    if (this.#ring.length > this.#capacity) this.#ring.shift();
    for (const listener of this.#listeners) listener(event);
    return event;
  }

  /**
   * Events after `lastSeenId`, oldest first. `complete: false` when some were already dropped
   * from the ring: the client has a gap and must refetch what it shows.
   */
  since(lastSeenId: number): { events: HubEvent[]; complete: boolean } {
    const oldest = this.#ring[0]?.id ?? this.#nextId;
    const complete = lastSeenId >= oldest - 1 && lastSeenId <= this.lastId;
    return { events: this.#ring.filter((e) => e.id > lastSeenId), complete };
  }

  subscribe(listener: HubListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
}
