/**
 * One palette for a job's state, wherever the chat shows a job (the transcript's job lines, the
 * background panel's rows). Colour only adds to the text: every line still says its state in
 * words (`queued`, `running`, `ok`, `partial`, `failed`, `cancelled`, `timed_out`, `deferred`), so a
 * terminal without colour (NO_COLOR, a pipe) loses nothing.
 */
import type { JobRecord } from '../main/ledger/ledger.js';
import type { JobStatus } from '../main/ledger/job-record.js';

/** What a job's colour follows: its state while live, its status once ended. */
export type JobColorState = 'queued' | 'running' | JobStatus;

export const STATE_COLOR: Readonly<Record<JobColorState, string>> = {
  queued: 'blue',
  running: 'cyan',
  ok: 'green',
  partial: 'yellow',
  failed: 'red',
  error: 'red',
  cancelled: 'gray',
  timed_out: 'magenta',
  deferred: 'blue',
};

/** The job's colour state: a job waiting for its children counts as running (it has not ended). */
export function jobColorState(job: Pick<Readonly<JobRecord>, 'state' | 'status' | 'waitingForChildren'>): JobColorState {
  if (job.state === 'ended') return job.status ?? 'failed';
  return job.state === 'running' || job.waitingForChildren ? 'running' : 'queued';
}

export function jobColor(job: Pick<Readonly<JobRecord>, 'state' | 'status' | 'waitingForChildren'>): string {
  return STATE_COLOR[jobColorState(job)];
}
