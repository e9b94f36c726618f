import type { JobRecord } from '../main/ledger/ledger.js';
import type { LoopEvent } from '../shared/loop-events.js';
import { jobView, type JobView } from '../main/views/job-view.js';
import type { BudgetReport } from '../shared/budget.js';
import type { JobDetailBody, JobSummaryBody } from './responses.js';

/** What the server knows of a running job beyond its record: the live part of its progress. */
export interface JobProgress {
  /** The tool running now, if any. */
  currentTool: string | null;
  toolCalls: number;
  modelCalls: number;
  /** Tokens reported so far by the job's model calls (the record has them only at the end). */
  tokens: number;
  lastEventAt: number;
  /** Its latest model-call retry, until the next model response (the page shows `↻ 2/4 429`). */
  retrying: JobRetrying | null;
}

export interface JobRetrying {
  attempt: number;
  maxRetries: number | null;
  status: number | null;
  host: string | null;
  waitMs: number;
  at: number;
}

/**
 * A record as the API lists it (`GET /v1/jobs`, a session's jobs, SSE `job` events; schemas.ts
 * `jobSummaryShape`): fields of the one {@link jobView}, a task preview instead of the task and
 * result, and the live part (current tool, tokens so far) from {@link JobProgress}, which only the
 * server follows. See {@link jobDetail} for the whole job.
 */
export function jobSummary(record: Readonly<JobRecord>, progress: JobProgress | undefined, now = Date.now(), budget?: BudgetReport): JobSummaryBody {
  return summaryOf(jobView(record, { now, budget }), progress);
}

// Typed by the response schema (responses.ts): a field added here and not there fails the typecheck.
function summaryOf(view: JobView, progress: JobProgress | undefined): JobSummaryBody {
  return {
    id: view.id,
    label: view.label,
    role: view.role,
    state: view.state,
    status: view.status,
    endedBy: view.endedBy,
    taskPreview: view.task.length > 200 ? `${view.task.slice(0, 197)}...` : view.task,
    queuedAt: view.queuedAt,
    startedAt: view.startedAt,
    endedAt: view.endedAt,
    elapsedMs: view.elapsedMs,
    currentTool: view.state === 'running' ? (progress?.currentTool ?? null) : null,
    retrying: view.state === 'running' ? (progress?.retrying ?? null) : null,
    /** Tool calls of its latest run, live and once ended; null when the server did not follow it (ended before a restart). */
    toolCalls: progress?.toolCalls ?? (view.state === 'queued' ? 0 : null),
    // The record has usage only once the job ended; while it runs, what its model calls reported.
    tokens: view.state === 'ended' ? view.tokens : (progress?.tokens ?? 0),
    iterations: view.iterations,
    attempts: view.attempts,
    error: view.error,
    delivered: view.delivered,
    speculative: view.speculative,
    agent: view.agent,
    name: view.name,
    parentJobId: view.parentJobId,
    depth: view.depth,
    branch: view.branch,
    /** Limits, spent and remaining (live while it runs when the caller passes them; from the record once ended). */
    budget: view.budget,
    budgetExceeded: view.budgetExceeded,
    deferredUntil: view.deferredUntil,
    deferReason: view.deferReason,
    sleepingUntil: view.sleepingUntil,
    sleepReason: view.sleepReason,
    // In every summary (lists, SSE `done`), as a typed job's answer is small by design.
    data: view.data,
    awaitingApproval: view.awaitingApproval,
  };
}

export type JobSummary = ReturnType<typeof jobSummary>;

/** One job in full (`GET /v1/jobs/{id}`, its `/result`): the summary, the whole task and result, the error chain, usage and progress. */
export function jobDetail(record: Readonly<JobRecord>, progress: JobProgress | undefined, budget?: BudgetReport): JobDetailBody {
  const view = jobView(record, { budget });
  return {
    ...summaryOf(view, progress),
    task: view.task,
    resultText: view.resultText,
    resultDropped: view.resultDropped,
    tag: view.tag,
    stopReason: view.stopReason,
    errorDetail: view.errorDetail,
    usage: view.usage,
    notes: view.notes,
    /** The ended job this one resumed (POST /v1/jobs/{id}/resume), else null. */
    resumedFrom: record.resumedFrom ?? null,
    tools: view.tools,
    /** Messages sent to it (POST /v1/jobs/:id/messages and the other doors), as its record keeps them. */
    messages: record.messages ?? [],
    progress: progress ?? null,
    approvals: view.approvals,
  };
}

/**
 * Ended jobs whose counts (tool calls, model calls) are kept: about 100 bytes each. Past it the
 * oldest ended job's counts go (its row then shows no tool-call count); the ledger's retention
 * keeps 10,000 delivered records per manager, so this covers what a page lists.
 */
const ENDED_PROGRESS_KEPT = 20_000;

/**
 * Follows `progress` events to keep each job's current tool, tool calls and token count. An ended
 * job keeps its counts (bounded by {@link ENDED_PROGRESS_KEPT}); a re-queued one starts afresh.
 */
export class ProgressTracker {
  readonly #byJob = new Map<string, JobProgress>();
  /** Ended jobs' keys, oldest first (a Set keeps insertion order). */
  readonly #ended = new Set<string>();

  get(id: string): JobProgress | undefined {
    return this.#byJob.get(id);
  }

  onEvent(jobId: string, event: LoopEvent): JobProgress {
    const progress = this.#byJob.get(jobId) ?? { currentTool: null, toolCalls: 0, modelCalls: 0, tokens: 0, lastEventAt: 0, retrying: null };
    progress.lastEventAt = Date.now();
    if (event.type === 'tool_call') {
      progress.currentTool = event.name;
      progress.toolCalls++;
    } else if (event.type === 'tool_result') {
      progress.currentTool = null;
    } else if (event.type === 'retry') {
      const { attempt, maxRetries, status, host, delayMs } = event;
      progress.retrying = { attempt, maxRetries: maxRetries ?? null, status: status ?? null, host: host ?? null, waitMs: delayMs, at: progress.lastEventAt };
    } else if (event.type === 'model_response') {
      // The call went through: no longer retrying.
      progress.retrying = null;
      progress.modelCalls++;
      progress.tokens += event.usage.totalTokens;
    }
    this.#byJob.set(jobId, progress);
    return progress;
  }

  /** The job ended: no tool runs now; its counts stay until {@link ENDED_PROGRESS_KEPT} newer endings push them out. */
  settle(jobId: string): void {
    const progress = this.#byJob.get(jobId);
    if (!progress) return;
    progress.currentTool = null;
    progress.retrying = null;
    this.#ended.delete(jobId);
    this.#ended.add(jobId);
    for (const oldest of this.#ended) {
      if (this.#ended.size <= ENDED_PROGRESS_KEPT) break;
      this.#ended.delete(oldest);
      this.#byJob.delete(oldest);
    }
  }

  forget(jobId: string): void {
    this.#byJob.delete(jobId);
    this.#ended.delete(jobId);
  }
}
