/**
 * The fanout's output: JSON lines on stdout and, on a terminal, one live status line on
 * stderr. The status line is erased before every stdout line and drawn again after it, so a
 * JSON line always starts at column 0 of an empty terminal line and is never overwritten or
 * clipped. Line wrapping is never switched off (a progress library that sends `ESC[?7l` to
 * stderr turns wrapping off for the whole terminal, stdout included); instead the status
 * line is cut to the terminal width so it never wraps.
 */

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
  /** The session budget left (`describePool`), when `sessionBudget` is set. */
  pool?: string;
}

/** The status line's text. */
export function statusText(c: FanoutCounts): string {
  const seconds = Math.max(0.001, (c.now - c.startedAt) / 1000);
  return `fanout: ${c.ended}/${c.read} done | failed ${c.failed} | running ${c.running} | queued ${c.queued} | ${(c.ended / seconds).toFixed(1)}/s | ${seconds.toFixed(0)}s${c.pool ? ` | ${c.pool}` : ''}`;
}
