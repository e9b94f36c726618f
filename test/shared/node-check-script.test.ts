/**
 * `npm ci`, `npm test` and `npm run demo` on a Node older than `engines` (issue 36: on the
 * machine's own Node 20, `npm test` printed 110 EBADENGINE lines, 137 failed suites and a vitest
 * crash): scripts/check-node.cjs runs first (preinstall, pretest, predemo) and prints one line
 * naming the Node forkpool needs. Run on a real old Node: the machine's own (/usr/bin/node) or
 * FORKPOOL_TEST_OLD_NODE; skipped where there is none.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { describeEngines, isSupportedNode, NODE_ENGINES } from '../../src/shared/node-version.js';
import { REPO_ROOT } from '../helpers/cli.js';

const SCRIPT = path.join(REPO_ROOT, 'scripts', 'check-node.cjs');
const NEEDS = new RegExp(`^forkpool needs Node\\.js ${describeEngines().replace(/[.+]/g, '\\$&')} \\(package\\.json engines .*; this is Node\\.js v\\d+\\.`);

function oldNode(): string | undefined {
  const candidate = process.env.FORKPOOL_TEST_OLD_NODE ?? '/usr/bin/node';
  if (!existsSync(candidate)) return undefined;
  const version = spawnSync(candidate, ['--version'], { encoding: 'utf8' }).stdout.trim();
  return version !== '' && !isSupportedNode(version) ? candidate : undefined;
}

const OLD_NODE = oldNode();

/** The environment of a person's shell with the old Node (and its npm) first on PATH; no npm_* of the test's own npm. */
function oldNodeEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) if (value !== undefined && !/^npm_/i.test(name)) env[name] = value;
  return { ...env, NODE_OPTIONS: '', PATH: `${path.dirname(OLD_NODE ?? '')}${path.delimiter}${process.env.PATH ?? ''}`, ...extra };
}

describe.skipIf(OLD_NODE === undefined)('the Node check before npm ci, npm test and npm run demo', () => {
  it('the script on the old Node: one line naming the Node needed and the one running, exit 1', () => {
    const r = spawnSync(OLD_NODE as string, [SCRIPT], { encoding: 'utf8', env: oldNodeEnv() });
    expect(r.status).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr.trimEnd().split('\n')).toEqual([expect.stringMatching(NEEDS)]);
  });

  it('package.json runs it first for npm ci, npm test and npm run demo; a project installing forkpool is not checked by it', () => {
    const { scripts, files } = JSON.parse(readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string>; files: string[] };
    for (const hook of ['preinstall', 'pretest', 'predemo']) expect(scripts[hook], hook).toMatch(/^node scripts\/check-node\.cjs(?: && |$)/);
    expect(files).toContain('scripts/check-node.cjs');
    // As a dependency (npm runs it in node_modules/forkpool, INIT_CWD elsewhere): silent, exit 0.
    const asDependency = spawnSync(OLD_NODE as string, [SCRIPT], {
      encoding: 'utf8',
      env: oldNodeEnv({ npm_lifecycle_event: 'preinstall', INIT_CWD: path.dirname(REPO_ROOT) }),
    });
    expect([asDependency.status, asDependency.stderr]).toEqual([0, '']);
  });

  it('`npm run demo` with the old Node first on PATH: the line before anything else is built or run', () => {
    const r = spawnSync('npm', ['run', 'demo'], { cwd: REPO_ROOT, encoding: 'utf8', env: oldNodeEnv(), timeout: 60_000 });
    expect(r.status).not.toBe(0);
    expect(r.stderr.split('\n').filter((l) => l.startsWith('forkpool'))).toEqual([expect.stringMatching(NEEDS)]);
    // npm's own header names the pre-script; nothing past it ran (no build, no demo).
    expect(r.stdout).not.toMatch(/> forkpool@[^ ]+ build|bundle-worker|background/);
    expect(r.stderr).not.toMatch(/EBADENGINE|SyntaxError|\n\s+at /);
  });

  it('`npm ci` with the old Node first on PATH: npm refuses forkpool itself (engine-strict), naming the range, before any dependency', () => {
    // A copy of what `npm ci` reads: the package, its lock and .npmrc (engine-strict), in a folder with no node_modules.
    const dir = mkdtempSync(path.join(os.tmpdir(), 'forkpool-npm-ci-'));
    try {
      for (const file of ['package.json', 'package-lock.json', '.npmrc']) copyFileSync(path.join(REPO_ROOT, file), path.join(dir, file));
      mkdirSync(path.join(dir, 'scripts'));
      copyFileSync(SCRIPT, path.join(dir, 'scripts', 'check-node.cjs'));
      const r = spawnSync('npm', ['ci', '--offline', '--no-audit', '--no-fund'], { cwd: dir, encoding: 'utf8', env: oldNodeEnv(), timeout: 120_000 });
      expect(r.status).not.toBe(0);
      // npm's one error (EBADENGINE for forkpool@…), its Required line carrying engines; no warning about any dependency.
      expect(r.stderr).toContain(`Required: {"node":"${NODE_ENGINES}"}`);
      expect(r.stderr.match(/Not compatible with your version of node\/npm: (\S+)/g)?.every((l) => l.endsWith('forkpool@0.1.0'))).toBe(true);
      expect(r.stderr).not.toMatch(/warn EBADENGINE/);
      expect(existsSync(path.join(dir, 'node_modules'))).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('on a supported Node the script is silent', () => {
    const r = spawnSync(process.execPath, [SCRIPT], { encoding: 'utf8' });
    expect([r.status, r.stdout, r.stderr]).toEqual([0, '', '']);
  });
});
