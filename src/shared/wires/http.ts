/**
 * One POST of a JSON body with fetch, for the wires that do not go through an SDK client (Chat
 * Completions with forkpool's own client, Anthropic Messages). Failures are raised as the
 * `openai` package's error classes (`openai/error`, a few KB: not the client), so model-call.ts
 * classifies and retries them on every wire alike (429/5xx, Retry-After, transport failures).
 */
import { APIConnectionError, APIError } from 'openai/error';

/** The response once its headers came (any status); a request that never got one is an APIConnectionError. */
export async function postJson(url: string, headers: Readonly<Record<string, string>>, body: unknown, signal: AbortSignal): Promise<Response> {
  try {
    return await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
      signal,
    });
  } catch (error) {
    if (signal.aborted) throw error;
    // As the openai client says it: model-call.ts retries it as a connection error.
    throw new APIConnectionError({ cause: error instanceof Error ? error : new Error(String(error)) });
  }
}

/**
 * A non-2xx answer as the `openai` client (7.x) raised it: its status's class, the body's
 * `error`, the headers (Retry-After); a body that is not JSON becomes the message.
 */
export async function statusError(response: Response): Promise<APIError> {
  const text = await response.text().catch((error: unknown) => (error instanceof Error ? error.message : String(error)));
  let parsed: object | undefined;
  try {
    parsed = JSON.parse(text) as object;
  } catch {
    parsed = undefined;
  }
  // A body without an `error` field is the error itself (the client's makeStatusError).
  const body = parsed && typeof parsed === 'object' && (parsed as { error?: unknown }).error == null ? { error: parsed } : parsed;
  return APIError.generate(response.status, body, parsed ? undefined : text, response.headers);
}
