/**
 * `GET /v1/jobs` over every manager the server holds: its own (session `null`) and each open
 * session's. Filters, sorts and pages on the server, so the page fetches one page of rows
 * however many jobs there are; the totals come from the ledgers' per-state counts, never from
 * the rows. A job is named across managers by its ref: its id for the server's own jobs,
 * `session/id` for a session's (see {@link jobRef}).
 */
import type { JobRecord, JobState, JobStatus } from '../main/ledger/job-record.js';
import type { BackgroundManager } from '../main/jobs/manager.js';
import { totalUsage } from '../shared/usage.js';
import { sleepingUntil } from '../main/views/job-view.js';
import type { JobProgress } from './job-view.js';

/** One manager and the session it belongs to (`null`: the server's own jobs). */
export interface JobSource {
  session: string | null;
  manager: BackgroundManager;
}

export const JOB_SORTS = ['spawn', 'state', 'duration', 'tokens'] as const;
export type JobSort = (typeof JOB_SORTS)[number];

/** What a running job with no slot waits for (`GET /v1/jobs?waiting=`; the page's status filter). */
export const JOB_WAITS = ['sleeping', 'approval'] as const;

export interface JobListQuery {
  state?: JobState | undefined;
  status?: JobStatus | undefined;
  waiting?: (typeof JOB_WAITS)[number] | undefined;
  /** The agent's name, exactly (case-insensitive). */
  agent?: string | undefined;
  /** A substring of the label, task, id, ref or name (case-insensitive). */
  q?: string | undefined;
  /** `server` for the server's own jobs, else a session id. */
  session?: string | undefined;
  sort: JobSort;
  order: 'asc' | 'desc';
  offset: number;
  limit: number;
}

export interface ListedJob {
  session: string | null;
  record: Readonly<JobRecord>;
}

/** The name of a job across managers: `id`, or `session/id` for a session's job. */
export function jobRef(session: string | null, id: string): string {
  return session === null ? id : `${session}/${id}`;
}

/** A ref back to its session and id (`s-1/bg-3` → `s-1`, `bg-3`; `bg-3` → the server's). */
export function parseJobRef(ref: string): { session: string | null; id: string } {
  const slash = ref.indexOf('/');
  return slash < 0 ? { session: null, id: ref } : { session: ref.slice(0, slash), id: ref.slice(slash + 1) };
}

const STATE_RANK: Record<JobState, number> = { queued: 0, running: 1, ended: 2 };

interface Row extends ListedJob {
  /** Spawn order across managers: queued time, then the manager's place, then the place in its ledger. */
  spawn: [number, number, number];
  key: number;
}

/**
 * The page of jobs the query asks for and how many match it. `progressOf` gives a running
 * job's live tokens (its record has them only once it ended), for the tokens sort.
 */
export function listJobs(
  sources: readonly JobSource[],
  query: JobListQuery,
  progressOf: (session: string | null, id: string) => JobProgress | undefined,
  now = Date.now(),
): { jobs: ListedJob[]; total: number } {
  const needle = query.q?.trim().toLowerCase() ?? '';
  const agent = query.agent?.trim().toLowerCase() ?? '';
  const rows: Row[] = [];
  sources.forEach(({ session, manager }, place) => {
    if (query.session !== undefined && query.session !== (session ?? 'server')) return;
    manager.jobs().forEach((record, position) => {
      if (query.state !== undefined && record.state !== query.state) return;
      if (query.status !== undefined && record.status !== query.status) return;
      if (query.waiting !== undefined && !waitsFor(record, query.waiting)) return;
      if (agent !== '' && (record.agent ?? '').toLowerCase() !== agent) return;
      if (needle !== '' && !matches(record, jobRef(session, record.id), needle)) return;
      rows.push({ session, record, spawn: [record.queuedAt, place, position], key: sortKey(query.sort, record, session, now, progressOf) });
    });
  });
  const bySpawn = (a: Row, b: Row) => a.spawn[0] - b.spawn[0] || a.spawn[1] - b.spawn[1] || a.spawn[2] - b.spawn[2];
  const sign = query.order === 'desc' ? -1 : 1;
  let ordered: Row[];
  if (query.sort === 'spawn') {
    ordered = nestUnderParents(rows.sort(bySpawn), sign);
  } else {
    // Ties keep spawn order, whichever way the key runs.
    ordered = rows.sort((a, b) => sign * (a.key - b.key) || bySpawn(a, b));
  }
  return { jobs: ordered.slice(query.offset, query.offset + query.limit).map(({ session, record }) => ({ session, record })), total: ordered.length };
}

function waitsFor(record: Readonly<JobRecord>, what: (typeof JOB_WAITS)[number]): boolean {
  return what === 'sleeping' ? sleepingUntil(record) !== null : record.state === 'running' && (record.awaitingApproval?.length ?? 0) > 0;
}

function matches(record: Readonly<JobRecord>, ref: string, needle: string): boolean {
  return [record.label, record.task, ref, record.name ?? ''].some((text) => text.toLowerCase().includes(needle));
}

function sortKey(
  sort: JobSort,
  record: Readonly<JobRecord>,
  session: string | null,
  now: number,
  progressOf: (session: string | null, id: string) => JobProgress | undefined,
): number {
  switch (sort) {
    case 'state':
      return STATE_RANK[record.state];
    case 'duration':
      return record.startedAt === undefined ? 0 : (record.endedAt ?? now) - record.startedAt;
    case 'tokens':
      return record.state === 'ended' ? totalUsage(record.usage).totalTokens : (progressOf(session, record.id)?.tokens ?? 0);
    case 'spawn':
      return 0;
  }
}

/**
 * Spawn order with each nested job right after its parent (and the parent's earlier children),
 * as the page draws a tree. A job whose parent is filtered out stands where it was spawned.
 * Descending reverses the top-level jobs; children stay in spawn order under their parent.
 */
function nestUnderParents(rows: Row[], sign: number): Row[] {
  const present = new Set(rows.map((r) => jobRef(r.session, r.record.id)));
  const children = new Map<string, Row[]>();
  const roots: Row[] = [];
  for (const row of rows) {
    const parent = row.record.parentJobId === undefined ? undefined : jobRef(row.session, row.record.parentJobId);
    if (parent === undefined || !present.has(parent)) {
      roots.push(row);
      continue;
    }
    const siblings = children.get(parent);
    if (siblings) siblings.push(row);
    else children.set(parent, [row]);
  }
  if (sign < 0) roots.reverse();
  const out: Row[] = [];
  const visit = (row: Row) => {
    out.push(row);
    for (const child of children.get(jobRef(row.session, row.record.id)) ?? []) visit(child);
  };
  roots.forEach(visit);
  return out;
}
