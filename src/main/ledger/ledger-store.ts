/**
 * Where a ledger persists: the interface the in-memory {@link DeliveryLedger} writes through
 * (every record it hands out is written here first), and what a restart reads back. SQLite is
 * the implementation that ships (sqlite-store.ts); without a store the ledger lives in memory.
 */
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import type { JobSpec } from '../../shared/protocol.js';
import type { UsageByModel } from '../../shared/usage.js';
import type { JobRecord } from './job-record.js';
import type { StoredTranscript } from './transcript.js';

/** A job's spec as stored: everything but the config, which comes from the session that resumes it (so no key is ever written to disk). */
export type StoredSpec = Omit<JobSpec, 'config' | 'processTag' | 'resume' | 'heldResults'> & {
  /**
   * Its de-duplication key (src/main/jobs/dedup.ts) when identical spawns may join or reuse it:
   * a restart rebuilds the dedup tables from these. Kept, not recomputed, because a spawn that
   * opted out (`SpawnOptions.dedup: false`) leaves no other trace.
   */
  dedupKey?: string;
  /**
   * A `workspace: "worktree"` job's worktree as it last was (src/main/jobs/worktrees.ts
   * `JobWorktree`; written again at each change): a restart runs the job in it again, and
   * merges, keeps or drops it as before.
   */
  worktree?: StoredWorktree;
  /** Its worktree was still to be made (before its first launch): a restart ends it, never runs it in the workspace. */
  worktreePending?: true;
};

/** A worktree as stored: the fields of `JobWorktree` (src/main/jobs/worktrees.ts), which this folder may not import. */
export interface StoredWorktree {
  jobId: string;
  branch: string;
  base: string;
  repoRoot: string;
  path: string;
  workspaceRoot: string;
  state: 'open' | 'kept' | 'removed' | 'uncommitted' | 'merged' | 'dropped';
  changed?: string[];
  problem?: string;
  handedTo?: string;
}

export interface StoredJob {
  record: JobRecord;
  /** Spawn order within its scope; drain and re-queue follow it. */
  position: number;
  spec?: StoredSpec | undefined;
  /** The messages sent to it, whole (its record keeps them cut short), in order; absent: none. */
  messages?: StoredMessage[];
}

/** A message sent to a job (`send_to_background_agent`), as written when it was sent: whole, secrets redacted. */
export interface StoredMessage {
  /** 1-based among the job's messages. */
  id: number;
  text: string;
  /** When it was sent, epoch ms. */
  at: number;
  interrupt?: true;
}

/** A row that failed its check on load (ledger-rows.ts): its id column and what was wrong, for the report. */
export interface InvalidRow {
  id: string;
  problem: string;
}

/** One alert a job sent, as it was emitted. */
export interface StoredAlert {
  jobId: string;
  number: number;
  severity: string;
  message: string;
  at: number;
}

/**
 * The jobs of one ledger (one session's manager, a fan-out, a server's own manager), named by
 * its scope. Every method is synchronous and durable when it returns: the caller acts on a
 * record only after it was written.
 */
export interface JobStore {
  readonly scope: string;
  /** The file it is kept in, if any: hidden from the tools with its companions (tools/hidden.ts). */
  readonly path?: string;
  /**
   * Takes this scope's lease for this process (one owner per scope; see ledger-lease.ts), or
   * counts one more claim on it. Throws `LEDGER_BUSY` while another live process holds it.
   */
  claim(): void;
  /** Drops one claim; the last one releases the lease. Closing the ledger releases them all. */
  release(): void;
  /** Every stored job of this scope, oldest spawn first, the next job number to hand out, and the rows that failed their check (not loaded). */
  load(): { jobs: StoredJob[]; nextId: number; invalid: InvalidRow[] };
  /** Writes a record (insert or replace); its state, delivery and position are indexed columns, the rest one JSON blob. */
  put(record: Readonly<JobRecord>, position: number, nextId: number): void;
  putSpec(spec: StoredSpec): void;
  /** Retention forgot a delivered record. */
  forget(id: string): void;
  putAlert(alert: StoredAlert): void;
  /** A message sent to a job, before anyone acts on it (a restart hands it to the job's re-run); it goes with the job's row. */
  putMessage(id: string, message: StoredMessage): void;
  /** Where a job came from, for the program that spawned it (`fanout`: its input line). */
  putSource(id: string, source: string): void;
  /** Every job's source, by job id. */
  sources(): Map<string, string>;
  /** An ended job's conversation (already cut and redacted: see conversations.ts), kept for a resume; it goes with the job's row. */
  putConversation(id: string, messages: readonly unknown[]): void;
  /** The conversation kept for a job, if any. */
  conversation(id: string): unknown[] | undefined;
  /** A job's transcript (redacted and capped: see jobs/transcripts.ts), replacing the one written before. */
  putTranscript(id: string, transcript: StoredTranscript): void;
  /** The transcript kept for a job, if any (checked as it is read). */
  transcript(id: string): StoredTranscript | undefined;
  /** Retention dropped the job's result: its transcript goes too (forget drops it with the row). */
  dropTranscript(id: string): void;
  /** Runs `fn` as one transaction: its writes land together or not at all. */
  transaction<T>(fn: () => T): T;
}

/** A parent conversation as stored: enough for {@link AgentSession} to go on where it stopped. */
export interface SessionSnapshot {
  id: string;
  /** Committed turns; a turn that was cut by a crash is not one of them. */
  turns: number;
  messages: ChatCompletionMessageParam[];
  usage: Record<string, UsageByModel>;
  folded: string;
  foldedTurns: number;
  userInputs: string[];
  /**
   * A person's prompt whose turn was running when this was written (saved before the turn runs):
   * a resume after a crash finds the prompt the turn's jobs answer, not a conversation without it.
   */
  pendingInput?: string;
}

export interface SessionSummary {
  id: string;
  turns: number;
  createdAt: number;
  updatedAt: number;
}

/** A ledger file: job scopes and sessions. */
export interface LedgerStore {
  readonly path: string;
  readonly closed: boolean;
  jobs(scope: string): JobStore;
  saveSession(snapshot: SessionSnapshot): void;
  loadSession(id: string): SessionSnapshot | undefined;
  /** Every stored session, newest activity first. */
  sessions(): SessionSummary[];
  /** The scopes holding a job of this id (ids are unique within a scope only). */
  scopesOf(id: string): string[];
  close(): void;
}
