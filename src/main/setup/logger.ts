import type { Logger } from 'pino';
import { createRequire } from 'node:module';
import { redactSecrets } from '../../shared/tools/secrets.js';
import { escapeForTerminal } from '../../shared/terminal-text.js';

export type LogLevel = 'silent' | 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';
export const LOG_LEVELS: readonly LogLevel[] = ['silent', 'fatal', 'error', 'warn', 'info', 'debug', 'trace'];

export interface LoggerOptions {
  level: LogLevel;
  /** Literal secrets (API keys) scrubbed from every line before it is written. */
  secrets: readonly string[];
  /** Human-readable lines; defaults to whether stderr is a terminal (the CLI: unless `--json`). */
  pretty?: boolean;
  destination?: NodeJS.WritableStream;
}

const REDACT_PATHS = ['apiKey', '*.apiKey', 'config.apiKey', '*.config.apiKey', 'headers.authorization', '*.headers.authorization'];

/**
 * pino to stderr: pretty on a terminal, JSON otherwise (unless `pretty` says). API keys are removed twice: by field
 * (`redact`) and by value, on the final line, so a key inside a message or an error is caught too.
 */
export function createLogger(options: LoggerOptions): Logger {
  const pino = loadPino();
  const secrets = options.secrets.filter((s) => s.length >= 4);
  const usePretty = options.pretty ?? Boolean(process.stderr.isTTY);
  const destination = usePretty
    ? loadPretty()({
        destination: options.destination ?? 2,
        sync: true,
        // Colours only for a terminal; a pipe or a file gets plain lines, one per message.
        colorize: options.destination === undefined && Boolean(process.stderr.isTTY),
        singleLine: !process.stderr.isTTY,
        ignore: 'pid,hostname',
      })
    : (options.destination ?? pino.destination({ dest: 2, sync: true }));
  return pino(
    {
      level: options.level,
      base: null,
      redact: { paths: REDACT_PATHS, censor: '[REDACTED]' },
      hooks: {
        // Logged text may be a model's (labels, errors): its controls are escaped in the JSON;
        // for the pretty form, which parses the JSON back, escaped once more so they print as text.
        streamWrite: (line: string) => {
          const json = escapeJsonForTerminal(redactSecrets(line, secrets));
          return usePretty ? showEscapes(json) : json;
        },
      },
    },
    destination,
  );
}

/** A JSON line with the unsafe characters JSON leaves raw (C1, U+2028/9, bidi) escaped. */
function escapeJsonForTerminal(line: string): string {
  // escapeForTerminal escapes the final newline too: keep it.
  const body = line.endsWith('\n') ? line.slice(0, -1) : line;
  return `${escapeForTerminal(body)}${body === line ? '' : '\n'}`;
}

/**
 * A JSON escape of a control character (`\u001b`, `\r`, `\b`, `\f`; not `\n` or `\t`, which
 * pretty lines may keep) turned into an escaped backslash, so that parsed back it reads as the
 * six characters `\u001b` instead of ESC. An even run of backslashes before it is a literal
 * backslash, not an escape, and is left alone.
 */
function showEscapes(json: string): string {
  return json.replace(
    /(?<!\\)((?:\\\\)*)\\(u(?:00[01][0-9a-fA-F]|007[fF]|00[89][0-9a-fA-F]|200[b-fB-F]|202[89a-eA-E]|206[0-9]|feff|FEFF)|[rbf])/g,
    (_m, even: string, escape: string) => `${even}\\\\${escape}`,
  );
}

/**
 * pino (and its ~10 packages), required on the first createLogger: `import 'forkpool'` does not
 * load it, and an embedder that passes its own logger, or none, never does (issue 19).
 */
function loadPino(): typeof import('pino') {
  return createRequire(import.meta.url)('pino') as typeof import('pino');
}

/** pino-pretty, required only when a terminal gets pretty lines: a library user's import never loads it. */
function loadPretty(): typeof import('pino-pretty') {
  return createRequire(import.meta.url)('pino-pretty') as typeof import('pino-pretty');
}
