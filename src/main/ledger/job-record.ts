/**
 * The shape of one job's record in the delivery ledger: its state, how it ended, what it spent,
 * and whether (and in which turn) its result reached the parent. Plain data: records are cloned
 * into events, the API and the durable store.
 */
import type { SerializedError } from '../../shared/errors.js';
import type { FileRead, JobRole } from '../../shared/protocol.js';
import type { ResultTag } from '../../shared/result-tag.js';
import type { StopReason } from '../../shared/loop-events.js';
import type { UsageByModel } from '../../shared/usage.js';
import type { BudgetLimits, BudgetName, BudgetReport } from '../../shared/budget.js';
import type { ApprovalRecord, PendingApproval } from '../../shared/approvals.js';

export const JOB_STATES = ['queued', 'running', 'ended'] as const;
export type JobState = (typeof JOB_STATES)[number];
/** What an ended job amounts to for its reader (the manager's verdict on its {@link StopReason} and any `StopRequest`, protocol.ts). */
/** `deferred`: an `exit_on_defer` job asked to run again at `deferredUntil` (docs/delivery.md "Schedulers"). */
export const JOB_STATUSES = ['ok', 'error', 'partial', 'failed', 'cancelled', 'timed_out', 'deferred'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];
/**
 * How a job's run came to its end, the mechanism rather than the verdict: its own answer
 * (`completed`), a cooperative stop over the port, a hard stop of its thread, its thread's
 * crash, or while still in the queue (cancelled or refused before it ran).
 */
export const ENDED_BY = ['completed', 'cooperative', 'hard', 'crash', 'queue'] as const;
export type EndedBy = (typeof ENDED_BY)[number];

/**
 * One job's whole story. The ledger is the one source for drain, status and display. Records
 * the ledger hands out are frozen values: a new one replaces the old at every transition, so
 * readers share them without copying and can never change the ledger through them.
 */
