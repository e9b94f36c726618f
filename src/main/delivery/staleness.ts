import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import { open, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { STALE_CHECK_LIMITS } from '../../shared/fixed-limits.js';
import type { FileRead } from '../../shared/protocol.js';
import type { JobRecord } from '../ledger/ledger.js';
import { HASH_MAX_BYTES } from '../../shared/tools/file-reads.js';

/** A file a result rests on that is not what the job read any more. */
export interface StaleFile {
  path: string;
  change: 'modified' | 'deleted';
  /** How long after the job read it the file was last modified (modified files only). */
  changedAfterMs?: number;
  ranges: Array<[number, number]>;
}

/** Files named in a stale note; the rest are counted. */
const NOTE_MAX_FILES = 5;

export type StaleCheckLimits = { readonly [K in keyof typeof STALE_CHECK_LIMITS]: number };

/**
 * Stale-on-arrival: each file the jobs read is checked against the workspace as it is now. Same
 * size and modification time: unchanged (no read). Otherwise the content is hashed and compared
 * with what the job saw, so a file only touched is not stale. Asynchronous and bounded, because
 * it runs on the main thread at every turn boundary, beside every running job's events: at most
 * `concurrency` files at once, at most `hashBytes` hashed in all (past it, a changed size or
 * time counts as modified), each file read in chunks, never whole into memory.
 * Stale files by job id, in each job's order of reads; a job with none maps to [].
 */
export async function staleFilesByJob(
  jobs: ReadonlyArray<Pick<JobRecord, 'id' | 'reads'>>,
  workspaceRoot: string,
  limits: StaleCheckLimits = STALE_CHECK_LIMITS,
): Promise<Map<string, StaleFile[]>> {
  const checks = jobs.flatMap((job) => (job.reads ?? []).map((read) => ({ job: job.id, read })));
  const found: Array<StaleFile | undefined> = [];
  if (checks.length > 0) {
    const root = await realpath(workspaceRoot).catch(() => workspaceRoot);
    let budget = limits.hashBytes;
    const take = (bytes: number) => (bytes <= budget ? ((budget -= bytes), true) : false);
    let next = 0;
    const worker = async () => {
      for (let i = next++; i < checks.length; i = next++) found[i] = await checkRead(root, (checks[i] as (typeof checks)[number]).read, take);
    };
    await Promise.all(Array.from({ length: Math.min(Math.max(1, limits.concurrency), checks.length) }, worker));
  }
  const out = new Map(jobs.map((job) => [job.id, [] as StaleFile[]]));
  checks.forEach(({ job }, i) => {
    const stale = found[i];
    if (stale) out.get(job)?.push(stale);
  });
  return out;
}

async function checkRead(root: string, read: FileRead, takeBudget: (bytes: number) => boolean): Promise<StaleFile | undefined> {
  const abs = path.resolve(root, read.path);
  const info = await stat(abs).catch(() => undefined);
  if (!info || !info.isFile()) return { path: read.path, change: 'deleted', ranges: read.ranges };
  if (info.size === read.size && info.mtimeMs === read.mtimeMs) return undefined;
  if (read.sha256 !== '' && info.size <= HASH_MAX_BYTES && takeBudget(info.size) && (await sameContent(abs, read.sha256))) return undefined;
  return { path: read.path, change: 'modified', changedAfterMs: Math.max(0, info.mtimeMs - read.readAt), ranges: read.ranges };
}

/**
 * Hashes the file in chunks. Opened non-blocking and checked on the opened descriptor: a file
 * swapped for a FIFO after the stat above neither blocks a thread of the pool nor is read.
 */
async function sameContent(abs: string, sha256: string): Promise<boolean> {
  let handle;
  try {
    handle = await open(abs, constants.O_RDONLY | constants.O_NONBLOCK);
    const info = await handle.stat();
    if (!info.isFile() || info.size > HASH_MAX_BYTES) return false;
    const hash = createHash('sha256');
    const chunk = Buffer.allocUnsafe(1024 * 1024);
    // At most its size and one chunk more: a file that grows meanwhile costs no more (and differs anyway).
    for (let total = 0; total <= info.size;) {
      const { bytesRead } = await handle.read(chunk, 0, chunk.length, null);
      if (bytesRead === 0) break;
      hash.update(chunk.subarray(0, bytesRead));
      total += bytesRead;
    }
    return hash.digest('hex') === sha256;
  } catch {
    return false;
  } finally {
    await handle?.close().catch(() => {});
  }
}

/**
 * The line a delivered block carries for a stale result (forkpool's own words, not quoted):
 * which files changed, how long after the job read them, and which lines it had read.
 */
export function staleNote(files: readonly StaleFile[], rerun: 'rerun-once-already' | 'annotate'): string {
  const named = files.slice(0, NOTE_MAX_FILES).map(describe);
  const more = files.length > NOTE_MAX_FILES ? `; and ${files.length - NOTE_MAX_FILES} more file(s)` : '';
  const after = rerun === 'rerun-once-already' ? ' It was already re-run once because of this.' : '';
  return `[stale: this result rests on files changed since the job read them: ${named.join('; ')}${more}. Check them before relying on it.${after}]`;
}

function describe(file: StaleFile): string {
  const shown = file.path.replace(/[\r\n\t[\]<>"]+/g, ' ').slice(0, 200);
  const lines = file.ranges.length > 0 ? ` (it read lines ${file.ranges.map(([a, b]) => (a === b ? `${a}` : `${a}-${b}`)).join(', ')})` : '';
  if (file.change === 'deleted') return `${shown}${lines} was deleted or is no longer a file`;
  return `${shown}${lines} modified ${((file.changedAfterMs ?? 0) / 1000).toFixed(1)} s after the job read it`;
}

/**
 * The lines a turn's input carries for results re-run instead of delivered (`staleResults:
 * "rerun"`), so the parent knows they are coming: each job once, by id and label.
 */
export function formatRerunning(jobs: readonly Pick<JobRecord, 'id' | 'label'>[]): string {
  if (jobs.length === 0) return '';
  const lines = ['[Re-running: files these results rest on changed before they were delivered; each new result comes in a later turn, once]'];
  for (const job of jobs) lines.push(`- job ${job.id} "${job.label.replace(/[\r\n\t"<>[\]]+/g, ' ').slice(0, 80)}"`);
  return lines.join('\n');
}
