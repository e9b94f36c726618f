import { createReadStream, statSync } from 'node:fs';
import type { Readable } from 'node:stream';
import { FANOUT_LINE_MAX_BYTES } from '../shared/fixed-limits.js';
import { UsageError } from './exit.js';

/**
 * Opens the fanout's input: a file, or stdin for `-`. A missing file, a folder or an
 * unreadable file is a {@link UsageError} (exit 2, one line), not a raw ENOENT/EISDIR later.
 */
export function openInput(file: string, stdin: Readable = process.stdin): Readable {
  if (file === '-') return stdin;
  let isFolder: boolean;
  try {
    isFolder = statSync(file).isDirectory();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new UsageError(
      code === 'ENOENT' ? `input file ${JSON.stringify(file)} does not exist` : `cannot read input file ${JSON.stringify(file)} (${code ?? 'error'})`,
    );
  }
  // Pipes stay allowed: `forkpool fanout <(make-tasks)` reads a FIFO.
  if (isFolder) throw new UsageError(`input ${JSON.stringify(file)} is a folder, not a JSONL file`);
  // Bytes, not text: the reader counts a line's bytes to refuse an over-long one.
  return createReadStream(file);
}

/** Pause reading when this many lines, or this many bytes, are read but not yet taken. */
const BUFFERED_LINES_MAX = 64;
const BUFFERED_BYTES_MAX = 4 * 1024 * 1024;
const NEWLINE = 0x0a;

/** One input line: its text, or (over the byte cap) only how long it was. */
export type InputLine = { number: number; text: string } | { number: number; tooLong: true; bytes: number };

export interface LineReaderOptions {
  /** Bytes a line may have (newline not counted); default {@link FANOUT_LINE_MAX_BYTES}. */
  maxLineBytes?: number;
}

/**
 * Lines of a stream, pulled one at a time with {@link next}, numbered from 1. A line longer
 * than `maxLineBytes` is never held: its bytes are dropped as they arrive and it comes out as
 * `tooLong` with its length, so memory stays bounded whatever the input. Reading pauses while
 * the taker lags (more than {@link BUFFERED_LINES_MAX} lines or {@link BUFFERED_BYTES_MAX}
 * bytes buffered) and resumes as lines are taken, so a huge or endless input is never all in
 * memory and a slow consumer slows the producer (a pipe writer blocks). Lines end at LF; a CR
 * before it is dropped; text is UTF-8.
 */
export class LineReader {
  readonly #input: Readable;
  readonly #maxLineBytes: number;
  readonly #lines: InputLine[] = [];
  #bufferedBytes = 0;
  /** The line being read: its chunks so far, unless it is already too long. */
  #parts: Buffer[] = [];
  #partBytes = 0;
  #tooLong = false;
  #number = 0;
  #ended = false;
  #error: Error | undefined;
  #paused = false;
  #wake: (() => void) | undefined;

  constructor(input: Readable, options: LineReaderOptions = {}) {
    this.#input = input;
    this.#maxLineBytes = options.maxLineBytes ?? FANOUT_LINE_MAX_BYTES;
    input.on('data', (chunk: Buffer | string) => this.#onData(typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk));
    input.on('end', () => {
      if (this.#partBytes > 0 || this.#tooLong) this.#endLine();
      this.#ended = true;
      this.#notify();
    });
    input.on('error', (error: Error) => {
      this.#error ??= error;
      this.#ended = true;
      this.#notify();
    });
  }

  /** Lines read but not yet taken (for tests and the status line). */
  get buffered(): number {
    return this.#lines.length;
  }

  /** Bytes of the line being read that are held (at most `maxLineBytes` + 1; 0 once it is too long). */
  get heldLineBytes(): number {
    return this.#tooLong ? 0 : this.#partBytes;
  }

  /** The next line, or undefined at the end of the input (or after {@link close}). Rejects on a read error. */
  async next(): Promise<InputLine | undefined> {
    for (;;) {
      const line = this.#lines.shift();
      if (line !== undefined) {
        if ('text' in line) this.#bufferedBytes -= line.text.length;
        if (this.#paused && this.#lines.length < BUFFERED_LINES_MAX / 2 && this.#bufferedBytes < BUFFERED_BYTES_MAX / 2) {
          this.#paused = false;
          this.#input.resume();
        }
        return line;
      }
      if (this.#error) throw this.#error;
      if (this.#ended) return undefined;
      await new Promise<void>((resolve) => (this.#wake = resolve));
    }
  }

  /** Stops reading: buffered lines are dropped and {@link next} returns undefined. */
  close(): void {
    this.#ended = true;
    this.#lines.length = 0;
    this.#bufferedBytes = 0;
    this.#parts = [];
    // stdin is not ours to destroy; a file stream is.
    if (this.#input !== process.stdin) this.#input.destroy();
    else this.#input.pause();
    this.#notify();
  }

  #onData(chunk: Buffer): void {
    if (this.#ended) return;
    let start = 0;
    while (start < chunk.length) {
      const nl = chunk.indexOf(NEWLINE, start);
      this.#take(chunk.subarray(start, nl === -1 ? chunk.length : nl));
      if (nl === -1) break;
      this.#endLine();
      start = nl + 1;
    }
    if (!this.#paused && (this.#lines.length >= BUFFERED_LINES_MAX || this.#bufferedBytes >= BUFFERED_BYTES_MAX)) {
      this.#paused = true;
      this.#input.pause();
    }
    this.#notify();
  }

  /** Part of the current line: kept while it fits the cap, else counted and dropped. */
  #take(part: Buffer): void {
    if (part.length === 0) return;
    this.#partBytes += part.length;
    if (this.#tooLong) return;
    // One spare byte: a CR before the newline does not count against the cap.
    if (this.#partBytes > this.#maxLineBytes + 1) {
      this.#tooLong = true;
      this.#parts = [];
      return;
    }
    this.#parts.push(part);
  }

  #endLine(): void {
    this.#number++;
    const bytes = this.#partBytes;
    if (this.#tooLong) this.#lines.push({ number: this.#number, tooLong: true, bytes });
    else {
      let text = Buffer.concat(this.#parts, bytes).toString('utf8');
      if (text.endsWith('\r')) text = text.slice(0, -1);
      // A UTF-8 byte-order mark (Windows editors write one) belongs to the input, not its first line.
      if (this.#number === 1) text = text.replace(/^\uFEFF/, '');
      // The spare byte was for a CR only.
      if (Buffer.byteLength(text) > this.#maxLineBytes) this.#lines.push({ number: this.#number, tooLong: true, bytes });
      else {
        this.#lines.push({ number: this.#number, text });
        this.#bufferedBytes += text.length;
      }
    }
    this.#parts = [];
    this.#partBytes = 0;
    this.#tooLong = false;
  }

  #notify(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }
}