export interface JobRecord {
  id: string;
  label: string;
  /** The task; after retention drops the result, only its head (see `resultDropped`). */
  task: string;
  role: JobRole;
  /** The configured peer it runs (a key of `config.agents`); unset: a fork of the parent. */
  agent?: string;
  /** A name given at spawn, unique among live jobs; usable wherever an id is. */
  name?: string;
  /** The tools it was offered, by catalog name (its agent's or the config's, narrowed by its spawn, plus extras). */
  tools?: string[];
  /** The parent's tool call that started it (`agent_<name>`, `spawn_background_agent`), so a front end can group its events. */
  parentToolId?: string;
  /**
   * Its place in the agent tree, `<parent-branch>.bg.<name>` (name, else agent, else id): `bg.scout`
   * for a top-level job, `bg.scout.bg.reader` for one it spawned (src/shared/branch.ts). Absent
   * from records written before branches were kept.
   */
  branch?: string;
  /**
   * The manager's close() stopped it and the durable ledger kept it unfinished: the next process
   * on the ledger runs it again, so this in-memory ending is not its reported one (fanout does
   * not print it).
   */
  resumable?: true;
  /** An `agent_<name>(background: true)` call returned early at its first text; its result comes as a background result. */
  backgrounded?: true;
  /**
   * A speculative spawn (docs/delivery.md "Speculative jobs"): `pending` while it is a guess no
   * turn has referred to, `kept` once one did (an ordinary job from then on), `dropped` when it
   * was cancelled as a guess (its turn ended without referring to it, or a real job needed its
   * slot or budget). A dropped job's result is set aside, never delivered (`deliveredInTurn: 0`).
   */
  speculative?: Speculation;
  /** A resume of that ended job (resume_background_agent): it went on from that job's kept conversation. */
  resumedFrom?: string;
  /** The job that spawned it (nesting); its result goes to that job, not to the session. */
  parentJobId?: string;
  /** 1 for a job the session started (omitted), 2 for its child, ... */
  depth?: number;
  /** Answered with children still running: its slot was given back until they end (state `queued`). */
  waitingForChildren?: true;
  /** Jobs it spawned, set when it ends. */
  children?: string[];
  /** What happened to its children when it ended: it waited for them, or they were cancelled. */
  childrenOnEnd?: 'waited' | 'cancelled';
  /** Its usage plus its ended descendants' (the tree's roll-up), set when it ends. */
  treeUsage?: UsageByModel;
  /** Its budgets (its agent's, or tighter ones given at spawn); see docs/delivery.md "Budgets". */
  budget?: BudgetLimits;
  /** The budget that ran out (the job then ended `partial` with what it had). */
  budgetExceeded?: BudgetName;
  /** Limits, spent and remaining when it ended. */
  budgetReport?: BudgetReport;
  /** Ended `deferred` (`exit_on_defer`): when it asked to run again (epoch ms), and why. */
  deferredUntil?: number;
  deferReason?: string;
  /** The agent turn that spawned it (its wave), or null for a user-started job. */
  wave: number | null;
  state: JobState;
  status?: JobStatus;
  endedBy?: EndedBy;
  /** The job's full answer without the result tag (never capped here). Gone once `resultDropped`. */
  resultText?: string;
  /**
   * A typed job's value: its output schema matched, checked in the worker (docs/delivery.md
   * "Typed results"). Absent for an untyped job and one that failed RESULT_INVALID. Dropped with `resultText`.
   */
  data?: unknown;
  /** Retention dropped `resultText` (and the task's tail, the error's stack and cause) long after delivery. */
  resultDropped?: true;
  /**
   * Delivered in part (the turn's injection budget ran out): the characters `[from, to)` of
   * `resultText` the parent has not been shown yet; it reads them with `read_background_result`.
   * Until it has, retention keeps the text (see RetentionPolicy). Absent: shown whole.
   */
  resultUnread?: [number, number];
  /** Files it read and what it saw (the stale check at delivery). */
  reads?: FileRead[];
  tag?: ResultTag;
  stopReason?: StopReason;
  error?: SerializedError;
  usage: UsageByModel;
  iterations: number;
  attempts: number;
  /**
   * Launches handed to the executor since it was last queued, written before each launch: a job
   * whose thread may have begun (but had not yet said `started`) when the process died is not
   * mistaken for one that never ran (restart recovery).
   */
  dispatched?: number;
  /**
   * Runs of it that sent a model request (once per run, kept across restarts). Restart recovery
   * re-runs an interrupted job while this stays within `ledger.maxReruns` + 1: a run killed
   * before it asked the model anything does not count.
   */
  modelRuns?: number;
  /** Why the job ran again, one line per re-queue. */
  notes: string[];
  threadId?: number;
  queuedAt: number;
  startedAt?: number;
  endedAt?: number;
  /** The parent turn that received it; set once, never twice. */
  deliveredInTurn?: number;
  deliveredAt?: number;
  /** Messages sent to it while it was live (send_to_background_agent), in order; see docs/agents.md "Steering a running job". */
  messages?: SentMessage[];
  /**
   * Its gated calls that wait for an answer (`approvals: "ask"`, docs/tools.md "Approvals"). The
   * job stays `running` meanwhile, but holds no slot and no thread; its wall clock is paused.
   */
  awaitingApproval?: PendingApproval[];
  /** Its approvals answered so far (who, when, what), oldest first. */
  approvals?: ApprovalRecord[];
  /** While it waits for approvals and until it runs again: where its run goes on from (the conversation is stored beside the row). */
  approvalWait?: ApprovalWait;
  /**
   * `sleep` scheduler (docs/delivery.md "Schedulers"): it called schedule_next_turn. `running`
   * with this: asleep until `sleepWait.at`, holding no slot and no thread (its conversation is
   * beside its row); `queued` with this: woken, to go on from there. Gone once it runs again.
   */
  sleepWait?: SleepWait;
  /**
   * Children's results held for it (on a wait record, or from a run that ended without reading
   * them) and handed to its current run (Job.takeHeldResults). Kept until that run ends, sleeps
   * or pauses: a run cut by a crash is re-run from its task by recovery, which hands them again.
   */
  handedResults?: string[];
}

