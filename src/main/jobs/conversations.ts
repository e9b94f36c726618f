import type { ForkpoolConfig } from '../../shared/config.js';
import { capConversation, redactConversation } from '../../shared/conversation-cap.js';
import { configuredSecrets } from '../../shared/tools/secrets.js';
import type { DeliveryLedger } from '../ledger/ledger.js';
import type { JobStore } from '../ledger/ledger-store.js';

/** Conversations held in memory (the newest ended jobs'); the durable ledger keeps every one until retention forgets its job. */
const IN_MEMORY = 32;

/**
 * Ended jobs' final conversations, kept for `resume_background_agent`: redacted (every secret
 * the config holds, as the ledger's other text is) and cut to `background.keepConversationChars`
 * (see conversation-cap.ts) before they are held or written. With a durable ledger each is
 * written beside its job's row (so a resume works after a restart, and retention's forget drops
 * it with the row); in memory only the newest {@link IN_MEMORY} are held.
 */
export class KeptConversations {
  readonly #config: ForkpoolConfig;
  readonly #ledger: DeliveryLedger;
  readonly #store: JobStore | undefined;
  readonly #secrets: readonly string[];
  /** Newest last. */
  readonly #held = new Map<string, unknown[]>();

  constructor(config: ForkpoolConfig, ledger: DeliveryLedger, store: JobStore | undefined) {
    this.#config = config;
    this.#ledger = ledger;
    this.#store = store;
    this.#secrets = configuredSecrets(config);
  }

  /** A job ended with this conversation (from its `done`); nothing is kept when the cap is 0 or too small for its head. */
  keep(id: string, messages: readonly unknown[] | undefined): void {
    if (!messages) return;
    // Redacted first, then cut: a redaction may change the length.
    const kept = capConversation(redactConversation(messages, this.#secrets), this.#config.background.keepConversationChars);
    if (!kept) return;
    this.#held.delete(id);
    this.#held.set(id, kept);
    if (this.#held.size > IN_MEMORY) this.#held.delete(this.#held.keys().next().value as string);
    const store = this.#store;
    if (store) this.#ledger.writeAside(`job ${id}'s conversation`, () => store.putConversation(id, kept));
  }

  /** The conversation kept for a job: held, else read back from the durable ledger. */
  get(id: string): unknown[] | undefined {
    return this.#held.get(id) ?? this.#store?.conversation(id);
  }

  /** Retention forgot the job (its durable row, conversation and all, is gone already). */
  forget(id: string): void {
    this.#held.delete(id);
  }
}
