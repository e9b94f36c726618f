import type { SteeringMessage } from '../../shared/protocol.js';
import { capHeadTail } from '../../shared/text-budget.js';
import type { SentMessage } from '../ledger/ledger.js';
import type { StoredMessage } from '../ledger/ledger-store.js';

/** What a job's record keeps of each message's text (the job itself gets it whole). */
const RECORDED_TEXT_CHARS = 2_000;

/**
 * The messages sent to one job (kept on its {@link Job}), in order. A message is given to a run
 * before its next model call; the worker reports what it took (`messages_received`). Which a
 * launch is handed: a fresh run (its first, a re-queue, a restart) starts from its task and gets
 * them all; a run resumed from its saved conversation (after waiting for its children) gets only
 * those the saved conversation does not hold.
 */
export class JobInbox {
  readonly #messages: Array<SteeringMessage & { at: number; interrupt: boolean; receivedAt?: number; saved: boolean }> = [];

  get size(): number {
    return this.#messages.length;
  }

  /** The number the next message gets: 1-based among this job's. */
  get nextId(): number {
    return (this.#messages.at(-1)?.id ?? 0) + 1;
  }

  /** A new message, numbered {@link nextId}. */
  add(text: string, interrupt: boolean, at: number): number {
    const id = this.nextId;
    this.#messages.push({ id, text, at, interrupt, saved: false });
    return id;
  }

  /**
   * What a durable ledger kept of an earlier process's job (a restart): its messages, whole, and
   * when its record says each was received. None is in a conversation now (the one that held
   * them died with that process), so the job's next launch, a fresh run, is handed them all, once.
   */
  restore(messages: readonly StoredMessage[], recorded: readonly SentMessage[] = []): void {
    const receivedAt = new Map(recorded.map((m) => [m.id, m.receivedAt]));
    for (const { id, text, at, interrupt } of messages) {
      const received = receivedAt.get(id);
      this.#messages.push({ id, text, at, interrupt: interrupt === true, saved: false, ...(received !== undefined ? { receivedAt: received } : {}) });
    }
  }

  /** The run took these (they are in its conversation now). */
  taken(ids: readonly number[], at: number): boolean {
    let changed = false;
    for (const id of ids) {
      const message = this.#messages.find((m) => m.id === id);
      if (message && message.receivedAt === undefined) {
        message.receivedAt = at;
        changed = true;
      }
    }
    return changed;
  }

  /** Its conversation was saved (it waits for its children): what it took is in that conversation. */
  saved(): void {
    for (const message of this.#messages) if (message.receivedAt !== undefined) message.saved = true;
  }

  /** What a launch is handed (see the class comment); a fresh run is given everything again. */
  forLaunch(resumed: boolean): SteeringMessage[] {
    const given = resumed ? this.#messages.filter((m) => !m.saved) : this.#messages;
    if (!resumed) for (const message of given) message.saved = false;
    for (const message of given) delete message.receivedAt;
    return given.map(({ id, text }) => ({ id, text }));
  }

  /** What the job's record shows. */
  records(): SentMessage[] {
    return this.#messages.map((m) => ({
      id: m.id,
      text: capHeadTail(m.text, RECORDED_TEXT_CHARS),
      at: m.at,
      ...(m.interrupt ? { interrupt: true as const } : {}),
      ...(m.receivedAt !== undefined ? { receivedAt: m.receivedAt } : {}),
    }));
  }
}