/** What a sleeping job keeps in its record (its conversation goes beside it: see sleeps.ts in src/main/jobs). */
export interface SleepWait {
  /** When it wakes (epoch ms), and what it said it will do then. */
  at: number;
  reason: string;
  usage: UsageByModel;
  iterations: number;
  wrapUpSent?: true;
  /** Wall-clock ms it ran before it slept (its timeout counts on from there). */
  ranMs: number;
  /** Its children's results that came while it slept, for its next run (nesting.ts). */
  childResults?: string[];
}

/** What a job paused for approvals keeps in its record (its conversation goes beside it: see approvals.ts in src/main/jobs). */
export interface ApprovalWait {
  usage: UsageByModel;
  iterations: number;
  wrapUpSent?: true;
  /** Wall-clock ms it ran before it waited (its timeout counts on from there). */
  ranMs: number;
  /** Calls answered and not yet run again by its next launch. */
  answered: string[];
  /** Its children's results that came while it waited, for its next run (nesting.ts). */
  childResults?: string[];
  /** `sleep`: the paused batch held schedule_next_turn too; it sleeps until then once the approved calls ran. */
  scheduledTurn?: { at: number; reason: string };
}

export const SPECULATION_STATES = ['pending', 'kept', 'dropped'] as const;
export type Speculation = (typeof SPECULATION_STATES)[number];

/** A message sent to a job, as its record keeps it. */
export interface SentMessage {
  /** 1-based among the job's messages. */
  id: number;
  /** Its text, secrets redacted, head and tail past 2,000 characters. */
  text: string;
  /** When it was sent, epoch ms. */
  at: number;
  /** It cancelled the model call in flight. */
  interrupt?: true;
  /** When its latest run took it into its conversation; absent: not yet (queued, waiting, or it arrived as the job ended). */
  receivedAt?: number;
}

export interface JobEnding {
  status: JobStatus;
  endedBy: EndedBy;
  resultText: string;
  tag?: ResultTag | undefined;
  stopReason?: StopReason | undefined;
  error?: SerializedError | undefined;
  usage: UsageByModel;
  iterations: number;
  children?: string[] | undefined;
  childrenOnEnd?: 'waited' | 'cancelled' | undefined;
  treeUsage?: UsageByModel | undefined;
  budgetExceeded?: BudgetName | undefined;
  budgetReport?: BudgetReport | undefined;
  /** Files it read (the stale check at delivery). */
  reads?: FileRead[] | undefined;
  /** `deferred`: when it asked to run again, and why. */
  deferred?: { at: number; reason: string } | undefined;
  /** A typed job's validated value (absent: none). */
  data?: unknown;
  /**
   * The manager's close() stopped it: with a durable ledger this ending is kept in memory
   * only, so the next process finds the job unfinished and runs it again (one reported ending).
   */
  byClose?: true | undefined;
}

/**
 * How long delivered records keep what is big. Only delivered records are ever trimmed or
 * forgotten: a result nobody has received yet is kept however old it is, and so is one
 * delivered in part until it has been read to its end (at most `keepResults` such results; past
 * that the oldest falls under the rules below).
 */
export interface RetentionPolicy {
  /** Delivered results (full text) kept, newest deliveries first. */
  keepResults: number;
  /** ... and none kept longer than this after its delivery (0: dropped as soon as delivered). */
  keepResultsMs: number;
  /** Delivered records kept at all (metadata), newest deliveries first; older ones are forgotten. */
  keepRecords: number;
}

/** What retention did so far, for logs and tests. */
export interface LedgerStats {
  records: number;
  undelivered: number;
  /** Delivered records still holding their full result text. */
  resultsKept: number;
  resultsDropped: number;
  forgotten: number;
}
