import { readSync } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { StringDecoder } from 'node:string_decoder';
import { steppedDeadline, type SteppedDeadline } from '../abort.js';
import { TIMINGS } from '../fixed-limits.js';
import { AbortError, ToolError } from '../errors.js';
import { capHeadTail } from '../text-budget.js';
import type { ToolLimits } from '../config.js';

/** Helpers shared by the file tools. Pure; every resource opened here is closed here. */

/** Directories the search tools skip unless the search starts inside one. */
export const IGNORED_DIRS: readonly string[] = ['node_modules', '.git', 'dist'];

/** Bytes inspected for a NUL byte to call a file binary. */
export const BINARY_SNIFF_BYTES = 8192;

/** Read chunk size for streaming files. */
const CHUNK_BYTES = 64 * 1024;

/** Caps a tool's output to `limits.outputMaxChars`, keeping head and tail. */
export function capOutput(text: string, limits: Pick<ToolLimits, 'outputMaxChars'>): string {
  return capHeadTail(text, limits.outputMaxChars);
}

/** Throws an {@link AbortError} carrying the signal's reason when it has fired. */
export function throwIfAborted(signal: AbortSignal): void {
  if (signal.aborted) throw new AbortError(signal.reason);
}

export function hasNulByte(buffer: Uint8Array, length = buffer.length): boolean {
  const end = Math.min(length, BINARY_SNIFF_BYTES);
  for (let i = 0; i < end; i++) if (buffer[i] === 0) return true;
  return false;
}

export interface LineReadOptions {
  /** Characters kept per line; the rest of a longer line is dropped and flagged. */
  maxLineChars: number;
  /** Stop reading after this many bytes (guards against a file that grows while read). */
  maxBytes?: number;
  /** Report `binary` and read nothing more when the first 8 KiB hold a NUL byte. */
  detectBinary?: boolean;
  /**
   * Stop at the first NUL byte anywhere (`stoppedBy: 'nul'`, `nulAt` its offset): binary data
   * or a sparse file's hole follows, and a hole of zeros is one endless line that would
   * otherwise be read to its end (100 GB of it in a sparse file).
   */
  stopAtNul?: boolean;
  signal?: AbortSignal;
  /** Gets every chunk's bytes as read (a NUL's tail included), before its lines: grep hashes them. */
  onChunk?: (bytes: Buffer) => void;
}

export interface LineReadResult {
  binary: boolean;
  /** Lines passed to `onLine`. */
  lines: number;
  /** `onLine` returned `false`, or `maxBytes` was reached, before the end of the file. */
  stopped: boolean;
  /** Why it stopped early: the callback, `maxBytes`, or a NUL byte (`stopAtNul`). */
  stoppedBy?: 'caller' | 'maxBytes' | 'nul';
  /** With `stoppedBy: 'nul'`: the NUL byte's offset from where reading began. */
  nulAt?: number;
}

/**
 * Streams a UTF-8 file line by line in 64 KiB chunks: memory stays bounded by the chunk and
 * `maxLineChars`, whatever the file size. `onLine(text, lineNumber, cut)` gets 1-based line
 * numbers, without the line ending; returning `false` stops the read. Reads from the
 * handle's current position; the caller owns (and closes) the handle.
 */
export async function readLines(
  handle: FileHandle,
  options: LineReadOptions,
  onLine: (text: string, lineNumber: number, cut: boolean) => boolean | void,
): Promise<LineReadResult> {
  const buffer = Buffer.allocUnsafe(CHUNK_BYTES);
  const lines = lineSplitter(options, onLine);
  for (;;) {
    if (options.signal?.aborted) throw new AbortError(options.signal.reason);
    const { bytesRead: got } = await handle.read(buffer, 0, CHUNK_BYTES, null);
    const result = got === 0 ? lines.end() : lines.chunk(buffer, got);
    if (result) return result;
  }
}

/**
 * {@link readLines} over a raw descriptor with blocking reads, for small files (grep reads files
 * of a few KiB this way: one `readSync` costs microseconds, a round trip through libuv's pool far
 * more). The same chunks, limits and results; the caller owns (and closes) the descriptor.
 */
