/**
 * An {@link AgentSession}'s durable side: which ledger file it writes, under which session id,
 * and what a resumed session finds there. Kept apart from agent-session.ts, which only calls in.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { describeReceived, type ForkpoolConfig } from '../../shared/config.js';
import { ConfigError, JobError, LedgerWriteError } from '../../shared/errors.js';
import type { JobStore, LedgerStore, SessionSnapshot } from '../ledger/ledger-store.js';
import { openSqliteLedger } from '../ledger/sqlite-store.js';
import type { Session } from './session.js';

export interface DurableSessionOptions {
  /** An open ledger to write to (several sessions may share one); default: `config.ledger.path`, opened and closed by the session. */
  ledgerStore?: LedgerStore;
  /**
   * This session's id in the ledger. One the ledger holds is resumed (its conversation, turn
   * count and jobs); a new one starts a session under it. Default: a fresh random id.
   */
  sessionId?: string;
  /** With `sessionId`: it must already be in the ledger (else `SESSION_UNKNOWN`). */
  resume?: boolean;
}

/** What a session found when it opened its ledger. */
export interface DurableSession {
  id: string;
  store: LedgerStore | undefined;
  /** The session's job scope, for its manager. */
  jobs: JobStore | undefined;
  /** The stored conversation when this session is a resumed one. */
  snapshot: SessionSnapshot | undefined;
  /** The session opened the store itself and closes it with itself. */
  ownsStore: boolean;
}

export function openDurableSession(config: ForkpoolConfig, options: DurableSessionOptions): DurableSession {
  const id = options.sessionId ?? `s-${randomUUID().slice(0, 12)}`;
  if (options.sessionId !== undefined && !/^[\w.:-]{1,100}$/.test(options.sessionId)) {
    throw new ConfigError([{ field: 'sessionId', expected: '1 to 100 letters, digits, ".", ":", "_" or "-"', received: describeReceived(options.sessionId) }]);
  }
  const path = config.ledger.path;
  const store =
    options.ledgerStore ??
    (path !== undefined ? openSqliteLedger(path, { synchronous: config.ledger.synchronous, leaseStaleMs: config.ledger.leaseStaleMs }) : undefined);
  const ownsStore = options.ledgerStore === undefined && store !== undefined;
  const jobs = store?.jobs(id);
  try {
    // The session's lease before its snapshot is read: a second process on this session is refused (LEDGER_BUSY).
    jobs?.claim();
  } catch (error) {
    if (ownsStore) store?.close();
    throw error;
  }
  const snapshot = store?.loadSession(id);
  if (options.resume && !snapshot) {
    jobs?.release();
    if (ownsStore) store?.close();
    const where = store ? `the ledger ${store.path}` : 'memory (no ledger.path is set: nothing survives a restart)';
    throw new JobError('SESSION_UNKNOWN', '-', `no session "${id}" in ${where}`);
  }
  return { id, store, jobs, snapshot, ownsStore };
}

/**
 * Keeps the conversation in the ledger; called after every committed turn, and before a
 * person's turn runs (with its prompt as `pendingInput`). A failed write is logged and the
 * session goes on: the turn is committed in memory, and should the process die before a later
 * save lands, a resume takes back what was delivered in the turns it lost.
 */
export function saveConversation(durable: DurableSession, conversation: Session, logger: Logger | undefined, pendingInput?: string): void {
  const { store } = durable;
  if (!store || store.closed) return;
  try {
    const snapshot = conversation.snapshot(durable.id);
    store.saveSession(pendingInput === undefined ? snapshot : { ...snapshot, pendingInput });
  } catch (error) {
    if (!(error instanceof LedgerWriteError)) throw error;
    logger?.error({ err: error, sessionId: durable.id }, 'durable ledger: the conversation could not be saved; the session goes on in memory');
  }
}

/** After the session's last write: its lease is released, and the ledger closed when the session opened it. */
export function closeDurableSession(durable: DurableSession): void {
  durable.jobs?.release();
  if (durable.ownsStore) durable.store?.close();
}
