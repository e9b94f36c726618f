/**
 * One writer per durable ledger scope. A process that runs a scope's jobs (a session, a
 * fan-out, a server's own manager) holds a lease row for it: owner id, pid, host, since, and a
 * heartbeat it refreshes every fifth of `ledger.leaseStaleMs`. A second owner is refused with
 * `LEDGER_BUSY` while the holder lives; it takes the lease over once the holder's heartbeat is
 * older than `leaseStaleMs` (a crashed or hung owner, on any machine), or at once when the
 * holder was on this machine (same host, same PID namespace) and its process has exited.
 *
 * Per scope, not per file: several sessions may share one ledger file (`serve`, two `run`s with
 * their own sessions), and only two owners of the same scope conflict. A lock row, not an OS
 * lock: Node has no `flock`, and SQLite's own locks are per file and also stop readers.
 */
import { randomUUID } from 'node:crypto';
import { readlinkSync } from 'node:fs';
import os from 'node:os';
import { LedgerBusyError, type LeaseHolder } from '../../shared/errors.js';

/** The part of the SQLite connection's API (src/main/sqlite-driver.ts) the lease uses. */
export interface LeaseDatabase {
  exec(source: string): void;
  prepare(source: string): { run(...params: unknown[]): { changes: number }; get(...params: unknown[]): unknown };
  transaction<T>(fn: () => T): { immediate(): T };
}

const LEASE_SCHEMA = `CREATE TABLE IF NOT EXISTS leases (
  scope TEXT PRIMARY KEY, owner TEXT NOT NULL, pid INTEGER NOT NULL, host TEXT NOT NULL, pid_ns TEXT NOT NULL,
  since INTEGER NOT NULL, heartbeat_at INTEGER NOT NULL
)`;

interface LeaseRow extends LeaseHolder {
  owner: string;
  pidNs: string;
}

/** This process's PID namespace (Linux): a pid is only comparable within one. Elsewhere: ''. */
function pidNamespace(): string {
  try {
    return readlinkSync('/proc/self/ns/pid');
  } catch {
    return '';
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists, under another user.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export interface ScopeLeaseOptions {
  /** A heartbeat older than this is stale: the lease may be taken over. */
  staleMs: number;
  /** Hears a lease this process held that another one took over (it was paused past `staleMs`). */
  onLost?: (scope: string, message: string) => void;
}

/** The leases one open ledger file holds, one per scope, counted (a session and its manager both claim). */
export class ScopeLeases {
  readonly #db: LeaseDatabase;
  readonly #file: string;
  readonly #options: ScopeLeaseOptions;
  readonly #owner = randomUUID();
  readonly #host = os.hostname();
  readonly #pidNs = pidNamespace();
  /** Held scopes and how many claims each has. */
  readonly #held = new Map<string, number>();
  #ready = false;
  #timer: NodeJS.Timeout | undefined;

  constructor(db: LeaseDatabase, file: string, options: ScopeLeaseOptions) {
    this.#db = db;
    this.#file = file;
    this.#options = options;
  }

  /** Takes (or counts one more claim on) `scope`'s lease. Throws {@link LedgerBusyError} while another owner holds it. */
  claim(scope: string): void {
    const claims = this.#held.get(scope);
    if (claims !== undefined) {
      this.#held.set(scope, claims + 1);
      return;
    }
    this.#prepare();
    // IMMEDIATE: the write lock is taken before the read, so two claimers cannot both see a free row.
    this.#db
      .transaction(() => {
        const now = Date.now();
        const row = this.#row(scope);
        if (row && row.owner !== this.#owner && !this.#takeable(row, now)) throw new LedgerBusyError(this.#file, scope, row, this.#options.staleMs, now);
        this.#db
          .prepare('INSERT OR REPLACE INTO leases (scope, owner, pid, host, pid_ns, since, heartbeat_at) VALUES (?, ?, ?, ?, ?, ?, ?)')
          .run(scope, this.#owner, process.pid, this.#host, this.#pidNs, now, now);
      })
      .immediate();
    this.#held.set(scope, 1);
    this.#startHeartbeat();
  }

  /** Drops one claim on `scope`; the last one deletes the lease row. */
  release(scope: string): void {
    const claims = this.#held.get(scope);
    if (claims === undefined) return;
    if (claims > 1) {
      this.#held.set(scope, claims - 1);
      return;
    }
    this.#held.delete(scope);
    this.#delete(scope);
    if (this.#held.size === 0) this.#stopHeartbeat();
  }

  /** Every lease this file holds, released (the ledger closes). */
  releaseAll(): void {
    for (const scope of [...this.#held.keys()]) {
      this.#held.delete(scope);
      this.#delete(scope);
    }
    this.#stopHeartbeat();
  }

  #prepare(): void {
    if (this.#ready) return;
    this.#db.exec(LEASE_SCHEMA);
    this.#ready = true;
  }

  #row(scope: string): LeaseRow | undefined {
    return this.#db.prepare('SELECT owner, pid, host, pid_ns AS pidNs, since, heartbeat_at AS heartbeatAt FROM leases WHERE scope = ?').get(scope) as
      LeaseRow | undefined;
  }

  /** A stale heartbeat, or a holder on this machine whose process is gone. */
  #takeable(row: LeaseRow, now: number): boolean {
    if (now - row.heartbeatAt > this.#options.staleMs) return true;
    return row.host === this.#host && row.pidNs === this.#pidNs && row.pid !== process.pid && !processAlive(row.pid);
  }

  #delete(scope: string): void {
    try {
      this.#db.prepare('DELETE FROM leases WHERE scope = ? AND owner = ?').run(scope, this.#owner);
    } catch {
      // A ledger that cannot be written (full disk, busy past its timeout): the row goes stale and is taken over.
    }
  }

  #startHeartbeat(): void {
    if (this.#timer) return;
    this.#timer = setInterval(() => this.#heartbeat(), Math.max(200, Math.floor(this.#options.staleMs / 5)));
    // A lease never keeps a process alive.
    this.#timer.unref();
  }

  #stopHeartbeat(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  #heartbeat(): void {
    const now = Date.now();
    for (const scope of [...this.#held.keys()]) {
      let changes: number;
      try {
        changes = this.#db.prepare('UPDATE leases SET heartbeat_at = ? WHERE scope = ? AND owner = ?').run(now, scope, this.#owner).changes;
      } catch {
        // Busy or a storage error: this beat is skipped, the next one tries again. A timer must never throw.
        continue;
      }
      if (changes > 0) continue;
      this.#held.delete(scope);
      let taker: LeaseRow | undefined;
      try {
        taker = this.#row(scope);
      } catch {
        taker = undefined;
      }
      const by = taker ? `pid ${taker.pid} on host ${taker.host}` : 'nobody (its row is gone)';
      const message = `forkpool lost its lease on the ledger scope "${scope}" of ${this.#file} to ${by}: this process was paused or slowed past ledger.leaseStaleMs (${this.#options.staleMs} ms), and its jobs in that scope may now run in the other process too`;
      (this.#options.onLost ?? ((_scope, text) => process.emitWarning(text, { code: 'FORKPOOL_LEDGER_LEASE_LOST' })))(scope, message);
    }
    if (this.#held.size === 0) this.#stopHeartbeat();
  }
}
