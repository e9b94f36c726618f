/**
 * The oldest Node.js forkpool runs on, and the check both entry points make before anything
 * else loads. 22.13 is the first release with `node:sqlite` (the durable ledger) and
 * `require()` of ES modules without a flag; package.json `engines` says the same (a test
 * keeps the two equal). Pure: no imports, so it runs even where a dependency would not load.
 */
export const MIN_NODE_VERSION = '22.13.0';

/** `[major, minor, patch]` of a version such as `22.13.1` or `v26.0.0`; NaN parts when it is not one. */
function parts(version: string): [number, number, number] {
  const [major = NaN, minor = NaN, patch = NaN] = version.replace(/^v/, '').split(/[.-]/).map(Number);
  return [major, minor, patch];
}

/** Whether `version` is at least {@link MIN_NODE_VERSION}. */
export function isSupportedNode(version: string): boolean {
  const have = parts(version);
  const need = parts(MIN_NODE_VERSION);
  for (let i = 0; i < 3; i += 1) {
    const a = have[i] ?? NaN;
    const b = need[i] ?? 0;
    if (!Number.isFinite(a)) return false;
    if (a !== b) return a > b;
  }
  return true;
}

/** One line saying what is wrong with `version`, or undefined when it is supported. */
export function unsupportedNodeMessage(version: string): string | undefined {
  if (isSupportedNode(version)) return undefined;
  return `forkpool needs Node.js ${MIN_NODE_VERSION} or newer; this is Node.js ${version.replace(/^v?/, 'v')}. Install a current Node (22, 24 or 26 LTS) and run it again.`;
}
