/**
 * Approvals in background jobs (docs/tools.md "Approvals"). With `approvals: "ask"` (the config's,
 * or the job's agent's), a job's call of an ungranted gated tool does not fail: the main thread
 * answers its permission question with `ask`, the job's loop finishes the batch's other calls
 * and the job pauses. It hands its conversation over and ends its attempt, so its slot and its
 * thread are given back while it waits (as a job waiting for its children does), and its wall
 * clock stops. Its record stays `running`, with the calls in `awaitingApproval`; the
 * conversation is written beside its row, so a process restarted with the ledger finds it still
 * waiting (recovery.ts). Once every call is answered it is queued first and runs again from
 * there: the approved call runs once (its answer is handed to the permission question that
 * call asks again), a denied one reads the reason as its tool error.
 *
 * This object owns the waits, the answers not yet used and the job-wide grants; the ledger
 * owns what is written.
 */
import type { ForkpoolConfig } from '../../shared/config.js';
import { redactConversation } from '../../shared/conversation-cap.js';
import { JobError, ForkpoolError, serializeError } from '../../shared/errors.js';
import type { AwaitedCall, JobSpec, ResumeState } from '../../shared/protocol.js';
import { capHeadTail } from '../../shared/text-budget.js';
import { redactionSecrets } from '../../shared/tools/host-secrets.js';
import { redactToolOutput } from '../../shared/tools/secrets.js';
import {
  approvalDecisionSchema,
  approvalModeFor,
  rememberScope,
  type ApprovalDecision,
  type ApprovalRecord,
  type PendingApproval,
} from '../../shared/approvals.js';
import type { PermissionAnswer } from '../executors/attempt.js';
import type { JobScheduler } from '../executors/scheduler.js';
import type { ApprovalWait, DeliveryLedger, JobRecord } from '../ledger/ledger.js';
import type { JobStore } from '../ledger/ledger-store.js';
import type { PermissionStore } from '../limits/permissions.js';
import type { Dispatcher } from './dispatcher.js';
import type { Job } from './job.js';
import type { JobTable } from './job-table.js';
import type { Emit } from './manager-api.js';
import { lastAssistantText } from './nesting.js';

/** The longest arguments text a pending call shows. */
const ARGS_MAX_CHARS = 4_000;

export interface ApprovalsHost {
  readonly config: ForkpoolConfig;
  readonly ledger: DeliveryLedger;
  readonly store: JobStore | undefined;
  readonly table: JobTable;
  readonly dispatcher: Dispatcher;
  readonly permissions: PermissionStore;
  readonly scheduler: JobScheduler;
  readonly emit: Emit;
  /** A step in the job's transcript (who, when, what). */
  note(jobId: string, text: string): void;
}

/** A job paused for approvals: where it goes on from, and what it waits for. */
interface Wait {
  job: Job;
  state: Omit<ResumeState, 'childResults'>;
  pending: PendingApproval[];
  /** Timers by call id (approvalTimeoutMs). */
  timers: Map<string, unknown>;
}

export class JobApprovals {
  readonly #host: ApprovalsHost;
  readonly #secrets: readonly string[];
  readonly #waits = new Map<string, Wait>();
  /** Answers given and not yet used by the job's next run, by job id, then call id. */
  readonly #answers = new Map<string, Map<string, ApprovalRecord>>();
  /** Tools granted to one job (`remember: "job"`), by job id. */
  readonly #grants = new Map<string, Set<string>>();

  constructor(host: ApprovalsHost) {
    this.#host = host;
    this.#secrets = redactionSecrets(host.config);
  }

