/**
 * Keeps secrets away from child processes and out of tool output. Pure functions; no state.
 */
import type { SerializedError } from '../errors.js';
import { mcpSecrets, type McpServerConfig } from '../mcp-config.js';

/** Variable names that usually hold a secret. */
const SECRET_NAME = /KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE|_PWD$|^PGPASS/i;

/** Vendor prefixes whose variables are all dropped (endpoints, org ids and keys alike). */
const SECRET_PREFIXES = [
  'OPENAI_',
  'ANTHROPIC_',
  'AWS_',
  'AZURE_',
  'GOOGLE_',
  'GCP_',
  'GCLOUD_',
  'GEMINI_',
  'VERTEX_',
  'MISTRAL_',
  'COHERE_',
  'GROQ_',
  'DEEPSEEK_',
  'XAI_',
  'OPENROUTER_',
  'TOGETHER_',
  'FIREWORKS_',
  'HF_',
  'HUGGINGFACE_',
  'REPLICATE_',
  'PERPLEXITY_',
  'FORKPOOL_',
  'NPM_CONFIG__',
  'DOCKER_',
  'GITHUB_',
  'GH_',
  'GITLAB_',
  'VAULT_',
  'SENTRY_',
  'STRIPE_',
  'SLACK_',
  'TWILIO_',
  'DIGITALOCEAN_',
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

/**
 * Redaction's second line, for tool results (the first: hidden files, see hidden.ts). Beyond
 * {@link redactSecrets}, a secret of 8 or more characters is caught
 *
 * - in pieces: every run of text made of 8-character fragments of it, so a key cut by an
 *   excerpt or a head-and-tail cap (a prefix or suffix of 8 or more characters) is redacted;
 * - encoded: reversed, base64 (at each of the three byte alignments a longer encoded text can
 *   put it at; the URL-safe alphabet too), and hex (lower and upper case), whole or in pieces.
 *
 * Shorter pieces (up to 7 characters) and other encodings are not caught: commands that could
 * produce them run in a sandbox where the files holding keys are masked.
 */
export function redactToolOutput(text: string, secrets: readonly string[]): string {
  const literal = redactSecrets(text, secrets);
  const fragments = fragmentsOf(secrets);
  if (fragments.size === 0 || literal.length < FRAGMENT_LENGTH) return literal;
  // Mark every character covered by a known fragment, then replace each marked run once.
  const covered = new Uint8Array(literal.length);
  let any = false;
  for (let i = 0; i + FRAGMENT_LENGTH <= literal.length; i++) {
    if (!fragments.has(literal.slice(i, i + FRAGMENT_LENGTH))) continue;
    covered.fill(1, i, i + FRAGMENT_LENGTH);
    any = true;
  }
  if (!any) return literal;
  let out = '';
  for (let i = 0; i < literal.length;) {
    if (!covered[i]) {
      out += literal[i];
      i++;
      continue;
    }
    while (i < literal.length && covered[i]) i++;
    out += '[REDACTED]';
  }
  return out;
}

/** A prefix this long of a key is a real leak (docs/tools.md "What the tools cannot see"); shorter pieces are too common. */
const FRAGMENT_LENGTH = 8;
/** The fragment sets of the last few secret lists (a thread runs many jobs with the same keys). */
const fragmentCache = new Map<string, ReadonlySet<string>>();
const FRAGMENT_CACHE_SIZE = 16;

function fragmentsOf(secrets: readonly string[]): ReadonlySet<string> {
  const key = secrets.join('\0');
  const cached = fragmentCache.get(key);
  if (cached) return cached;
  const fragments = new Set<string>();
  for (const secret of secrets) {
    if (secret.length < FRAGMENT_LENGTH) continue;
    for (const form of encodedForms(secret)) {
      for (let i = 0; i + FRAGMENT_LENGTH <= form.length; i++) fragments.add(form.slice(i, i + FRAGMENT_LENGTH));
    }
  }
  if (fragmentCache.size >= FRAGMENT_CACHE_SIZE) fragmentCache.delete(fragmentCache.keys().next().value as string);
  fragmentCache.set(key, fragments);
  return fragments;
}

/** The secret as it may appear in a command's output: plain, reversed, base64 and hex. */
export function encodedForms(secret: string): string[] {
  const bytes = Buffer.from(secret, 'utf8');
  const forms = [secret, [...secret].reverse().join(''), bytes.toString('hex'), bytes.toString('hex').toUpperCase()];
  for (let offset = 0; offset < 3; offset++) {
    // Encoded after `offset` other bytes: keep only the characters that depend on the secret alone.
    const encoded = Buffer.concat([Buffer.alloc(offset), bytes]).toString('base64');
    const core = encoded.slice(Math.ceil((offset * 8) / 6), Math.floor(((offset + bytes.length) * 8) / 6));
    forms.push(core, core.replaceAll('+', '-').replaceAll('/', '_'));
  }
  return forms;
}

type McpServers = Readonly<Record<string, McpServerConfig>> | undefined;

/**
 * Every secret a config holds, for redaction: the model keys (the parent's and each agent's),
 * the password of the Redis URL, and the MCP servers' `env` and `headers` values.
 */
export function configuredSecrets(config: {
  apiKey?: string | undefined;
  agents?: Readonly<Record<string, { apiKey?: string | undefined; mcpServers?: McpServers }>>;
  redisUrl?: string | undefined;
  mcpServers?: McpServers;
}): string[] {
  const agents = Object.values(config.agents ?? {});
  const keys: (string | undefined)[] = [config.apiKey, ...agents.map((agent) => agent.apiKey)];
  keys.push(...mcpSecrets(config.mcpServers), ...agents.flatMap((agent) => mcpSecrets(agent.mcpServers)));
  if (config.redisUrl) {
    try {
      const url = new URL(config.redisUrl);
      keys.push(decodeURIComponent(url.password) || undefined);
    } catch {
      // Not a URL: the schema reports it.
    }
  }
  return [...new Set(keys.filter((key): key is string => typeof key === 'string' && key.length >= MIN_SECRET_LENGTH))];
}
