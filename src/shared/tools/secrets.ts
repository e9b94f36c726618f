/**
 * Keeps secrets away from child processes and out of tool output. Pure functions; no state.
 */
import type { SerializedError } from '../errors.js';

/** Variable names that usually hold a secret. */
const SECRET_NAME = /KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE|_PWD$|^PGPASS/i;

/** Vendor prefixes whose variables are all dropped (endpoints, org ids and keys alike). */
const SECRET_PREFIXES = [
  'OPENAI_', 'ANTHROPIC_', 'AWS_', 'AZURE_', 'GOOGLE_', 'GCP_', 'GCLOUD_', 'GEMINI_', 'VERTEX_',
  'MISTRAL_', 'COHERE_', 'GROQ_', 'DEEPSEEK_', 'XAI_', 'OPENROUTER_', 'TOGETHER_', 'FIREWORKS_',
  'HF_', 'HUGGINGFACE_', 'REPLICATE_', 'PERPLEXITY_', 'FORKPOOL_', 'NPM_CONFIG__', 'DOCKER_',
  'GITHUB_', 'GH_', 'GITLAB_', 'VAULT_', 'SENTRY_', 'STRIPE_', 'SLACK_', 'TWILIO_', 'DIGITALOCEAN_',
];

/** A value with credentials embedded in a URL, e.g. `postgres://user:pass@host/db`. */
const URL_WITH_CREDENTIALS = /[a-z][a-z0-9+.-]*:\/\/[^/\s:@]+:[^/\s@]+@/i;

/** Secrets shorter than this are not redacted (too many false hits on ordinary text). */
const MIN_SECRET_LENGTH = 4;

/** True when an environment variable should not reach a child process. */
export function isSecretEnvName(name: string): boolean {
  const upper = name.toUpperCase();
  return SECRET_NAME.test(name) || SECRET_PREFIXES.some((p) => upper.startsWith(p));
}

/**
 * A copy of `env` without variables that look like secrets (by name, vendor prefix, or a
 * value holding URL credentials). Ordinary variables (`PATH`, `HOME`, `LANG`, ...) are kept.
 */
export function scrubEnv(env: NodeJS.ProcessEnv | Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) continue;
    if (isSecretEnvName(name) || URL_WITH_CREDENTIALS.test(value)) continue;
    out[name] = value;
  }
  return out;
}

/**
 * The values `scrubEnv` would remove, for {@link redactSecrets}. Only values of at least
 * `minLength` characters (default 8), so `AWS_REGION=us` does not redact every "us".
 */
export function secretValuesOf(env: NodeJS.ProcessEnv | Readonly<Record<string, string>>, minLength = 8): string[] {
  const values: string[] = [];
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined || value.length < minLength) continue;
    if (isSecretEnvName(name) || URL_WITH_CREDENTIALS.test(value)) values.push(value);
  }
  return values;
}

/** Replaces every occurrence of each secret (length >= 4) in `text` with `[REDACTED]`. */
export function redactSecrets(text: string, secrets: readonly string[]): string {
  // Longest first, so a secret that contains another is replaced whole.
  const sorted = [...new Set(secrets)].filter((s) => s.length >= MIN_SECRET_LENGTH).sort((a, b) => b.length - a.length);
  let out = text;
  for (const secret of sorted) {
    if (out.includes(secret)) out = out.split(secret).join('[REDACTED]');
  }
  return out;
}

/** A copy of a serialized error whose message, stack and causes have every secret replaced. */
export function redactError(error: SerializedError, secrets: readonly string[]): SerializedError {
  if (secrets.length === 0) return error;
  const out: SerializedError = { ...error, message: redactSecrets(error.message, secrets) };
  if (error.stack !== undefined) out.stack = redactSecrets(error.stack, secrets);
  if (error.cause !== undefined) out.cause = redactError(error.cause, secrets);
  return out;
}
