/**
 * What a failed model request says to the person reading it: the cause (a refused port, a name
 * that does not resolve, a TLS error, a refused key, an unknown model), the request it was
 * (method and URL, never a key), and what to check. Pure: the model call (model-call.ts) feeds
 * it the error; every surface (run, chat, fanout, a job's record) shows the same sentence.
 */
import { withoutUrlCredentials } from './config.js';

/** The endpoint a request went to, as a person may see it: no credentials, no query (a key may sit in either). */
export function requestUrlForHumans(baseUrl: string, path: string): string {
  const url = `${baseUrl.replace(/\/+$/, '')}${path}`;
  return withoutUrlCredentials(url.split(/[?#]/)[0] ?? url);
}

/** `host:port` of a URL, for a one-line retry notice (`rate limited by api.openai.com, …`). */
export function endpointHost(baseUrl: string): string {
  try {
    return new URL(baseUrl).host;
  } catch {
    return 'the model endpoint';
  }
}

/** The system error under a connection failure (`node:http` gives it as the cause; fetch wraps it, sometimes in an AggregateError of one per address). */
interface SystemCause {
  code: string;
  message: string;
  address?: string;
  port?: number;
  hostname?: string;
}

function systemCause(error: unknown, depth = 0): SystemCause | undefined {
  if (!error || typeof error !== 'object' || depth > 6) return undefined;
  const e = error as { code?: unknown; message?: unknown; cause?: unknown; errors?: unknown };
  if (typeof e.code === 'string' && /^[A-Z][A-Z0-9_]+$/.test(e.code)) {
    const out: SystemCause = { code: e.code, message: typeof e.message === 'string' ? e.message : '' };
    const raw = error as { address?: unknown; port?: unknown; hostname?: unknown };
    if (typeof raw.address === 'string') out.address = raw.address;
    if (typeof raw.port === 'number') out.port = raw.port;
    if (typeof raw.hostname === 'string') out.hostname = raw.hostname;
    return out;
  }
  const nested = systemCause(e.cause, depth + 1);
  if (nested) return nested;
  if (Array.isArray(e.errors)) for (const inner of e.errors) return systemCause(inner, depth + 1);
  return undefined;
}

/** TLS failures have codes of their own (ERR_TLS_…, CERT_…, …_SELF_SIGNED_…, ERR_SSL_…). */
function isTlsCode(code: string): boolean {
  return /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_SELF_SIGNED|SELF_SIGNED_)/.test(code);
}

/**
 * `connection error: ECONNREFUSED 127.0.0.1:9 (POST http://127.0.0.1:9/v1/chat/completions) —
 * check --base-url / baseUrl`. `error` is the SDK's connection error (its cause chain holds the
 * system error); without a system code the SDK's own message stands in.
 */
export function describeConnectionError(error: unknown, method: string, url: string): string {
  const cause = systemCause(error);
  let what: string;
  if (!cause) what = rootMessage(error, url);
  else if (cause.code === 'ENOTFOUND' || cause.code === 'EAI_AGAIN') what = `${cause.code} ${cause.hostname ?? hostOf(url)} (the host name does not resolve)`;
  else if (cause.address !== undefined) what = `${cause.code} ${cause.address}${cause.port !== undefined ? `:${cause.port}` : ''}`;
  else if (isTlsCode(cause.code)) what = `TLS ${cause.code}${cause.message ? `: ${cause.message}` : ''}`;
  else what = `${cause.code}${cause.message && !cause.message.includes(cause.code) ? `: ${cause.message}` : ''}`;
  return `connection error: ${what} (${method} ${url}) — check --base-url / baseUrl`;
}

/**
 * The innermost message of a cause chain without a system code: fetch's own refusals ("bad
 * port": it never connects to ports such as 9 or 6000) say more than the SDK's "Connection error.".
 */
function rootMessage(error: unknown, url: string): string {
  let inner: unknown = error;
  for (let depth = 0; depth < 6 && inner instanceof Error && inner.cause instanceof Error; depth++) inner = inner.cause;
  const message = inner instanceof Error ? inner.message : String(inner);
  if (message === 'bad port') return `port ${portOf(url)} is one fetch never connects to (a blocked port): use another`;
  return message;
}

function portOf(url: string): string {
  try {
    const parsed = new URL(url);
    return parsed.port || (parsed.protocol === 'https:' ? '443' : '80');
  } catch {
    return '?';
  }
}

function hostOf(url: string): string {
  try {
    return new URL(url).hostname;
  } catch {
    return url;
  }
}

/** What the request was sent with, for the hint of a refused key or an unknown model. */
export interface RequestFacts {
  method: string;
  url: string;
  model: string;
  /** A key went with the request (`apiKey`, which `OPENAI_API_KEY` sets for the CLI). */
  keySent: boolean;
}

/** The hint after an HTTP error's status and body: which setting to check, for the statuses a new user meets first. */
export function httpErrorHint(status: number, facts: RequestFacts): string {
  const at = `${facts.method} ${facts.url}`;
  if (status === 401 || status === 403) {
    return facts.keySent
      ? ` (${at}) — the endpoint refused the API key: check OPENAI_API_KEY or the config's apiKey (an agent's own apiKey for its jobs)`
      : ` (${at}) — no API key was sent: set OPENAI_API_KEY or the config's apiKey`;
  }
  if (status === 404) return ` (${at}) — model "${facts.model}" or the endpoint was not found: check --model / model and --base-url / baseUrl`;
  return ` (${at})`;
}

/** A retry as one line for a person (stderr, the chat, the jobs page): `rate limited by host, retrying in 15 s (2/4)`. */
export function retryLine(event: { attempt: number; delayMs: number; reason: string; status?: number; host?: string; maxRetries?: number }): string {
  const seconds = event.delayMs >= 10_000 ? `${Math.round(event.delayMs / 1000)} s` : `${(event.delayMs / 1000).toFixed(1)} s`;
  const of = event.maxRetries !== undefined ? ` (${event.attempt}/${event.maxRetries})` : ` (retry ${event.attempt})`;
  const host = event.host ?? 'the model endpoint';
  const why =
    event.status === 429
      ? `rate limited by ${host}`
      : event.status === 503
        ? `${host} is overloaded (503)`
        : `model request to ${host} failed (${shortReason(event.reason, 160)})`;
  return `${why}, retrying in ${seconds}${of}`;
}

/** `reason` in at most about `max` characters; a trailing ` — check …` advice is kept whole, the cause before it shortened. */
function shortReason(reason: string, max: number): string {
  if (reason.length <= max) return reason;
  const dash = reason.lastIndexOf(' — ');
  const advice = dash >= 0 && reason.length - dash <= max / 2 ? reason.slice(dash) : '';
  const cause = advice ? reason.slice(0, dash) : reason;
  return `${cause.slice(0, Math.max(0, max - advice.length - 1))}…${advice}`;
}
