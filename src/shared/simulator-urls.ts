/**
 * The URLs of forkpool's built-in simulators listening in this process (src/sim registers each).
 * A BullMQ job on one of them says so (job-request.ts), and a worker, which cannot reach this
 * process's loopback, runs it on a simulator of its own (worker-policy.ts). Kept on globalThis:
 * the library's entry bundles may each hold a copy of this module.
 */
const KEY = Symbol.for('forkpool.simulatorUrls');

function urls(): Set<string> {
  const holder = globalThis as { [KEY]?: Set<string> };
  return (holder[KEY] ??= new Set());
}

const normalized = (url: string) => url.replace(/\/+$/, '');

export function registerSimulatorUrl(url: string): void {
  urls().add(normalized(url));
}

export function unregisterSimulatorUrl(url: string): void {
  urls().delete(normalized(url));
}

/** True when `url` is a simulator of this process that is still listening. */
export function isSimulatorUrl(url: string): boolean {
  return urls().has(normalized(url));
}
