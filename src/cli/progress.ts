/**
 * The fanout's output: JSON lines on stdout and, on a terminal, one live status line on
 * stderr. The status line is erased before every stdout line and drawn again after it, so a
 * JSON line always starts at column 0 of an empty terminal line and is never overwritten or
 * clipped. Line wrapping is never switched off (a progress library that sends `ESC[?7l` to
 * stderr turns wrapping off for the whole terminal, stdout included); instead the status
 * line is cut to the terminal width so it never wraps.
 */

import { createReadStream, statSync } from 'node:fs';

/** The part of a stream the output needs; tests pass fakes. */
export interface TextSink {
  write(text: string): unknown;
  isTTY?: boolean;
  columns?: number;
}

/** Carriage return + erase the whole line (CSI 2 K). */
const ERASE_LINE = '\r\u001b[2K';

export class FanoutOutput {
  readonly #stdout: TextSink;
  readonly #stderr: TextSink;
  /** The status line as last drawn, or undefined when none is showing. */
  #status: string | undefined;
  readonly #live: boolean;
  #stdoutClosed = false;

  /** `live`: draw the status line (only sensible when stderr is a terminal). */
  constructor(stdout: TextSink, stderr: TextSink, live: boolean) {
    this.#stdout = stdout;
    this.#stderr = stderr;
    this.#live = live;
  }

  get live(): boolean {
    return this.#live;
  }

  /** The reader of stdout went away (EPIPE): results are dropped from now on. */
  stdoutClosed(): void {
    this.#stdoutClosed = true;
  }

  /** One complete line on stdout (a JSON record); the status line is erased first. */
  result(line: string): void {
    if (this.#stdoutClosed) return;
    this.#erase();
    this.#stdout.write(`${line}\n`);
    this.#redraw();
  }

  /** One message line on stderr, above the status line. */
  note(line: string): void {
    this.#erase();
    this.#stderr.write(`${line}\n`);
    this.#redraw();
  }

  /** Replaces the status line (no-op unless live). */
  status(text: string): void {
    if (!this.#live) return;
    // A pty without a window size reports 0 columns.
    const width = Math.max(10, (this.#stderr.columns || 80) - 1);
    this.#status = text.length > width ? `${text.slice(0, width - 1)}…` : text;
    this.#stderr.write(`${ERASE_LINE}${this.#status}`);
  }

  /** Erases the status line for good (before the summary). */
  stop(): void {
    this.#erase();
    this.#status = undefined;
  }

  #erase(): void {
    if (this.#live && this.#status !== undefined) this.#stderr.write(ERASE_LINE);
  }

  #redraw(): void {
    if (this.#live && this.#status !== undefined) this.#stderr.write(this.#status);
  }
}

export interface FanoutCounts {
  read: number;
  ended: number;
  failed: number;
  running: number;
  queued: number;
  startedAt: number;
  now: number;
  /** Tasks in the input (its non-blank lines), when it is a file; unknown for a stream. */
  total?: number;
  /** Lines dealt with: ended, refused, invalid, or found finished in the ledger. */
  handled?: number;
  /** The session budget left (`describePool`), when `sessionBudget` is set. */
  pool?: string;
}

const BAR_WIDTH = 20;

/** `1h02m`, `3m05s`, `42s`. */
export function formatDuration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s >= 3600) return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
  if (s >= 60) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${s}s`;
}

/**
 * The status line's text. With a known total: a bar, the share done, the rate and an ETA
 * (from the rate so far, once something has ended); for a stream, the counts "so far".
 */
export function statusText(c: FanoutCounts): string {
  const seconds = Math.max(0.001, (c.now - c.startedAt) / 1000);
  const rate = c.ended / seconds;
  const tail = `failed ${c.failed} | running ${c.running} | queued ${c.queued} | ${rate.toFixed(1)}/s`;
  const pool = c.pool ? ` | ${c.pool}` : '';
  if (c.total === undefined) return `fanout: ${c.ended} done so far (${c.read} read) | ${tail} | ${formatDuration(seconds)}${pool}`;
  const handled = Math.min(c.handled ?? c.ended, c.total);
  const share = c.total === 0 ? 1 : handled / c.total;
  const filled = Math.round(share * BAR_WIDTH);
  const bar = `${'█'.repeat(filled)}${'░'.repeat(BAR_WIDTH - filled)}`;
  const left = c.total - handled;
  const eta = left === 0 ? 'done' : rate > 0 ? `ETA ${formatDuration(left / rate)}` : 'ETA …';
  return `fanout: ${bar} ${Math.floor(share * 100)}% ${handled}/${c.total} | ${tail} | ${eta} | ${formatDuration(seconds)}${pool}`;
}

/**
 * The tasks in a fanout input file: its non-blank lines (what the fan-out runs, or reports as
 * invalid), counted by streaming it once. `undefined` for stdin, a pipe, or a file that cannot
 * be read: their total is not known in advance.
 */
export async function countTaskLines(file: string): Promise<number | undefined> {
  if (file === '-') return undefined;
  try {
    if (!statSync(file).isFile()) return undefined;
    let count = 0;
    let blank = true;
    for await (const chunk of createReadStream(file) as AsyncIterable<Buffer>) {
      for (const byte of chunk) {
        if (byte === 0x0a) {
          if (!blank) count++;
          blank = true;
        } else if (blank && byte !== 0x20 && byte !== 0x09 && byte !== 0x0d) blank = false;
      }
    }
    return blank ? count : count + 1;
  } catch {
    return undefined;
  }
}
