import type { JobRecord } from '../main/ledger/ledger.js';
import type { LoopEvent } from '../shared/loop-events.js';
import { totalUsage } from '../shared/usage.js';
import type { BudgetReport } from '../shared/budget.js';

/** What the server knows of a running job beyond its record: the live part of its progress. */
export interface JobProgress {
  /** The tool running now, if any. */
  currentTool: string | null;
  toolCalls: number;
  modelCalls: number;
  /** Tokens reported so far by the job's model calls (the record has them only at the end). */
  tokens: number;
  lastEventAt: number;
}

/** A record as the API shows it: without the full result (see {@link jobDetail}). */
export function jobSummary(record: Readonly<JobRecord>, progress: JobProgress | undefined, now = Date.now(), budget?: BudgetReport) {
  const usage = totalUsage(record.usage);
  return {
    id: record.id,
    label: record.label,
    role: record.role,
    state: record.state,
    status: record.status ?? null,
    endedBy: record.endedBy ?? null,
    taskPreview: record.task.length > 200 ? `${record.task.slice(0, 197)}...` : record.task,
    queuedAt: record.queuedAt,
    startedAt: record.startedAt ?? null,
    endedAt: record.endedAt ?? null,
    elapsedMs: record.startedAt === undefined ? 0 : (record.endedAt ?? now) - record.startedAt,
    currentTool: record.state === 'running' ? (progress?.currentTool ?? null) : null,
    tokens: record.state === 'ended' ? usage.totalTokens : (progress?.tokens ?? 0),
    iterations: record.iterations,
    attempts: record.attempts,
    error: record.error ? { code: record.error.code, message: record.error.message } : null,
    delivered: record.deliveredInTurn !== undefined,
    agent: record.agent ?? null,
    name: record.name ?? null,
    parentJobId: record.parentJobId ?? null,
    depth: record.depth ?? 1,
    /** Limits, spent and remaining (live while it runs when the caller passes them; from the record once ended). */
    budget: budget ?? record.budgetReport ?? (record.budget ? { limits: record.budget } : null),
    budgetExceeded: record.budgetExceeded ?? null,
  };
}

export type JobSummary = ReturnType<typeof jobSummary>;

/** One job in full: the summary, the whole task and result, the error chain, usage and progress. */
export function jobDetail(record: Readonly<JobRecord>, progress: JobProgress | undefined, budget?: BudgetReport) {
  return {
    ...jobSummary(record, progress, Date.now(), budget),
    task: record.task,
    resultText: record.resultText ?? null,
    resultDropped: record.resultDropped === true,
    tag: record.tag ?? null,
    stopReason: record.stopReason ?? null,
    errorDetail: record.error ?? null,
    usage: record.usage,
    notes: record.notes,
    progress: progress ?? null,
  };
}

/** Follows `progress` events to keep each live job's current tool and token count; forgets ended jobs. */
export class ProgressTracker {
  readonly #byJob = new Map<string, JobProgress>();

  get(id: string): JobProgress | undefined {
    return this.#byJob.get(id);
  }

  onEvent(jobId: string, event: LoopEvent): JobProgress {
    const progress = this.#byJob.get(jobId) ?? { currentTool: null, toolCalls: 0, modelCalls: 0, tokens: 0, lastEventAt: 0 };
    progress.lastEventAt = Date.now();
    if (event.type === 'tool_call') {
      progress.currentTool = event.name;
      progress.toolCalls++;
    } else if (event.type === 'tool_result') {
      progress.currentTool = null;
    } else if (event.type === 'model_response') {
      progress.modelCalls++;
      progress.tokens += event.usage.totalTokens;
    }
    this.#byJob.set(jobId, progress);
    return progress;
  }

  forget(jobId: string): void {
    this.#byJob.delete(jobId);
  }
}
