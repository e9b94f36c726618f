import type { JobRecord } from '../ledger/ledger.js';
import type { DeliveryPort } from '../jobs/manager-api.js';

/** Who reads the turns a delivery may be taken back from: the conversation, whose `turns` are the committed ones. */
export interface CommittedTurns {
  readonly turns: number;
}

/**
 * The delivery side of a manager's jobs: ended results handed to the parent once (a turn's
 * drain, or one by one as `fanout` prints them), pages of a result read later, the end of a
 * spawning turn (its wave may end), and the results of turns that never committed taken back.
 * Stateless over the manager's {@link DeliveryPort}: any number of them may stand over one manager.
 */
export class Deliveries {
  readonly #port: DeliveryPort;

  constructor(manager: { readonly deliveryPort: DeliveryPort }) {
    this.#port = manager.deliveryPort;
  }

  /**
   * Ended jobs not yet delivered (those `accept` takes), handed over once and marked delivered
   * in `turn`; `unread`: per job delivered in part, the characters left out (see planDelivery).
   */
  drain(
    turn: number,
    options: { accept?: (record: Readonly<JobRecord>) => boolean; unread?: ReadonlyMap<string, [number, number]> } = {},
  ): Readonly<JobRecord>[] {
    return this.#port.ledger.drain(turn, options.accept, Date.now(), options.unread);
  }

  /**
   * Marks one ended job delivered (in `turn`) without a drain: for a program that hands each
   * result on by itself, as `fanout` prints it. Its full text then falls under retention.
   */
  markDelivered(id: string, turn = 0, unread?: [number, number]): Readonly<JobRecord> | undefined {
    return this.#port.ledger.markDelivered(id, turn, Date.now(), unread);
  }

  /** The parent read characters `[from, to)` of a result delivered in part (read_background_result). */
  noteResultRead(id: string, from: number, to: number): Readonly<JobRecord> | undefined {
    return this.#port.ledger.markShown(id, from, to);
  }

  /** Ended jobs not yet delivered, oldest spawn first. */
  undelivered(): Readonly<JobRecord>[] {
    return this.#port.ledger.undelivered();
  }

  /** How many ended jobs wait for delivery. */
  get undeliveredCount(): number {
    return this.#port.ledger.undeliveredCount;
  }

  /** The spawning turn is over: its wave can now end. Fires `wave-done` if it already has. */
  sealWave(wave: number): void {
    this.#port.sealWave(wave);
  }

  /** Marks a running job `backgrounded` (its `agent_<name>` call returned early); the manager says so (`backgrounded`). */
  markBackgrounded(id: string): Readonly<JobRecord> | undefined {
    return this.#port.markBackgrounded(id);
  }

  /**
   * The turns after the conversation's committed ones never happened for the parent (a turn
   * threw, or the process died in it): results delivered in them wait for delivery again. The
   * count is read from the conversation itself, never passed in, so it cannot be off by one.
   * Returns their ids. A nested job's result went to its parent job, not to a turn: never taken back.
   */
  takeBackUncommitted(conversation: CommittedTurns): string[] {
    const committed = conversation.turns;
    const ledger = this.#port.ledger;
    const back: string[] = [];
    for (const record of ledger.snapshot()) {
      if (record.parentJobId !== undefined || record.deliveredInTurn === undefined || record.deliveredInTurn <= committed) continue;
      if (ledger.undeliver(record.id, `delivered in turn ${record.deliveredInTurn}, which a restart cut short; delivered again`)) back.push(record.id);
    }
    return back;
  }
}