  /** `ask` for this job: its agent's setting, else the config's. */
  asks(spec: JobSpec | undefined): boolean {
    return approvalModeFor(this.#host.config, spec?.agent) === 'ask';
  }

  /** A job's gated call asks: granted (session or job grant, or an allow waiting for it), denied with a reason, `ask`, or denied. */
  answer(job: Job, tool: string, callId: string | undefined): PermissionAnswer {
    if (this.#host.permissions.isGranted(tool) || this.#grants.get(job.id)?.has(tool)) return { granted: true };
    const given = callId === undefined ? undefined : this.#answers.get(job.id)?.get(callId);
    if (given && given.tool === tool) {
      // Used once: the exact call runs once.
      this.#answers.get(job.id)?.delete(callId as string);
      return given.decision === 'allow' ? { granted: true } : { granted: false, reason: given.reason ?? `denied by ${given.by}` };
    }
    return callId !== undefined && this.asks(job.spec) ? { granted: false, ask: true } : { granted: false };
  }

  /**
   * Its attempt ended paused: its calls wait, its slot and thread are given back, its clock stops.
   * Children's results handed to that run and not among `seenChildren` are held (on its wait record).
   */
  paused(job: Job, state: Omit<ResumeState, 'childResults'>, calls: readonly AwaitedCall[], seenChildren: readonly string[]): void {
    const now = Date.now();
    job.ranMs += job.runningSince === undefined ? 0 : now - job.runningSince;
    job.runningSince = undefined;
    const expiresAt = now + this.#host.config.approvalTimeoutMs;
    const pending = calls.map((call) => ({
      jobId: job.id,
      callId: call.callId,
      tool: call.tool,
      summary: capHeadTail(redactToolOutput(call.summary, this.#secrets), ARGS_MAX_CHARS),
      args: capHeadTail(redactToolOutput(call.args, this.#secrets), ARGS_MAX_CHARS),
      label: job.record.label,
      requestedAt: now,
      expiresAt,
    }));
    job.pauseForApproval(seenChildren);
    this.#wait(job, state, pending, now);
    // Kept beside its row (redacted, as every conversation the ledger keeps): a restart goes on from it.
    const store = this.#host.store;
    if (store)
      this.#host.ledger.writeAside(`job ${job.id}'s conversation`, () => store.putConversation(job.id, redactConversation(state.messages, this.#secrets)));
    this.#host.ledger.waits.awaitApproval(job.id, pending, this.#waitRecord(job, state));
    for (const call of pending) {
      this.#host.note(job.id, `approval asked: ${call.tool} (${call.summary}), call ${call.callId}`);
      this.#host.emit('approval-requested', call);
    }
    // Its slot is free: the queue goes on.
    this.#host.dispatcher.pump();
  }

  /** Every call awaiting an answer, oldest first. */
  list(): PendingApproval[] {
    return [...this.#waits.values()].flatMap((wait) => wait.pending).sort((a, b) => a.requestedAt - b.requestedAt);
  }

  /** Answers a call (the job's oldest when `callId` is undefined); see BackgroundManager.approve. */
  approve(jobRef: string, callId: string | undefined, given: ApprovalDecision): ApprovalRecord {
    const parsed = approvalDecisionSchema.safeParse(given);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new ForkpoolError('APPROVAL_INVALID', `approval decision: field "${issue?.path.join('.') ?? ''}": ${issue?.message ?? 'invalid'}`);
    }
    const decision = parsed.data;
    const job = this.#host.table.find(jobRef);
    const wait = job ? this.#waits.get(job.id) : undefined;
    if (!job || !wait) {
      const what = job ? `job ${job.id} is ${job.record.state === 'ended' ? 'ended' : 'not waiting for an approval'}` : `no background job "${jobRef}"`;
      throw new ForkpoolError('APPROVAL_UNKNOWN', `nothing to approve: ${what}`);
    }
    const at = callId === undefined ? 0 : wait.pending.findIndex((p) => p.callId === callId);
    const pending = wait.pending[at];
    if (!pending)
      throw new ForkpoolError(
        'APPROVAL_UNKNOWN',
        `job ${job.id} has no call "${callId}" waiting for an approval (waiting: ${wait.pending.map((p) => p.callId).join(', ')})`,
      );
    return this.#answer(wait, pending, decision);
  }

  #answer(
    wait: Wait,
    pending: PendingApproval,
    decision: Pick<ApprovalDecision, 'decision'> & { [K in 'remember' | 'reason' | 'by']?: ApprovalDecision[K] | undefined },
  ): ApprovalRecord {
    const { job } = wait;
    const remember = decision.decision === 'allow' ? rememberScope(decision.remember) : undefined;
    const answered: ApprovalRecord = {
      ...pending,
      decision: decision.decision,
      by: decision.by ?? 'library',
      at: Date.now(),
      ...(decision.reason !== undefined && decision.decision === 'deny' ? { reason: decision.reason } : {}),
      ...(remember ? { remember } : {}),
    };
    if (remember === 'session') this.#host.permissions.grant(pending.tool);
    if (remember === 'job') this.#grantToJob(job.id, pending.tool);
    wait.pending = wait.pending.filter((p) => p !== pending);
    this.#clearTimer(wait, pending.callId);
    this.#answersOf(job.id).set(pending.callId, answered);
    this.#host.ledger.waits.answerApproval(job.id, answered, wait.pending, this.#waitRecord(job, wait.state));
    const why = answered.reason ? `: ${answered.reason}` : '';
    this.#host.note(job.id, `approval ${answered.decision === 'allow' ? 'given' : 'refused'} by ${answered.by}: ${pending.tool}, call ${pending.callId}${why}`);
    this.#host.emit('approval-resolved', answered);
    if (wait.pending.length === 0) this.#resume(wait);
    return answered;
  }

  /** Every call answered: queued first, to take a slot again before the approved call runs. */
  #resume(wait: Wait): void {
    const { job } = wait;
    this.#waits.delete(job.id);
    this.#host.ledger.waits.approvalsAnswered(job.id);
    job.resumeFromApproval({ ...wait.state, childResults: '', approval: true });
    this.#host.dispatcher.enqueueFirst(job);
  }

  /** Stopped while it waits (cancel, close, timeout): it ends with what it last said. False when it does not wait. */
  stop(job: Job, reason: 'cancel' | 'timeout' | 'close' | 'budget', why?: string): boolean {
    const wait = this.#waits.get(job.id);
    if (!wait) return false;
    this.#drop(wait);
    const timedOut = reason === 'timeout';
    const waitingFor = wait.pending.map((p) => p.tool).join(', ');
    const message = why ?? `${timedOut ? 'timed out' : 'cancelled'} while waiting for an approval of ${waitingFor} (${reason})`;
    job.end({
      status: timedOut ? 'timed_out' : 'cancelled',
      endedBy: 'cooperative',
      resultText: lastAssistantText(wait.state.messages),
      usage: wait.state.usage,
      iterations: wait.state.iterations,
      error: serializeError(new JobError(timedOut ? 'JOB_TIMEOUT' : 'JOB_CANCELLED', job.id, message)),
      ...(reason === 'close' ? { byClose: true as const } : {}),
    });
    return true;
  }

  /** A restart drops this job's wait (restarts.ts): its pending calls as void refusals, for its record; nothing changes here yet. */
  voided(job: Job, reason: string): ApprovalRecord[] {
    const at = Date.now();
    return (this.#waits.get(job.id)?.pending ?? []).map((call) => ({ ...call, decision: 'deny' as const, by: 'restart', at, reason }));
  }

  /** Once its record no longer waits: its wait, timers, unused answers and job grants go (as at its end), and each void answer is told. */
  dropVoided(job: Job, refused: readonly ApprovalRecord[]): void {
    this.ended(job.id);
    for (const answered of refused) {
      this.#host.note(job.id, `approval void: ${answered.tool}, call ${answered.callId} (${answered.reason ?? 'restarted'})`);
      this.#host.emit('approval-resolved', answered);
    }
  }

  /** A job ended (or was forgotten): what was kept for it goes. */
  ended(jobId: string): void {
    const wait = this.#waits.get(jobId);
    if (wait) this.#drop(wait);
    this.#answers.delete(jobId);
    this.#grants.delete(jobId);
  }

  /**
   * Restart recovery: a job the last process left waiting (or answered, not yet run again).
   * Its grants and unused answers come back from its record; its conversation from beside its
   * row. False when that conversation is gone (then it cannot go on where it paused).
   */
  restore(job: Job, record: Readonly<JobRecord>): boolean {
    const wait = record.approvalWait;
    const messages = wait && this.#host.store?.conversation(job.id);
    if (!wait || !messages) return false;
    job.ranMs = wait.ranMs;
    job.results.held.push(...(wait.childResults ?? []));
    for (const answered of record.approvals ?? []) {
      if (answered.remember === 'job') this.#grantToJob(job.id, answered.tool);
      if (wait.answered.includes(answered.callId)) this.#answersOf(job.id).set(answered.callId, answered);
    }
    const state = {
      messages,
      usage: wait.usage,
      iterations: wait.iterations,
      ...(wait.wrapUpSent ? { wrapUpSent: true } : {}),
      ...(wait.scheduledTurn ? { scheduledTurn: wait.scheduledTurn } : {}),
    };
    const pending = record.awaitingApproval ?? [];
    if (pending.length === 0) {
      job.resumeFromApproval({ ...state, childResults: '', approval: true });
      this.#host.dispatcher.enqueueFirst(job);
      return true;
    }
    job.pauseForApproval();
    this.#wait(job, state, pending, Date.now());
    return true;
  }

  /** `now`: the clock its calls' `expiresAt` were counted from (a restored wait: the time of restore). */
  #wait(job: Job, state: Omit<ResumeState, 'childResults'>, pending: PendingApproval[], now: number): void {
    const wait: Wait = { job, state, pending, timers: new Map() };
    this.#waits.set(job.id, wait);
    for (const call of pending) {
      const ms = Math.max(0, call.expiresAt - now);
      wait.timers.set(
        call.callId,
        this.#host.scheduler.set(() => this.#expired(wait, call), ms, { jobId: job.id, kind: 'approval' }),
      );
    }
  }

  /** No answer within approvalTimeoutMs: the call is denied (the model reads why), or the job cancelled. */
  #expired(wait: Wait, call: PendingApproval): void {
    if (this.#waits.get(wait.job.id) !== wait || !wait.pending.includes(call)) return;
    const seconds = Math.round(this.#host.config.approvalTimeoutMs / 1000);
    const reason = `no one answered within approvalTimeoutMs (${this.#host.config.approvalTimeoutMs} ms, ~${seconds} s)`;
    if (this.#host.config.approvalTimeoutAction === 'cancel') {
      this.#host.note(wait.job.id, `approval timed out: ${call.tool}, call ${call.callId}; the job is cancelled`);
      this.stop(wait.job, 'cancel', `cancelled: the approval of ${call.tool} (call ${call.callId}) got ${reason} (approvalTimeoutAction "cancel")`);
      return;
    }
    this.#answer(wait, call, { decision: 'deny', by: 'timeout', reason });
  }

  #waitRecord(job: Job, state: Omit<ResumeState, 'childResults'>): ApprovalWait {
    return {
      usage: state.usage,
      iterations: state.iterations,
      ...(state.wrapUpSent ? { wrapUpSent: true as const } : {}),
      ranMs: job.ranMs,
      answered: [...(this.#answers.get(job.id)?.keys() ?? [])],
      ...(job.results.held.length > 0 ? { childResults: [...job.results.held] } : {}),
      ...(state.scheduledTurn ? { scheduledTurn: { at: state.scheduledTurn.at, reason: state.scheduledTurn.reason } } : {}),
    };
  }

  #answersOf(jobId: string): Map<string, ApprovalRecord> {
    let answers = this.#answers.get(jobId);
    if (!answers) this.#answers.set(jobId, (answers = new Map<string, ApprovalRecord>()));
    return answers;
  }

  #grantToJob(jobId: string, tool: string): void {
    let grants = this.#grants.get(jobId);
    if (!grants) this.#grants.set(jobId, (grants = new Set<string>()));
    grants.add(tool);
  }

  #clearTimer(wait: Wait, callId: string): void {
    const timer = wait.timers.get(callId);
    if (timer !== undefined) this.#host.scheduler.clear(timer);
    wait.timers.delete(callId);
  }

  #drop(wait: Wait): void {
    for (const timer of wait.timers.values()) this.#host.scheduler.clear(timer);
    wait.timers.clear();
    this.#waits.delete(wait.job.id);
  }
}
