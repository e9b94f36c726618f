import { createHash } from 'node:crypto';
import { readFileSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';
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

/**
 * Stale-on-arrival: each file a job read is checked against the workspace as it is now. Same
 * size and modification time: unchanged (no read). Otherwise the content is hashed and compared
 * with what the job saw, so a file only touched is not stale. Synchronous: it runs at a turn
 * boundary over the few files one result rests on.
 */
export function staleFiles(reads: readonly FileRead[], workspaceRoot: string): StaleFile[] {
  const root = realRoot(workspaceRoot);
  const out: StaleFile[] = [];
  for (const read of reads) {
    const abs = path.resolve(root, read.path);
    let stat;
    try {
      stat = statSync(abs, { throwIfNoEntry: false });
    } catch {
      stat = undefined;
    }
    if (!stat || !stat.isFile()) {
      out.push({ path: read.path, change: 'deleted', ranges: read.ranges });
      continue;
    }
    if (stat.size === read.size && stat.mtimeMs === read.mtimeMs) continue;
    if (read.sha256 !== '' && stat.size <= HASH_MAX_BYTES && sameContent(abs, read.sha256)) continue;
    out.push({ path: read.path, change: 'modified', changedAfterMs: Math.max(0, stat.mtimeMs - read.readAt), ranges: read.ranges });
  }
  return out;
}

function sameContent(abs: string, sha256: string): boolean {
  try {
    return createHash('sha256').update(readFileSync(abs)).digest('hex') === sha256;
  } catch {
    return false;
  }
}

function realRoot(root: string): string {
  try {
    return realpathSync(root);
  } catch {
    return root;
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