export function readLinesSync(
  fd: number,
  options: LineReadOptions,
  onLine: (text: string, lineNumber: number, cut: boolean) => boolean | void,
): LineReadResult {
  const buffer = Buffer.allocUnsafe(CHUNK_BYTES);
  const lines = lineSplitter(options, onLine);
  for (;;) {
    if (options.signal?.aborted) throw new AbortError(options.signal.reason);
    const got = readSync(fd, buffer, 0, CHUNK_BYTES, null);
    const result = got === 0 ? lines.end() : lines.chunk(buffer, got);
    if (result) return result;
  }
}

/** The line splitting of {@link readLines}, fed one chunk at a time: a result once reading should stop. */
function lineSplitter(
  options: LineReadOptions,
  onLine: (text: string, lineNumber: number, cut: boolean) => boolean | void,
): { chunk(buffer: Buffer, got: number): LineReadResult | undefined; end(): LineReadResult } {
  const decoder = new StringDecoder('utf8');
  let current = '';
  let cut = false;
  let pending = false; // bytes seen since the last newline
  let lineNumber = 0;
  let bytesRead = 0;
  let first = true;
  const emit = (): boolean => {
    lineNumber++;
    const text = current.endsWith('\r') ? current.slice(0, -1) : current;
    const keepGoing = onLine(text, lineNumber, cut) !== false;
    current = '';
    cut = false;
    pending = false;
    return keepGoing;
  };
  const chunk = (buffer: Buffer, got: number): LineReadResult | undefined => {
    if (first && options.detectBinary && hasNulByte(buffer, got)) return { binary: true, lines: 0, stopped: true };
    first = false;
    options.onChunk?.(buffer.subarray(0, got));
    const nul = options.stopAtNul ? buffer.subarray(0, got).indexOf(0) : -1;
    const n = nul === -1 ? got : nul;
    bytesRead += n;
    const text = decoder.write(buffer.subarray(0, n));
    let start = 0;
    while (start < text.length) {
      const nl = text.indexOf('\n', start);
      const end = nl === -1 ? text.length : nl;
      if (end > start) {
        pending = true;
        const room = options.maxLineChars - current.length;
        if (room >= end - start) current += text.slice(start, end);
        else {
          if (room > 0) current += text.slice(start, start + room);
          cut = true;
        }
      }
      if (nl === -1) break;
      pending = true;
      if (!emit()) return { binary: false, lines: lineNumber, stopped: true, stoppedBy: 'caller' };
      start = nl + 1;
    }
    if (nul !== -1) {
      // The text before the NUL is a line (or the start of one): shown, then nothing more.
      current += decoder.end();
      if ((pending || current.length > 0) && !emit()) return { binary: false, lines: lineNumber, stopped: true, stoppedBy: 'caller' };
      return { binary: false, lines: lineNumber, stopped: true, stoppedBy: 'nul', nulAt: bytesRead };
    }
    if (options.maxBytes !== undefined && bytesRead >= options.maxBytes) {
      if (pending) emit();
      return { binary: false, lines: lineNumber, stopped: true, stoppedBy: 'maxBytes' };
    }
    return undefined;
  };
  const end = (): LineReadResult => {
    current += decoder.end();
    if (pending || current.length > 0) emit();
    return { binary: false, lines: lineNumber, stopped: false };
  };
  return { chunk, end };
}

/** Reads at most `bytes` from the start of an open file (without moving its position). */
export async function readHead(handle: FileHandle, bytes = BINARY_SNIFF_BYTES): Promise<Buffer> {
  const buffer = Buffer.alloc(bytes);
  const { bytesRead } = await handle.read(buffer, 0, bytes, 0);
  return buffer.subarray(0, bytesRead);
}

/** `1 line` / `3 lines`; `many` for irregular plurals (`match` → `matches`). */
export function plural(n: number, word: string, many = `${word}s`): string {
  return `${n} ${n === 1 ? word : many}`;
}

/**
 * A search's time limit (grep, find_files: `searchTimeoutMs`). Its own work counts in full, a
 * wait for I/O or for the loop (other jobs on this thread) 20 ms at most (see steppedDeadline).
 * On expiry: "<tool> stopped after its N ms time limit (<soFar> so far); <hint>".
 */
export function searchDeadline(tool: string, limitMs: number, soFar: () => string, hint: string): SteppedDeadline {
  return steppedDeadline(
    limitMs,
    TIMINGS.searchWaitTickMs,
    () => new ToolError('TOOL_TIMEOUT', tool, `${tool} stopped after its ${limitMs} ms time limit (${soFar()} so far); ${hint}`),
  );
}
