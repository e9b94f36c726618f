/**
 * One POST of a JSON body with `node:http`/`node:https`, for the wires that do not go through an
 * SDK client (Chat Completions with forkpool's own client, Anthropic Messages). Failures are
 * raised as the `openai` package's error classes (`openai/error`, a few KB: not the client), so
 * model-call.ts classifies and retries them on every wire alike (429/5xx, Retry-After, transport
 * failures).
 *
 * Why not `fetch`: a thread's first `fetch` loads undici (its JavaScript, its `Response` and
 * `Headers`, and an llhttp WebAssembly instance): 6.9 MB of RSS per worker thread, against 1.6 MB
 * for `node:http` (whose parser is Node's own) and a web stream over its body. In `thread`
 * isolation that is every job's thread (issue 40: ≤ 25 MB per thread). It is also less CPU on the
 * thread per request. The sockets are Node's global agent's (keep-alive, as fetch's); redirects
 * are not followed (fetch turned a redirected POST into a GET), and no compressed encoding is
 * asked for.
 */
import type { ClientRequest, IncomingMessage, RequestOptions } from 'node:http';
import { Readable } from 'node:stream';
import { APIConnectionError, APIError } from 'openai/error';

// Not `import … from 'node:http'`: an ES import of it reads every export, and its lazy
// `WebSocket` export loads undici, which is what this module is here to keep out of a thread.
const httpRequest = process.getBuiltinModule('node:http').request;

/** The headers of a response, read by name (case-insensitive): what a fetch `Headers` offers the wires. */
export interface HeaderReader {
  get(name: string): string | null;
}

/**
 * A response once its headers came: what the wires read of one. A fetch `Response` is one too
 * (a caller's own `openai` client sends its requests itself: see wires/chat.ts).
 */
export interface HttpReply {
  readonly status: number;
  readonly ok: boolean;
  readonly headers: HeaderReader;
  /** The body as a web stream, made when first read (null once {@link text} took it). */
  readonly body: ReadableStream<Uint8Array> | null;
  /** The whole body as UTF-8. */
  text(): Promise<string>;
}

type Send = (url: URL, options: RequestOptions, onResponse: (response: IncomingMessage) => void) => ClientRequest;

/** `node:https`, loaded with the first https endpoint (it loads TLS): a loopback server never needs it. */
let httpsRequest: Send | undefined;

function senderFor(url: URL): Send {
  if (url.protocol === 'http:') return httpRequest;
  if (url.protocol === 'https:') return (httpsRequest ??= process.getBuiltinModule('node:https').request);
  throw new TypeError(`unsupported protocol ${url.protocol} (http: or https:)`);
}

/** The response once its headers came (any status); a request that never got one is an APIConnectionError. */
export async function postJson(url: string, headers: Readonly<Record<string, string>>, body: unknown, signal: AbortSignal): Promise<HttpReply> {
  const payload = JSON.stringify(body);
  try {
    const target = new URL(url);
    const send = senderFor(target);
    return await new Promise<HttpReply>((resolve, reject) => {
      const request = send(
        target,
        {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...headers, 'content-length': String(Buffer.byteLength(payload)) },
          signal,
        },
        (response) => resolve(new NodeReply(response)),
      );
      // `on`, not `once`: an error after the headers (a reset mid-body) reaches the body's reader
      // too, and must not be an unhandled 'error' event here (rejecting a settled promise is a no-op).
      request.on('error', reject);
      request.end(payload);
    });
  } catch (error) {
    if (signal.aborted) throw error;
    // As the openai client says it: model-call.ts retries it as a connection error.
    throw new APIConnectionError({ cause: error instanceof Error ? error : new Error(String(error)) });
  }
}

/** A `node:http` response as an {@link HttpReply}. */
class NodeReply implements HttpReply {
  readonly status: number;
  readonly ok: boolean;
  readonly headers: HeaderReader;
  readonly #response: IncomingMessage;
  #body: ReadableStream<Uint8Array> | undefined;
  #readAsText = false;

  constructor(response: IncomingMessage) {
    this.#response = response;
    this.status = response.statusCode ?? 0;
    this.ok = this.status >= 200 && this.status < 300;
    const raw = response.headers;
    this.headers = {
      get: (name) => {
        const value = raw[name.toLowerCase()];
        return value === undefined ? null : Array.isArray(value) ? value.join(', ') : value;
      },
    };
  }

  get body(): ReadableStream<Uint8Array> | null {
    if (this.#readAsText) return null;
    // Node's web stream over the body: cancelling it destroys the response (and its socket).
    this.#body ??= Readable.toWeb(this.#response) as unknown as ReadableStream<Uint8Array>;
    return this.#body;
  }

  async text(): Promise<string> {
    this.#readAsText = true;
    const chunks: Buffer[] = [];
    for await (const chunk of this.#response) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  }
}

/**
 * A non-2xx answer as the `openai` client (7.x) raised it: its status's class, the body's
 * `error`, the headers (Retry-After); a body that is not JSON becomes the message.
 */
export async function statusError(response: HttpReply): Promise<APIError> {
  const text = await response.text().catch((error: unknown) => (error instanceof Error ? error.message : String(error)));
  let parsed: object | undefined;
  try {
    parsed = JSON.parse(text) as object;
  } catch {
    parsed = undefined;
  }
  // A body without an `error` field is the error itself (the client's makeStatusError).
  const body = parsed && typeof parsed === 'object' && (parsed as { error?: unknown }).error == null ? { error: parsed } : parsed;
  return APIError.generate(response.status, body, parsed ? undefined : text, asHeaders(response.headers));
}

/** The client's errors keep a fetch `Headers`; they only ever `get` from it (request id, Retry-After). */
export function asHeaders(headers: HeaderReader): Headers {
  return headers as unknown as Headers;
}
