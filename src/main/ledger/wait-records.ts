import type { ApprovalRecord, PendingApproval } from '../../shared/approvals.js';
import type { ApprovalWait, JobRecord, SleepWait } from './job-record.js';

// A job's pauses as record values: waiting for its children, for approvals or asleep, and the
// children's results it is handed or holds meanwhile. Plain functions from one record to the
// next; the ledger (ledger.ts) checks the transition and writes the result.

/** Its next run starts: a job resumed from a wait keeps its first start time; the wait is over. */
export function runningRecord(record: Readonly<JobRecord>, threadId: number | undefined, now: number): JobRecord {
  const { waitingForChildren: _waiting, approvalWait: _wait, sleepWait: _sleep, ...kept } = record;
  const startedAt = record.waitingForChildren || record.approvalWait || record.sleepWait ? (record.startedAt ?? now) : now;
  return { ...kept, state: 'running', attempts: record.attempts + 1, startedAt, ...(threadId === undefined ? {} : { threadId }) };
}

/** Its run ended: what it was handed and read is in its conversation; the rest is on its wait. */
function runOver(record: Readonly<JobRecord>): JobRecord {
  const { threadId: _thread, modelRuns: _modelRuns, handedResults: _read, ...rest } = record;
  return rest;
}

/** It answered with children running: queued until they end (no run of it was cut so far). */
export function waitingForChildrenRecord(record: Readonly<JobRecord>): JobRecord {
  return { ...runOver(record), state: 'queued', waitingForChildren: true };
}

/** Paused: these calls wait for approvals; it stays `running`, its thread and slot given back. */
export function awaitingApprovalRecord(record: Readonly<JobRecord>, pending: readonly PendingApproval[], wait: ApprovalWait): JobRecord {
  return { ...runOver(record), awaitingApproval: [...pending], approvalWait: wait };
}

/** One of its calls was answered: kept in its history; `wait` is what its next launch goes on with. */
export function approvalAnsweredRecord(
  record: Readonly<JobRecord>,
  answered: ApprovalRecord,
  pending: readonly PendingApproval[],
  wait: ApprovalWait,
): JobRecord {
  const { awaitingApproval: _pending, ...rest } = record;
  return {
    ...rest,
    ...(pending.length > 0 ? { awaitingApproval: [...pending] } : {}),
    approvals: [...(record.approvals ?? []), answered],
    approvalWait: wait,
  };
}

/** Asleep until `wait.at`; it stays `running`, its thread and slot given back. */
export function asleepRecord(record: Readonly<JobRecord>, wait: SleepWait): JobRecord {
  return { ...runOver(record), sleepWait: wait };
}

/** Children's results handed to its next run: all it carries, not only the new ones. */
export function handedResultsRecord(record: Readonly<JobRecord>, texts: readonly string[]): JobRecord {
  const { handedResults: _before, ...rest } = record;
  return texts.length > 0 ? { ...rest, handedResults: [...texts] } : rest;
}

/** Children's results held on its wait record (asleep, or paused for approvals); undefined: it waits for neither. */
export function heldResultsRecord(record: Readonly<JobRecord>, texts: readonly string[]): JobRecord | undefined {
  if (record.sleepWait) return { ...record, sleepWait: { ...record.sleepWait, childResults: [...texts] } };
  if (record.approvalWait) return { ...record, approvalWait: { ...record.approvalWait, childResults: [...texts] } };
  return undefined;
}

/**
 * Restarted while it waited (for its children, approvals, or its turn): queued to run from its
 * start, its wait and its last run's traces gone, as an ended job's restart drops its ending;
 * `refused`, its pending calls answered as void, stay in its approval history.
 */
export function restartedWaitRecord(record: Readonly<JobRecord>, note: string, refused: readonly ApprovalRecord[]): JobRecord {
  const {
    waitingForChildren: _children,
    awaitingApproval: _pending,
    approvalWait: _approval,
    sleepWait: _sleep,
    startedAt: _started,
    threadId: _thread,
    dispatched: _dispatched,
    modelRuns: _modelRuns,
    handedResults: _handed,
    ...rest
  } = record;
  const approvals = refused.length > 0 ? { approvals: [...(record.approvals ?? []), ...refused] } : {};
  return { ...rest, ...approvals, state: 'queued', usage: {}, iterations: 0, notes: [...record.notes, note] };
}
