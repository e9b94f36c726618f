/**
 * The suite-wide check that no host fault is printed while a test runs (test/setup/host-faults.ts
 * records; this module holds what was seen). A host fault is what would have exited or wedged a
 * host that embeds forkpool, printed instead of failing a test: a `FORKPOOL_HOST_FAULT` warning (an
 * error with no caller to throw to), a stack overflow, an unhandled rejection, an uncaught
 * exception. A CI log once showed "Maximum call stack size exceeded" 1,049 times in a green run.
 *
 * Seen in: this process's warnings and stderr (worker threads' stderr is piped into it), and the
 * piped output of child processes the helpers start (`noteHostOutput`: cli.ts does it for every
 * CLI run). A test that provokes such output on purpose and asserts it says so first:
 *
 *   allowHostFaults(/a listener broke/);   // for this test only
 */

/** What counts as a host fault in printed output. */
export const HOST_FAULT_PATTERNS: readonly RegExp[] = [
  /FORKPOOL_HOST_FAULT/,
  /Maximum call stack size exceeded/,
  /unhandled ?(promise )?rejection/i,
  /UnhandledPromiseRejection/,
  /uncaught ?exception/i,
  /FATAL ERROR:/,
];

interface HostFaultBook {
  seen: string[];
  allowed: RegExp[];
}

const KEY = Symbol.for('forkpool.test.hostFaults');

/** One book per test process (the setup file and the helpers may be loaded apart). */
function book(): HostFaultBook {
  const holder = globalThis as { [KEY]?: HostFaultBook };
  return (holder[KEY] ??= { seen: [], allowed: [] });
}

/** Records each line of `text` that looks like a host fault; `source` says where it was printed. */
export function noteHostOutput(source: string, text: string): void {
  if (!HOST_FAULT_PATTERNS.some((pattern) => pattern.test(text))) return;
  for (const line of text.split('\n')) {
    if (HOST_FAULT_PATTERNS.some((pattern) => pattern.test(line))) book().seen.push(`${source}: ${line.trim().slice(0, 500)}`);
  }
}

/** Records one fault as it is (a warning event, a rejection). */
export function noteHostFault(source: string, text: string): void {
  book().seen.push(`${source}: ${text.slice(0, 500)}`);
}

/**
 * The running test provokes host-fault output on purpose (and asserts it): lines matching any
 * of `patterns` are not held against it. Cleared after each test.
 */
export function allowHostFaults(...patterns: RegExp[]): void {
  book().allowed.push(...patterns);
}

/** The faults seen since the last call that no opt-out allows; clears the book and the opt-outs. */
export function takeHostFaults(): string[] {
  const { seen, allowed } = book();
  const faults = seen.filter((line) => !allowed.some((pattern) => pattern.test(line)));
  seen.length = 0;
  allowed.length = 0;
  return faults;
}
