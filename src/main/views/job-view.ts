/**
 * One job as plain JSON, the one view every surface starts from: the server's API (summary and
 * detail, src/server/job-view.ts), the CLI's JSON lines (`run --json` `job_done`, `fanout`,
 * {@link jobJson}) and the chat's panel (src/tui/jobs-view.ts). No config and no secrets; an
 * absent value is `null`, times are epoch milliseconds. A surface that must differ derives its
 * shape from this one (the CLI prints ISO times and `result`, as it always did), so a field added
 * to the record is added here once.
 */
import type { JobRecord } from '../ledger/job-record.js';
import type { BudgetReport } from '../../shared/budget.js';
import { totalUsage } from '../../shared/usage.js';

export interface JobViewOptions {
  /** The clock for a running job's `elapsedMs`; default `Date.now()`. */
  now?: number | undefined;
  /** Limits, spent and remaining while it runs (the manager's `budgetOf`); once ended the record has them. */
  budget?: BudgetReport | undefined;
}

/** How long a job has run (to `now` while it runs); 0 before it started. */
export function elapsedMs(record: Readonly<JobRecord>, now = Date.now()): number {
  return record.startedAt === undefined ? 0 : (record.endedAt ?? now) - record.startedAt;
}

/** A sleeping job's wake time (epoch ms): `running` with `sleepWait` (`queued` with it: woken, waiting for a slot); else null. */
export function sleepingUntil(record: Readonly<JobRecord>): number | null {
  return record.state === 'running' && record.sleepWait ? record.sleepWait.at : null;
}

/** A job's record as JSON: what it is, where it stands, what it answered and spent. */
export function jobView(record: Readonly<JobRecord>, options: JobViewOptions = {}) {
  return {
    id: record.id,
    label: record.label,
    name: record.name ?? null,
    role: record.role,
    agent: record.agent ?? null,
    /** The tools it was offered, by catalog name (null: a record from before tools were recorded). */
    tools: record.tools ?? null,
    parentJobId: record.parentJobId ?? null,
    depth: record.depth ?? 1,
    parentToolId: record.parentToolId ?? null,
    /** Its place in the agent tree, `bg.scout.bg.reader` (issue 38, B20); null for a record from before branches were kept. */
    branch: record.branch ?? null,
    backgrounded: record.backgrounded === true,
    children: record.children ?? null,
    childrenOnEnd: record.childrenOnEnd ?? null,
    state: record.state,
    status: record.status ?? null,
    endedBy: record.endedBy ?? null,
    stopReason: record.stopReason ?? null,
    task: record.task,
    resultText: record.resultText ?? null,
    resultDropped: record.resultDropped === true,
    /** A typed job's validated value (docs/delivery.md "Typed results"); null when untyped or it failed RESULT_INVALID. */
    data: record.data === undefined ? null : record.data,
    tag: record.tag ?? null,
    /** The code and message; the whole chain is `errorDetail`. */
    error: record.error ? { code: record.error.code, message: record.error.message } : null,
    errorDetail: record.error ?? null,
    usage: record.usage,
    tokens: totalUsage(record.usage).totalTokens,
    treeUsage: record.treeUsage ?? null,
    iterations: record.iterations,
    attempts: record.attempts,
    notes: record.notes,
    // Limits, spent and remaining (spent.unpricedModels: tokens counted, not priced).
    budget: options.budget ?? record.budgetReport ?? (record.budget ? { limits: record.budget } : null),
    budgetExceeded: record.budgetExceeded ?? null,
    /** `deferred` jobs: when it asked to run again (epoch ms) and why; null otherwise. */
    deferredUntil: record.deferredUntil ?? null,
    deferReason: record.deferReason ?? null,
    /** A sleeping job (scheduler `sleep`): when it wakes (epoch ms) and what it will do then; null otherwise (it stays `running`, holding no slot). */
    sleepingUntil: sleepingUntil(record),
    sleepReason: sleepingUntil(record) !== null ? (record.sleepWait?.reason ?? null) : null,
    queuedAt: record.queuedAt,
    startedAt: record.startedAt ?? null,
    endedAt: record.endedAt ?? null,
    elapsedMs: elapsedMs(record, options.now),
    // A dropped guess is set aside (delivered in turn 0), never delivered to anyone.
    delivered: record.deliveredInTurn !== undefined && record.speculative !== 'dropped',
    /** `pending`, `kept` or `dropped` for a speculative spawn (docs/delivery.md "Speculative jobs"); null otherwise. */
    speculative: record.speculative ?? null,
    /** Its gated calls waiting for an answer (it stays `running`, holding no slot); null when none. */
    awaitingApproval: record.awaitingApproval ?? null,
    /** Its approvals answered so far (who, when, what); null when none. */
    approvals: record.approvals ?? null,
  };
}

export type JobView = ReturnType<typeof jobView>;

/**
 * A finished job as the CLI prints it (`run --json`'s `job_done`, each `fanout` line; README
 * documents the fields): derived from {@link jobView}, with ISO times, the answer as `result`
 * ("" when none), and the nesting fields only when they say something, as it always printed.
 */
export function jobJson(record: Readonly<JobRecord>): Record<string, unknown> {
  const view = jobView(record);
  return {
    id: view.id,
    label: view.label,
    ...(view.name !== null ? { name: view.name } : {}),
    agent: view.agent,
    ...(view.tools !== null ? { tools: view.tools } : {}),
    parentJobId: view.parentJobId,
    depth: view.depth,
    ...(view.parentToolId !== null ? { parentToolId: view.parentToolId } : {}),
    ...(view.branch !== null ? { branch: view.branch } : {}),
    ...(view.backgrounded ? { backgrounded: true } : {}),
    ...(view.children !== null ? { children: view.children, childrenOnEnd: view.childrenOnEnd } : {}),
    ...(view.treeUsage !== null ? { treeUsage: view.treeUsage } : {}),
    ...(view.approvals !== null ? { approvals: view.approvals } : {}),
    // Undefined, not null, where the record has none: the line leaves the field out.
    status: view.status ?? undefined,
    endedBy: view.endedBy ?? undefined,
    stopReason: view.stopReason ?? undefined,
    result: view.resultText ?? '',
    // A typed job's value; the line leaves it out for an untyped job.
    ...(record.data !== undefined ? { data: view.data } : {}),
    tag: view.tag,
    usage: view.usage,
    budget: view.budget,
    budgetExceeded: view.budgetExceeded,
    ...(view.deferredUntil !== null ? { deferredUntil: iso(view.deferredUntil), deferReason: view.deferReason } : {}),
    ...(view.sleepingUntil !== null ? { state: view.state, sleepingUntil: iso(view.sleepingUntil), sleepReason: view.sleepReason } : {}),
    attempts: view.attempts,
    notes: view.notes,
    queuedAt: iso(view.queuedAt),
    startedAt: iso(view.startedAt),
    endedAt: iso(view.endedAt),
    error: view.error,
  };
}

function iso(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}
