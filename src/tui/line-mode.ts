/**
 * `forkpool chat` without a terminal (piped stdin or stdout): one prompt or /command per input
 * line, plain lines out, like `run`. Answers and command output go to stdout, everything else
 * (jobs, deliveries, notices) to stderr; with `--json`, one JSON line per transcript entry.
 *
 * Lines keep their order: a prompt waits for the turn before it, and so does a /command after
 * it (`/bg list` after a prompt lists what that turn started). Control lines are the exception:
 * they act the moment they are read, even while a turn runs, so a program driving the chat over
 * stdin can steer and stop work mid-turn (see {@link isControlLine}).
 */
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import type { ChatController } from './controller.js';
import type { TranscriptEntry } from './transcript.js';

export interface LineModeIo {
  input: Readable;
  /** Answers and command output. */
  out: (line: string) => void;
  /** Everything else. */
  note: (line: string) => void;
  /** Set: every entry goes here instead (the `--json` form). */
  json?: (entry: TranscriptEntry) => void;
}

/**
 * `/bg stop|restart|send|interrupt|approve|deny …` and `/cancel`: what steers running work. An
 * answer to an approval must not wait for the turn: the turn may be waiting for that very job.
 */
const CONTROL_LINE = /^\/(?:cancel\b|bg\s+(?:stop|restart|send|interrupt|approve|deny)\b)/i;

/** A line that runs at once when read, not after the turns before it. */
export function isControlLine(line: string): boolean {
  return CONTROL_LINE.test(line.trim());
}

/** Reads lines until the input ends or `/quit`; then waits for jobs and follow-ups, and closes. */
export async function runLineMode(chat: ChatController, io: LineModeIo): Promise<void> {
  const stopPrinting = chat.on('entry', (entry) => {
    if (io.json) io.json(entry);
    else if (entry.kind === 'answer' || entry.kind === 'command') io.out(entry.text);
    else if (entry.kind !== 'user') io.note(entry.text);
  });
  const lines = createInterface({ input: io.input, crlfDelay: Infinity });
  // A /quit (or a signal) ends the reading too, even while the input stays open.
  const stopWatching = chat.on('change', () => chat.closing && lines.close());
  // The lines that keep their order, one after another: each waits for the turn it started.
  let inOrder: Promise<void> = Promise.resolve();
  try {
    for await (const line of lines) {
      if (chat.closing) break;
      if (isControlLine(line)) {
        chat.submitLine(line);
        continue;
      }
      inOrder = inOrder.then(() => submitInTurn(chat, line));
    }
    await inOrder;
    if (!chat.closing) await chat.session.onIdle();
    await chat.quit();
  } finally {
    stopWatching();
    lines.close();
    stopPrinting();
  }
}

/**
 * A line that keeps its order: it waits for the turn before it (the caller chains them) and for
 * a follow-up turn that started meanwhile, then is submitted; it is never refused as "busy" (the
 * terminal's Enter is: a person there sees the hint). Resolves when its turn or command has ended;
 * a line read as the chat closes is not run.
 */
async function submitInTurn(chat: ChatController, line: string): Promise<void> {
  while (chat.busy && !chat.closing) {
    await new Promise<void>((resolve) => {
      const stop = chat.on('change', () => (!chat.busy || chat.closing) && (stop(), resolve()));
    });
  }
  if (!chat.closing) await chat.submitLine(line).turn;
}
