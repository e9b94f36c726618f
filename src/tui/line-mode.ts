/**
 * `forkpool chat` without a terminal (piped stdin or stdout): one prompt or /command per input
 * line, plain lines out, like `run`. Answers and command output go to stdout, everything else
 * (jobs, deliveries, notices) to stderr; with `--json`, one JSON line per transcript entry.
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

/** Reads lines until the input ends or `/quit`; then waits for jobs and follow-ups, and closes. */
export async function runLineMode(chat: ChatController, io: LineModeIo): Promise<void> {
  const stopPrinting = chat.on('entry', (entry) => {
    if (io.json) io.json(entry);
    else if (entry.kind === 'answer' || entry.kind === 'command') io.out(entry.text);
    else if (entry.kind !== 'user') io.note(entry.text);
  });
  const lines = createInterface({ input: io.input, crlfDelay: Infinity });
  try {
    for await (const line of lines) {
      if (chat.closing) break;
      const result = chat.submitLine(line);
      // One turn at a time: the next line waits for this one's answer.
      await result.turn;
    }
    if (!chat.closing) await chat.session.onIdle();
    await chat.quit();
  } finally {
    lines.close();
    stopPrinting();
  }
}
