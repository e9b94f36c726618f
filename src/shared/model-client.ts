/**
 * The client a model call goes out with. A caller may pass an `openai` client of their own
 * (`AgentSessionOptions.client`): its requests then go through it, its headers, fetch and auth
 * included. The client forkpool builds ({@link createModelClient}) is plain data instead: the
 * endpoint, the key, the wait for the headers and the headers the `openai` client would add from
 * the environment. So a worker thread never evaluates the `openai` package, about 11 MB of every
 * thread's memory (docs/performance.md, "`thread` isolation"): Chat Completions goes out with
 * fetch (wires/chat.ts), and only the Responses wire loads the SDK, on its first request.
 */
import type OpenAI from 'openai';
import { modelBaseUrl, type ForkpoolConfig } from './config.js';
import { DEFAULTS } from './defaults.js';

/** forkpool's own client (`createModelClient`): what a request needs, without the SDK. */
export interface EndpointClient {
  /** The configured key, or a stand-in when none is (sent as `Bearer`, as the SDK sent it). */
  readonly apiKey: string;
  /** The endpoint, e.g. `https://api.openai.com/v1`; the wire adds its path. */
  readonly baseURL: string;
  /** The wait for the response's headers, ms (the SDK client's `timeout`: `firstByteTimeoutMs`). */
  readonly timeout: number;
  /** Sent with every Chat Completions request: the key, and OPENAI_ORG_ID, OPENAI_PROJECT_ID and OPENAI_CUSTOM_HEADERS from the environment, as the SDK sent them. */
  readonly headers: Readonly<Record<string, string>>;
}

/** What a model call is sent with: an `openai` client of the caller's (it sends the requests itself), or forkpool's own. */
export type ModelClient = OpenAI | EndpointClient;

/** The SDK insists on a key; this stands in when none is configured (the sim, local servers). */
export const NO_KEY = 'forkpool-no-key';

/** Whether `client` is a caller's own `openai` client (it then sends its requests itself). */
export function isSdkClient(client: ModelClient): client is OpenAI {
  return 'chat' in client;
}

/**
 * The client's API key, as a secret to scrub from what the loop hands out: a server may echo
 * the key in an error body, and a tool may read it from somewhere outside its environment.
 */
export function clientSecrets(client: ModelClient): string[] {
  const key = client.apiKey;
  return typeof key === 'string' && key.length >= 4 && key !== NO_KEY ? [key] : [];
}

/**
 * Builds the client from a (cloned) config. The base URL is always explicit: the SDK would read
 * OPENAI_BASE_URL from the process environment. `timeout` ends at the response headers: it is
 * the wait for the first byte (`firstByteTimeoutMs`).
 */
export function createModelClient(
  config: Pick<ForkpoolConfig, 'baseUrl' | 'apiKey' | 'requestTimeoutMs'> & Partial<Pick<ForkpoolConfig, 'firstByteTimeoutMs' | 'api'>>,
): EndpointClient {
  // The simulator and many local servers need no key; the SDK sent this one, and so do we.
  const apiKey = config.apiKey ?? NO_KEY;
  const { fromEnv, custom } = environmentHeaders(process.env);
  return {
    apiKey,
    baseURL: modelBaseUrl(config),
    timeout: config.firstByteTimeoutMs ?? DEFAULTS.firstByteTimeoutMs,
    headers: { ...fromEnv, authorization: `Bearer ${apiKey}`, ...custom },
  };
}

/**
 * The headers the `openai` client (7.x) adds from the environment, which forkpool's requests
 * carried when they went through it: OPENAI_ORG_ID, OPENAI_PROJECT_ID, and OPENAI_CUSTOM_HEADERS
 * ("Name: value" lines, sent last so they override, as the SDK does).
 */
function environmentHeaders(env: NodeJS.ProcessEnv): { fromEnv: Record<string, string>; custom: Record<string, string> } {
  const custom: Record<string, string> = {};
  for (const line of env.OPENAI_CUSTOM_HEADERS?.trim().split('\n') ?? []) {
    const colon = line.indexOf(':');
    if (colon >= 0) custom[line.slice(0, colon).trim()] = line.slice(colon + 1).trim();
  }
  const organization = env.OPENAI_ORG_ID?.trim();
  const project = env.OPENAI_PROJECT_ID?.trim();
  return {
    fromEnv: { ...(organization ? { 'OpenAI-Organization': organization } : {}), ...(project ? { 'OpenAI-Project': project } : {}) },
    custom,
  };
}
