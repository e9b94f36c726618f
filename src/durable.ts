/**
 * `forkpool/durable`: the SQLite ledger that keeps jobs, results and sessions across restarts
 * (docs/durability.md): `openSqliteLedger(path)` for an `AgentSession`'s or a `BackgroundManager`'s
 * `ledger`/`store`. The store's shapes are on `forkpool/protocol`; this entry loads nothing else.
 */
// First: on a Node.js older than engines allows, this import throws a clear error.
import './shared/require-node.js';
export { openSqliteLedger, SqliteLedgerStore, type SqliteStoreOptions } from './main/ledger/sqlite-store.js';
export type { LedgerStore, JobStore, SessionSnapshot, SessionSummary, StoredJob, StoredSpec, StoredAlert } from './main/ledger/ledger-store.js';
