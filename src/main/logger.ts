import pino, { type Logger } from 'pino';
import pretty from 'pino-pretty';
import { redactSecrets } from '../shared/tools/secrets.js';

export type LogLevel = 'silent' | 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';
export const LOG_LEVELS: readonly LogLevel[] = ['silent', 'fatal', 'error', 'warn', 'info', 'debug', 'trace'];

export interface LoggerOptions {
  level: LogLevel;
  /** Literal secrets (API keys) scrubbed from every line before it is written. */
  secrets: readonly string[];
  /** Human-readable lines; defaults to whether stderr is a terminal. */
  pretty?: boolean;
  destination?: NodeJS.WritableStream;
}

const REDACT_PATHS = ['apiKey', '*.apiKey', 'config.apiKey', '*.config.apiKey', 'headers.authorization', '*.headers.authorization'];

/**
 * pino to stderr: pretty on a terminal, JSON otherwise. API keys are removed twice: by field
 * (`redact`) and by value, on the final line, so a key inside a message or an error is caught too.
 */
export function createLogger(options: LoggerOptions): Logger {
  const secrets = options.secrets.filter((s) => s.length >= 4);
  const usePretty = options.pretty ?? Boolean(process.stderr.isTTY);
  const destination =
    options.destination ??
    (usePretty ? pretty({ destination: 2, sync: true, colorize: true, ignore: 'pid,hostname' }) : pino.destination({ dest: 2, sync: true }));
  return pino(
    {
      level: options.level,
      base: null,
      redact: { paths: REDACT_PATHS, censor: '[REDACTED]' },
      hooks: {
        streamWrite: (line: string) => redactSecrets(line, secrets),
      },
    },
    destination,
  );
}
