/**
 * Node.js outside `engines` (22.19+, 24.11+ or 26+): the CLI prints one line and exits 2, the library's
 * import throws NODE_UNSUPPORTED. The built files (dist/) run in child processes, once on a
 * Node whose reported version is made old by a preload, and once on a real old Node when the
 * machine has one (its own Node 20 at /usr/bin/node, or FORKPOOL_TEST_OLD_NODE).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { isSupportedNode, NODE_ENGINES, satisfiesEngines, unsupportedNodeMessage } from '../../src/shared/node-version.js';
import { REPO_ROOT } from '../helpers/cli.js';

const BIN = path.join(REPO_ROOT, 'dist', 'cli', 'bin.js');
const LIBRARY = path.join(REPO_ROOT, 'dist', 'index.js');
/** What `import 'forkpool'` loads (package.json exports): the bundle, whose check must run first too. */
const BUNDLE = path.join(REPO_ROOT, 'dist', 'bundle', 'index.js');
/** A preload that makes this Node report 20.19.0, an older engines floor. */
const AS_NODE_20 = ['--import', 'data:text/javascript,Object.defineProperty(process.versions,"node",{value:"20.19.0"})'];
const importOf = (file: string) => `import(${JSON.stringify(file)}).then(() => console.log('loaded'), (e) => console.log(e.code, e.message))`;
const IMPORT_LIBRARY = importOf(LIBRARY);
const IMPORT_BUNDLE = importOf(BUNDLE);

function run(node: string, args: readonly string[]) {
  const r = spawnSync(node, args, { encoding: 'utf8', timeout: 30_000, env: { ...process.env, NODE_OPTIONS: '' } });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

function oldNode(): string | undefined {
  const candidate = process.env.FORKPOOL_TEST_OLD_NODE ?? '/usr/bin/node';
  if (!existsSync(candidate)) return undefined;
  const version = spawnSync(candidate, ['--version'], { encoding: 'utf8' }).stdout.trim();
  return version !== '' && !isSupportedNode(version) ? candidate : undefined;
}

describe('the Node.js version', () => {
  it('is checked against the same range as package.json engines (and its lock file)', () => {
    const pkg = JSON.parse(readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as { engines: { node: string } };
    const lock = JSON.parse(readFileSync(path.join(REPO_ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { engines?: { node?: string } }> };
    expect(pkg.engines.node).toBe(NODE_ENGINES);
    expect(lock.packages['']?.engines?.node).toBe(NODE_ENGINES);
    for (const v of ['20.19.0', 'v20.20.2', '22.13.0', '22.18.9', '23.11.0', '24.0.0', '24.10.1', '25.2.0', '18.20.0', 'nonsense', ''])
      expect(isSupportedNode(v), v).toBe(false);
    for (const v of ['22.19.0', 'v22.23.1', '24.11.0', 'v24.12.0', 'v26.1.0', '30.0.0-pre']) expect(isSupportedNode(v), v).toBe(true);
    expect(unsupportedNodeMessage('20.19.0')).toMatch(/needs Node\.js 22\.19\+, 24\.11\+ or 26\+; this is Node\.js v20\.19\.0/);
  });

  it("every installed package's own engines.node accepts the oldest release of each line forkpool supports", () => {
    // What makes the floor: with engine-strict (.npmrc), one dependency refusing one of these fails `npm ci` there.
    const lock = JSON.parse(readFileSync(path.join(REPO_ROOT, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { engines?: { node?: string } | string[]; os?: string[]; cpu?: string[] }>;
    };
    const oldest = NODE_ENGINES.split('||').map((alternative) => alternative.trim().replace(/^(\^|>=)/, ''));
    const refusals: string[] = [];
    let checked = 0;
    for (const [name, entry] of Object.entries(lock.packages)) {
      const range = Array.isArray(entry.engines) ? undefined : entry.engines?.node;
      // A platform build for another machine (os/cpu) is never installed here; engine-strict skips it.
      if (name === '' || range === undefined || (entry.os !== undefined && !entry.os.includes('linux'))) continue;
      checked += 1;
      for (const version of oldest) if (!satisfiesEngines(version, range)) refusals.push(`${name} (${range}) refuses ${version}`);
    }
    expect(checked).toBeGreaterThan(50);
    expect(refusals).toEqual([]);
  });

  it('on an older Node, the CLI prints one line and exits 2, and the library import throws NODE_UNSUPPORTED', () => {
    const cli = run(process.execPath, [...AS_NODE_20, BIN, 'run', '--demo']);
    expect(cli.code).toBe(2);
    expect(cli.stdout).toBe('');
    expect(cli.stderr.trimEnd().split('\n')).toEqual([unsupportedNodeMessage('20.19.0')]);
    const lib = run(process.execPath, [...AS_NODE_20, '--input-type=module', '-e', IMPORT_LIBRARY]);
    expect(lib.stdout).toContain('NODE_UNSUPPORTED forkpool needs Node.js 22.19+, 24.11+ or 26+');
    expect(run(process.execPath, [...AS_NODE_20, '--input-type=module', '-e', IMPORT_BUNDLE]).stdout).toContain(
      'NODE_UNSUPPORTED forkpool needs Node.js 22.19+, 24.11+ or 26+',
    );
  });

  it.skipIf(!isSupportedNode(process.version))('on this (supported) Node, the CLI and the library load', () => {
    // --version: the CLI got past the check and loaded commander.
    expect(run(process.execPath, [BIN, '--version'])).toMatchObject({ code: 0, stdout: '0.1.0\n' });
    expect(run(process.execPath, ['--input-type=module', '-e', IMPORT_LIBRARY]).stdout).toBe('loaded\n');
    expect(run(process.execPath, ['--input-type=module', '-e', IMPORT_BUNDLE]).stdout).toBe('loaded\n');
  });

  it.skipIf(oldNode() === undefined)("on a real old Node (the machine's own), the same line and exit 2, and the same error at import", () => {
    const node = oldNode() as string;
    const version = spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim();
    const cli = run(node, [BIN, 'chat']);
    expect(cli).toMatchObject({ code: 2, stdout: '' });
    expect(cli.stderr.trimEnd().split('\n')).toEqual([unsupportedNodeMessage(version)]);
    expect(run(node, ['--input-type=module', '-e', IMPORT_LIBRARY]).stdout).toMatch(/^NODE_UNSUPPORTED forkpool needs Node\.js 22\.19\+/);
    expect(run(node, ['--input-type=module', '-e', IMPORT_BUNDLE]).stdout).toMatch(/^NODE_UNSUPPORTED forkpool needs Node\.js 22\.19\+/);
  });
});
