import { Writable } from 'node:stream';
import type { Logger } from 'pino';
import { createLogger, type LogLevel } from '../../src/main/setup/logger.js';

/** A real pino logger (JSON lines) whose lines are kept in memory; `messages()` reads each line's `msg`. */
export function capturedLogger(options: { level?: LogLevel; secrets?: string[] } = {}): { logger: Logger; lines: string[]; messages: () => string[] } {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer | string, _encoding, done) {
      lines.push(...String(chunk).split('\n').filter(Boolean));
      done();
    },
  });
  const logger = createLogger({ level: options.level ?? 'info', secrets: options.secrets ?? [], pretty: false, destination });
  return { logger, lines, messages: () => lines.map((line) => (JSON.parse(line) as { msg: string }).msg) };
}
