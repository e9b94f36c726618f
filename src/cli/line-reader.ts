import { createReadStream, statSync } from 'node:fs';
import { createInterface, type Interface } from 'node:readline';
import type { Readable } from 'node:stream';
import { UsageError } from './common.js';

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
    throw new UsageError(code === 'ENOENT' ? `input file ${JSON.stringify(file)} does not exist` : `cannot read input file ${JSON.stringify(file)} (${code ?? 'error'})`);
  }
  // Pipes stay allowed: `forkpool fanout <(make-tasks)` reads a FIFO.
  if (isFolder) throw new UsageError(`input ${JSON.stringify(file)} is a folder, not a JSONL file`);
  return createReadStream(file, { encoding: 'utf8' });
}

/** Pause reading when this many lines, or this many characters, are read but not yet taken. */
const BUFFERED_LINES_MAX = 64;
const BUFFERED_CHARS_MAX = 4 * 1024 * 1024;

/**
 * Lines of a stream, pulled one at a time with {@link next}. Reading pauses while the taker
 * lags (more than {@link BUFFERED_LINES_MAX} lines or {@link BUFFERED_CHARS_MAX} characters
 * buffered) and resumes as lines are taken, so a huge or endless input is never all in memory
 * and a slow consumer slows the producer (a pipe writer blocks).
 */
export class LineReader {
  readonly #rl: Interface;
  readonly #input: Readable;
  readonly #lines: string[] = [];
  #chars = 0;
  #ended = false;
  #error: Error | undefined;
  #paused = false;
  #wake: (() => void) | undefined;
  #first = true;

  constructor(input: Readable) {
    this.#input = input;
    this.#rl = createInterface({ input, crlfDelay: Infinity });
    this.#rl.on('line', (raw) => {
      if (this.#ended) return;
      // A UTF-8 byte-order mark (Windows editors write one) belongs to the input, not its first line.
      const line = this.#first ? raw.replace(/^\uFEFF/, '') : raw;
      this.#first = false;
      this.#lines.push(line);
      this.#chars += line.length;
      if (!this.#paused && (this.#lines.length >= BUFFERED_LINES_MAX || this.#chars >= BUFFERED_CHARS_MAX)) {
        this.#paused = true;
        this.#rl.pause();
      }
      this.#notify();
    });
    this.#rl.on('close', () => {
      this.#ended = true;
      this.#notify();
    });
    // readline re-emits its input's errors (and throws them if nobody listens on it).
    this.#rl.on('error', (error: Error) => {
      this.#error ??= error;
      this.#ended = true;
      this.#notify();
    });
  }

  /** Lines read but not yet taken (for tests and the status line). */
  get buffered(): number {
    return this.#lines.length;
  }

  /** The next line, or undefined at the end of the input (or after {@link close}). Rejects on a read error. */
  async next(): Promise<string | undefined> {
    for (;;) {
      const line = this.#lines.shift();
      if (line !== undefined) {
        this.#chars -= line.length;
        if (this.#paused && this.#lines.length < BUFFERED_LINES_MAX / 2 && this.#chars < BUFFERED_CHARS_MAX / 2) {
          this.#paused = false;
          this.#rl.resume();
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
    this.#chars = 0;
    this.#rl.close();
    // stdin is not ours to destroy; a file stream is.
    if (this.#input !== process.stdin) this.#input.destroy();
    else this.#input.pause();
    this.#notify();
  }

  #notify(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }
}
