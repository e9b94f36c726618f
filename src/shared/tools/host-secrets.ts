import { readFileSync } from 'node:fs';
import { configuredSecrets } from './secrets.js';

/**
 * The secrets of forkpool's own process environment, for redaction. A command run without a
 * sandbox (`sandbox: "none"`) can read the environment forkpool was started with at
 * `/proc/$PPID/environ`: the server token (`FORKPOOL_SERVER_TOKEN`), model keys, any password
 * the user exported. Scrubbing the command's own environment cannot hide that file, so every
 * credential in it is redacted from what the command returns, like a configured key.
 *
 * Stricter than `isSecretEnvName` (which decides what a child process may inherit): only names
 * that say "credential" count, and only values that look like one (8 characters or more, no
 * spaces, not a path). A vendor prefix alone (`OPENAI_BASE_URL`, `GITHUB_WORKSPACE`) does not:
 * redacting an endpoint or a folder would cut every URL or path that shares eight characters
 * with it out of the tools' output.
 */

const CREDENTIAL_NAME = /KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|COOKIE|PRIVATE|AUTH(?!_SOCK)|_PWD$|^PGPASS/i;
const MIN_LENGTH = 8;
/** `scheme://user:password@`: the password of a URL with credentials, whatever the variable's name. */
const URL_PASSWORD = /[a-z][a-z0-9+.-]*:\/\/[^/\s:@]+:([^/\s@]+)@/gi;

/** The credentials among `env`'s values (see above). */
export function environmentSecrets(env: Readonly<Record<string, string | undefined>>): string[] {
  const found = new Set<string>();
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) continue;
    if (CREDENTIAL_NAME.test(name) && value.length >= MIN_LENGTH && !/\s/.test(value) && !value.startsWith('/')) found.add(value);
    for (const match of value.matchAll(URL_PASSWORD)) {
      const password = safeDecode(match[1] as string);
      if (password.length >= MIN_LENGTH) found.add(password);
    }
  }
  return [...found];
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** The environment this process started with (`/proc/self/environ`: what `/proc/$PPID/environ` shows a child); empty without /proc. */
function startEnvironment(): Record<string, string> {
  const env: Record<string, string> = {};
  try {
    for (const entry of readFileSync('/proc/self/environ', 'utf8').split('\0')) {
      const eq = entry.indexOf('=');
      if (eq > 0) env[entry.slice(0, eq)] = entry.slice(eq + 1);
    }
  } catch {
    // Not Linux: a command has no such file to read either.
  }
  return env;
}

/** Read once per thread: the start environment never changes. */
let startSecrets: readonly string[] | undefined;

/**
 * Every credential of this process's environment: the one it started with (all threads see the
 * same file, even a worker thread whose `process.env` is a scrubbed copy) and `process.env` as it
 * is now (the host may have set a key since).
 */
export function hostSecrets(): string[] {
  startSecrets ??= environmentSecrets(startEnvironment());
  return [...new Set([...startSecrets, ...environmentSecrets(process.env)])];
}

/** Everything redaction must know: the config's keys ({@link configuredSecrets}) and the process environment's credentials. */
export function redactionSecrets(config: Parameters<typeof configuredSecrets>[0]): string[] {
  return [...new Set([...configuredSecrets(config), ...hostSecrets()])];
}
