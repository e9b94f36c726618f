/**
 * A light `import 'forkpool'`: the library entry points load no heavy package (BullMQ, ioredis,
 * fastify, ink, React, commander, pino-pretty, @babel/parser, tinypool); those are optional
 * peers behind `forkpool/bullmq`, `forkpool/server`, `forkpool/tinypool` or a lazy `import()`,
 * and a missing one is an error naming it. The built files (dist/) run in child processes; the
 * "missing package" cases run the CLI from a copy of dist/ whose node_modules lacks the package.
 */
import { execFile, spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { HEAVY_PACKAGES, sampleImportAsync } from '../helpers/import-trace.js';
import { OPTIONAL_PACKAGES } from '../../src/main/executors/optional-package.js';
import { REPO_ROOT } from '../helpers/cli.js';

const importOf = (entry: string) => `await import(${JSON.stringify(path.join(REPO_ROOT, 'dist', entry))});`;
/** A warning Node prints for a deprecated API: `(node:123) [DEP0205] DeprecationWarning: …`. */
const DEPRECATION = /\[DEP\d+\]|DeprecationWarning/;
const heavyIn = (packages: readonly string[]) => packages.filter((p) => (HEAVY_PACKAGES as readonly string[]).includes(p));
/** What a traced import of `entry` (under dist/) loaded. */
const traced = (entry: string) => sampleImportAsync(REPO_ROOT, importOf(entry), true);

/** Runs node with `args` to its end (stdin: `input`), without blocking the tests beside it. */
function runNode(
  args: string[],
  opts: { cwd: string; env: NodeJS.ProcessEnv; input?: string },
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: opts.cwd, env: opts.env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.stdin.end(opts.input ?? '');
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.once('error', reject);
    child.once('close', (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
  });
}

// Side by side (describe.concurrent): every test runs its own child processes and reads only what they print.
describe.concurrent('a light import', () => {
  // tsc's files and the bundled ones package.json exports (scripts/bundle-library.mjs).
  it.each([
    'index.js',
    'executors.js',
    'durable.js',
    'protocol.js',
    'sim/index.js',
    'bundle/index.js',
    'bundle/executors.js',
    'bundle/durable.js',
    'bundle/protocol.js',
    'bundle/sim.js',
  ])('dist/%s loads no heavy package', async (entry) => {
    const { packages, stderr } = await traced(entry);
    // (The next test shows the trace does see these packages when they load.)
    expect(heavyIn(packages)).toEqual([]);
    // Nor a deprecation warning: the trace's own hook uses no deprecated API (Node 26: module.register(), DEP0205).
    expect(stderr).not.toMatch(DEPRECATION);
    // Nor pino: src/main/logger.ts requires it on the first createLogger.
    expect(packages).not.toContain('pino');
  });

  it('the subpaths load their own packages (the check above sees them when they load)', async () => {
    const entries = ['main/bullmq/index.js', 'server/index.js', 'tinypool.js', 'bundle/bullmq.js', 'bundle/server.js', 'bundle/tinypool.js'];
    const [bullmq, server, tinypool, bundledBullmq, bundledServer, bundledTinypool] = (await Promise.all(entries.map(traced))).map((s) => heavyIn(s.packages));
    expect(bullmq).toEqual(expect.arrayContaining(['bullmq', 'ioredis']));
    expect(server).toContain('fastify');
    expect(tinypool).toContain('tinypool');
    expect(bundledBullmq).toEqual(expect.arrayContaining(['bullmq', 'ioredis']));
    expect(bundledServer).toContain('fastify');
    expect(bundledTinypool).toContain('tinypool');
  });

  it('package.json: the heavy parts are optional peers with the ranges the errors name, and the bench is not shipped', async () => {
    const pkg = JSON.parse(readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
      peerDependencies: Record<string, string>;
      peerDependenciesMeta: Record<string, { optional?: boolean }>;
    };
    for (const [name, spec] of Object.entries(OPTIONAL_PACKAGES)) {
      expect(`${name}@${pkg.peerDependencies[name]}`).toBe(spec);
      expect(pkg.peerDependenciesMeta[name]?.optional, name).toBe(true);
      expect(pkg.dependencies[name], name).toBeUndefined();
    }
    const { stdout: packJson } = await promisify(execFile)('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: REPO_ROOT, encoding: 'utf8' });
    const packed = JSON.parse(packJson) as [{ files: { path: string }[] }];
    const files = packed[0].files.map((f) => f.path);
    expect(files).toContain('dist/index.js');
    expect(files).toContain('dist/bundle/index.js');
    expect(files).toContain('dist/cli/bin.js');
    // The bench (bench/, built to dist-bench/) stays in the repository.
    expect(files.filter((f) => /^(bench|dist-bench|dist\/bench)\//.test(f))).toEqual([]);
  });
});

describe.concurrent('a light CLI start', () => {
  // The CLI as bin.js runs it, in a traced child: process.argv set, then the import (its exit
  // code reset: the child's JSON line is read only when it exits 0).
  const cliRun = (...args: string[]) => {
    const bin = path.join(REPO_ROOT, 'dist', 'cli', 'bin.js');
    const body = `process.argv = [process.execPath, ${JSON.stringify(bin)}, ...${JSON.stringify(args)}]; ${importOf('cli/bin.js')} process.exitCode = 0;`;
    return sampleImportAsync(REPO_ROOT, body, true);
  };
  // What a command loads in its action (src/cli/index.ts): the job engine and its packages, the
  // server, the TUI, the simulator, the ledger (node:sqlite), the tool loop.
  const COMMAND_ONLY_PACKAGES = ['openai', 'pino', 'piscina', 'zod', '@opentelemetry/api', ...HEAVY_PACKAGES.filter((p) => p !== 'commander')];
  const COMMAND_ONLY_FILES =
    /^(dist\/(main\/(jobs|session|ledger|setup|tools)|server|tui|sim)\/|dist\/shared\/tool-loop\.js$|dist\/cli\/common\.js$|node:sqlite$)/;

  it.each([['--version'], ['--help']])('forkpool %s loads commander and the command table only, no command module or heavy package', async (flag) => {
    const { packages, files, stderr } = await cliRun(flag);
    expect(stderr).not.toMatch(DEPRECATION);
    expect(packages).toEqual(['commander']);
    expect(packages.filter((p) => COMMAND_ONLY_PACKAGES.includes(p))).toEqual([]);
    expect(files.filter((f) => COMMAND_ONLY_FILES.test(f))).toEqual([]);
    expect(files).toContain('dist/cli/index.js');
  });

  it('a command loads its module when it runs (the check above sees command files when they load)', async () => {
    // jobs show on a ledger that does not exist: its module and the SQLite store load, then it says so.
    const { files } = await cliRun('jobs', 'show', 'bg-1', '--ledger', path.join(os.tmpdir(), 'forkpool-no-such-ledger.db'));
    expect(files).toEqual(expect.arrayContaining(['dist/cli/jobs.js', 'dist/main/ledger/sqlite-store.js']));
    expect(files.filter((f) => COMMAND_ONLY_FILES.test(f)).length).toBeGreaterThan(0);
  });
});

describe.concurrent('a missing optional package', () => {
  // dist/ copied (its real path must not reach the repo's node_modules), every installed
  // package linked in except the ones left out.
  const made: string[] = [];
  afterAll(() => {
    for (const dir of made) rmSync(dir, { recursive: true, force: true });
  });
  function installWithout(...leftOut: string[]): string {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'forkpool-without-'));
    made.push(dir);
    cpSync(path.join(REPO_ROOT, 'dist'), path.join(dir, 'dist'), { recursive: true });
    writeFileSync(path.join(dir, 'package.json'), readFileSync(path.join(REPO_ROOT, 'package.json')));
    const from = path.join(REPO_ROOT, 'node_modules');
    mkdirSync(path.join(dir, 'node_modules'));
    for (const name of readdirSync(from)) {
      if (name.startsWith('.') || leftOut.includes(name)) continue;
      // A scope with a package left out: the scope's folder is made, its other packages linked.
      if (name.startsWith('@') && leftOut.some((p) => p.startsWith(`${name}/`))) {
        mkdirSync(path.join(dir, 'node_modules', name));
        for (const member of readdirSync(path.join(from, name))) {
          if (!leftOut.includes(`${name}/${member}`)) symlinkSync(path.join(from, name, member), path.join(dir, 'node_modules', name, member));
        }
        continue;
      }
      symlinkSync(path.join(from, name), path.join(dir, 'node_modules', name));
    }
    return dir;
  }
  const cli = (dir: string, args: string[], input = '') =>
    runNode([path.join(dir, 'dist', 'cli', 'bin.js'), ...args], { cwd: dir, input, env: { PATH: process.env.PATH ?? '', HOME: dir, NO_COLOR: '1' } });

  it('forkpool serve without fastify, forkpool worker without bullmq: one line naming the package and its install command, exit 1', async () => {
    const dir = installWithout('fastify', 'bullmq');
    const [serve, worker, version] = await Promise.all([
      cli(dir, ['serve', '--port', '0']),
      cli(dir, ['worker', '--redis', 'redis://127.0.0.1:1']),
      cli(dir, ['--version']),
    ]);
    expect(serve.status).toBe(1);
    expect(serve.stderr.trim()).toBe(
      'forkpool: forkpool serve needs the package "fastify", which is not installed (an optional peer dependency of forkpool): npm install fastify@^5.12.8 [PACKAGE_MISSING]',
    );
    expect(worker.status).toBe(1);
    expect(worker.stderr).toContain(
      'forkpool worker needs the package "bullmq", which is not installed (an optional peer dependency of forkpool): npm install bullmq@^6.7.0 ioredis@^6.0.0 [PACKAGE_MISSING]',
    );
    // The library itself still loads without them.
    expect(version.stdout).toBe('0.1.0\n');
  });

  it('forkpool run with OTEL_EXPORTER_OTLP_ENDPOINT but without @opentelemetry/sdk-trace: one line naming it and its install command; the run goes on untraced, exit 0', async () => {
    const dir = installWithout('@opentelemetry/sdk-trace');
    const workspace = path.join(dir, 'workspace');
    mkdirSync(workspace);
    const run = await runNode([path.join(dir, 'dist', 'cli', 'bin.js'), 'run', '--sim-latency', '0', '--workspace', workspace, 'Where is X?'], {
      cwd: dir,
      env: { PATH: process.env.PATH ?? '', HOME: dir, NO_COLOR: '1', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:1' },
    });
    expect(run.status, run.stderr).toBe(0);
    const lines = run.stderr.split('\n').filter((l) => l.includes('tracing'));
    expect(lines).toEqual([
      'forkpool: warning: tracing is off: exporting traces (OTEL_EXPORTER_OTLP_ENDPOINT, http/protobuf) needs the package "@opentelemetry/sdk-trace", which is not installed (an optional peer dependency of forkpool): npm install @opentelemetry/sdk-trace@^3.1.1 @opentelemetry/resources@^3.1.1 @opentelemetry/exporter-trace-otlp-proto@^0.301.2',
    ]);
  });

  it('the tinypool executor without tinypool: each job fails with PACKAGE_MISSING, the process keeps going and exits 1', async () => {
    const dir = installWithout('tinypool');
    const workspace = path.join(dir, 'workspace');
    mkdirSync(workspace);
    const run = await cli(
      dir,
      ['fanout', '-', '--executor', 'tinypool', '--json', '--no-progress', '--workspace', workspace],
      '{"task":"Where is X?"}\n{"task":"How does Y work?"}\n',
    );
    const ended = run.stdout
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { type?: string; status?: string; error?: { code?: string; message?: string } });
    const failed = ended.filter((e) => e.error?.code === 'PACKAGE_MISSING');
    expect(failed, run.stdout + run.stderr).toHaveLength(2);
    expect(failed[0]?.error?.message).toContain('npm install tinypool@^2.2.0');
    expect(run.status).toBe(1);
  });
});
