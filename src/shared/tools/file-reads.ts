import { createHash } from 'node:crypto';
import type { FileHandle } from 'node:fs/promises';
import { readSync, type Stats } from 'node:fs';

/**
 * A file a job read (read_file, or grep where it read the whole file): what it saw, for the
 * stale-on-arrival check at delivery. Plain data; kept in the job's record.
 */
export interface FileRead {
  /** Workspace-relative, "/"-separated. */
  path: string;
  /** SHA-256 (hex) of the whole file as the job read it; "" when too large to hash (size and mtime then decide). */
  sha256: string;
  size: number;
  mtimeMs: number;
  /** When the job (last) read it, epoch ms. */
  readAt: number;
  /** 1-based inclusive line ranges it was shown; empty: the whole file. */
  ranges: Array<[number, number]>;
}

/** Files hashed past this size are recorded by size and modification time only (hash ""). */
export const HASH_MAX_BYTES = 32 * 1024 * 1024;
/** Files one job records; past it, further reads are not recorded (the result says so). */
export const MAX_RECORDED_READS = 200;
const CHUNK_BYTES = 256 * 1024;

/**
 * What a job read, for the stale-on-arrival check on the main thread: each file once, with
 * the content hash of what it saw last, and the line ranges it read. Per job, never shared.
 */
export class FileReadLog {
  readonly #reads = new Map<string, FileRead>();
  #overflow = 0;

  /**
   * Records a file the tool has open. `lines`: the 1-based inclusive range shown; absent: the
   * whole file (grep read it all). The hash comes from the open handle (positional reads, so
   * the tool's own reading is not disturbed): what the job saw, not what a path points to now.
   */
  async record(handle: FileHandle, stats: Stats, shownPath: string, lines?: [number, number], now = Date.now()): Promise<void> {
    if (this.#full(shownPath)) return;
    this.recordHashed(await hashHandle(handle, stats.size), stats, shownPath, lines, now);
  }

  /** {@link record} for a file open as a raw descriptor (grep's small files), with blocking reads. */
  recordSync(fd: number, stats: Stats, shownPath: string): void {
    if (this.#full(shownPath)) return;
    this.recordHashed(hashFdSync(fd, stats.size), stats, shownPath);
  }

  /**
   * Records a file whose content hash the tool computed from the very bytes it read (grep hashes
   * each chunk as it searches it: no second read). `stats` must be from before that read, so a
   * change during the read shows as a new modification time and the delivery check compares hashes.
   */
  recordHashed(sha256: string, stats: Pick<Stats, 'size' | 'mtimeMs'>, shownPath: string, lines?: [number, number], now = Date.now()): void {
    if (this.#full(shownPath)) return;
    const known = this.#reads.get(shownPath);
    // Ranges add up while the content stays the same; a changed file starts over.
    const same = known !== undefined && known.sha256 === sha256;
    let ranges: Array<[number, number]>;
    if (!lines || (same && known.ranges.length === 0))
      ranges = []; // the whole file
    else ranges = mergeRanges([...(same ? known.ranges : []), lines]);
    this.#reads.set(shownPath, { path: shownPath, sha256, size: stats.size, mtimeMs: stats.mtimeMs, readAt: now, ranges });
  }

  /** True (and counted) when `shownPath` is new and the log is full. */
  #full(shownPath: string): boolean {
    if (this.#reads.has(shownPath) || this.#reads.size < MAX_RECORDED_READS) return false;
    this.#overflow++;
    return true;
  }

  /** Plain data for the `done` message. */
  entries(): FileRead[] {
    return [...this.#reads.values()];
  }

  /** Reads past {@link MAX_RECORDED_READS} that were not recorded. */
  get overflow(): number {
    return this.#overflow;
  }
}

async function hashHandle(handle: FileHandle, size: number): Promise<string> {
  if (size > HASH_MAX_BYTES) return '';
  const hash = createHash('sha256');
  const buffer = Buffer.allocUnsafe(Math.min(CHUNK_BYTES, Math.max(size, 1)));
  for (let position = 0; ;) {
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, position);
    if (bytesRead === 0) break;
    hash.update(buffer.subarray(0, bytesRead));
    position += bytesRead;
  }
  return hash.digest('hex');
}

function hashFdSync(fd: number, size: number): string {
  if (size > HASH_MAX_BYTES) return '';
  const hash = createHash('sha256');
  const buffer = Buffer.allocUnsafe(Math.min(CHUNK_BYTES, Math.max(size, 1)));
  for (let position = 0; ;) {
    const bytesRead = readSync(fd, buffer, 0, buffer.length, position);
    if (bytesRead === 0) break;
    hash.update(buffer.subarray(0, bytesRead));
    position += bytesRead;
  }
  return hash.digest('hex');
}

/** Sorted, overlapping or touching ranges joined. */
export function mergeRanges(ranges: ReadonlyArray<[number, number]>): Array<[number, number]> {
  const sorted = [...ranges].sort((a, b) => a[0] - b[0]);
  const out: Array<[number, number]> = [];
  for (const [from, to] of sorted) {
    const last = out.at(-1);
    if (last && from <= last[1] + 1) last[1] = Math.max(last[1], to);
    else out.push([from, to]);
  }
  return out;
}
