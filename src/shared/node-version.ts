/**
 * The Node.js releases forkpool runs on, and the check both entry points make before anything
 * else loads. package.json `engines` says the same (a test keeps the two equal, and checks every
 * installed package's own `engines` against the oldest release of each line here):
 * - 22.19: @babel/parser (a dependency) needs ^22.18, the docs tooling ^22.19; 22.13 was the first
 *   with `node:sqlite` (the durable ledger) and `require()` of ES modules without a flag;
 * - 24.11: @babel/parser refuses 24.0–24.10 (24.11 is also the first 24 LTS);
 * - 26 and later; 23 and 25 (odd, ended) are refused, vitest declines 25.
 * Pure: no imports, so it runs even where a dependency would not load.
 */
export const NODE_ENGINES = '^22.19.0 || ^24.11.0 || >=26.0.0';

type Version = [number, number, number];

/** `[major, minor, patch]` of a version such as `22.13.1` or `v26.0.0` (missing parts 0); undefined when it is not one. */
function parts(version: string): Version | undefined {
  const found = /^v?(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:[-+].*)?$/.exec(version.trim());
  if (found === null) return undefined;
  return [Number(found[1]), Number(found[2] ?? 0), Number(found[3] ?? 0)];
}

function compare(a: Version, b: Version): number {
  for (let i = 0; i < 3; i += 1) if (a[i] !== b[i]) return (a[i] as number) - (b[i] as number);
  return 0;
}

/**
 * Whether `version` meets one comparator of an `engines` range: `^X.Y.Z` (that major, at least
 * X.Y.Z), a bare `X` / `X.Y` / `X.*` (that major, and minor if given), `>=`, `>`, `<`, `<=` or
 * `*`; missing or wildcard parts (`20.x`) count as 0.
 */
function meets(version: Version, comparator: string): boolean {
  if (comparator === '*') return true;
  const found = /^(\^|>=|<=|>|<)?(\d+)(?:\.(\d+|[x*]))?(?:\.(\d+|[x*]))?$/.exec(comparator);
  if (found === null) throw new Error(`unsupported engines comparator ${JSON.stringify(comparator)}`);
  const [, operator, major, minor, patch] = found;
  const floor: Version = [Number(major), Number(/\d/.test(minor ?? '') ? minor : 0), Number(/\d/.test(patch ?? '') ? patch : 0)];
  const order = compare(version, floor);
  if (operator === '>=') return order >= 0;
  if (operator === '>') return order > 0;
  if (operator === '<') return order < 0;
  if (operator === '<=') return order <= 0;
  const sameLine = version[0] === floor[0] && (operator === '^' || !/\d/.test(minor ?? '') || version[1] === floor[1]);
  return sameLine && order >= 0;
}

/**
 * Whether `version` satisfies an `engines.node` range: `||` alternatives, each one or more
 * comparators that must all hold (`>=18.20 <19`). The forms npm packages use; anything else throws,
 * so a range this cannot read never passes by luck.
 */
export function satisfiesEngines(version: string, range: string = NODE_ENGINES): boolean {
  const have = parts(version);
  const results = range.split('||').map((alternative) => {
    const comparators = alternative
      .trim()
      .replace(/(\^|>=|<=|>|<)\s+/g, '$1')
      .split(/\s+/);
    return comparators.map((comparator) => meets(have ?? [-1, 0, 0], comparator)).every(Boolean);
  });
  return have !== undefined && results.includes(true);
}

/** Whether forkpool runs on `version` ({@link NODE_ENGINES}). */
export function isSupportedNode(version: string): boolean {
  return satisfiesEngines(version, NODE_ENGINES);
}

/** `22.19+, 24.11+ or 26+`: the oldest release of each supported line, for a person. */
export function describeEngines(range: string = NODE_ENGINES): string {
  const floors = range.split('||').map(
    (alternative) =>
      `${alternative
        .trim()
        .replace(/^(\^|>=)\s*/, '')
        .replace(/(\.0)+$/, '')}+`,
  );
  return floors.length === 1 ? (floors[0] as string) : `${floors.slice(0, -1).join(', ')} or ${floors.at(-1) as string}`;
}

/** One line saying what is wrong with `version`, or undefined when it is supported. */
export function unsupportedNodeMessage(version: string): string | undefined {
  if (isSupportedNode(version)) return undefined;
  return `forkpool needs Node.js ${describeEngines()}; this is Node.js ${version.replace(/^v?/, 'v')}. Install a current Node (22, 24 or 26 LTS) and run it again.`;
}
