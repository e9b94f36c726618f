import { expose, wrap, releaseProxy, type Endpoint, type Remote } from 'comlink';
import type { MessagePort } from 'node:worker_threads';
import { withTimeout } from './abort.js';

/**
 * comlink over a Node `MessagePort`. comlink's own node adapter ships without usable types
 * for ESM; this is the same 20 lines, typed.
 */
type Handler = ((event: { data: unknown }) => void) | { handleEvent(event: { data: unknown }): void };

export function nodeEndpoint(port: MessagePort): Endpoint {
  const listeners = new WeakMap<object, (data: unknown) => void>();
  const endpoint = {
    postMessage: (message: unknown, transfer?: readonly unknown[]) => port.postMessage(message, transfer as never),
    addEventListener: (_type: string, handler: Handler) => {
      const listener = (data: unknown) => {
        const event = { data };
        if (typeof handler === 'function') handler(event);
        else handler.handleEvent(event);
      };
      port.on('message', listener);
      listeners.set(handler, listener);
    },
    removeEventListener: (_type: string, handler: Handler) => {
      const listener = listeners.get(handler);
      if (!listener) return;
      port.off('message', listener);
      listeners.delete(handler);
    },
    start: () => port.start(),
  };
  return endpoint;
}

export function exposeOnPort(service: object, port: MessagePort): void {
  expose(service, nodeEndpoint(port));
}

export function wrapPort<T>(port: MessagePort): Remote<T> {
  return wrap<T>(nodeEndpoint(port));
}

export { releaseProxy };

/**
 * A comlink call pending when the other side closes its port hangs forever: race it against
 * the port's `close`, a timeout and an abort. Resolves `fallback` in any of those cases.
 */
export async function raceRemote<T>(call: Promise<T>, port: MessagePort, timeoutMs: number, fallback: T, signal?: AbortSignal): Promise<T> {
  let onClose: (() => void) | undefined;
  const closed = new Promise<T>((resolve) => {
    onClose = () => resolve(fallback);
    port.once('close', onClose);
  });
  try {
    return await withTimeout(
      () => Promise.race([call, closed]),
      timeoutMs,
      signal ?? new AbortController().signal,
      () => new Error('no answer in time'),
    );
  } catch {
    return fallback;
  } finally {
    if (onClose) port.off('close', onClose);
  }
}
