/**
 * What `import 'forkpool'` offers (issue 39): an embedder's API, at most 20 runtime values, with
 * the wire, storage and prompt contracts on `forkpool/protocol` instead. The runtime values are
 * read from the built package as a user imports it (package.json `exports`, in a child
 * process); the types from its declaration files (dist/*.d.ts) with the TypeScript API.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/cli.js';

/** The root entry's cap on runtime values (functions, classes, constants); types are not counted. */
const MAX_ROOT_VALUES = 20;

/** Each entry's runtime export names, as `import * as m from '<entry>'` sees them. */
function runtimeExports(...entries: string[]): Record<string, string[]> {
  const body = `
    const out = {};
    for (const entry of ${JSON.stringify(entries)}) out[entry] = Object.keys(await import(entry)).sort();
    console.log(JSON.stringify(out));`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', body], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    timeout: 60_000,
    env: { ...process.env, NODE_OPTIONS: '' },
  });
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout.trim().split('\n').pop() as string) as Record<string, string[]>;
}

/** The names a declaration file exports that exist only as types (no runtime value behind them). */
function typeOnlyExports(dtsFile: string): string[] {
  const file = path.join(REPO_ROOT, 'dist', dtsFile);
  const options: ts.CompilerOptions = {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    noEmit: true,
    noLib: true,
    types: [],
  };
  // Only forkpool's own declaration files: whether a name is a value or a type is decided there,
  // and leaving out the packages' (openai, zod, pino, Node's) makes this ~1 s instead of ~20 s.
  const host = ts.createCompilerHost(options);
  host.resolveModuleNames = (names, containing) =>
    names.map((name) =>
      name.startsWith('.')
        ? { resolvedFileName: path.resolve(path.dirname(containing), name.replace(/\.js$/, '.d.ts')), extension: ts.Extension.Dts }
        : undefined,
    );
  const program = ts.createProgram([file], options, host);
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(file);
  const moduleSymbol = source && checker.getSymbolAtLocation(source);
  if (!moduleSymbol) throw new Error(`no module symbol for ${file}`);
  const types: string[] = [];
  for (const symbol of checker.getExportsOfModule(moduleSymbol)) {
    const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
    // `export type { ParentAgent }` names a class, but imports only its type.
    const typeOnly = symbol.declarations?.some((d) => ts.isExportSpecifier(d) && (d.isTypeOnly || d.parent.parent.isTypeOnly)) ?? false;
    if (!(target.flags & ts.SymbolFlags.Value) || typeOnly) types.push(symbol.name);
  }
  return types.sort();
}

/** What the issue names for the root: the embedder's classes and functions, the errors and their codes. */
const ROOT_ESSENTIALS = [
  'loadConfig',
  'BackgroundManager',
  'AgentSession',
  'Deliveries',
  'tool',
  'ForkpoolError',
  'ConfigError',
  'ToolError',
  'TimeoutError',
  'AbortError',
  'JobError',
  'LedgerWriteError',
  'LedgerBusyError',
  'ERROR_CODES',
];
/** ... and the record and event types an embedder writes against. */
const ROOT_TYPES = [
  'JobRecord',
  'JobStatus',
  'JobEnding',
  'ManagerEvents',
  'SessionEvents',
  'LoopEvent',
  'TurnResult',
  'ErrorCode',
  'SerializedError',
  'ForkpoolConfig',
  'SpawnRequest',
  'ToolDefinition',
];
/** Wire, storage and prompt contracts: on forkpool/protocol, not on the root. */
const PROTOCOL_VALUES = ['DEFAULTS', 'FOLLOW_UP_PROMPTS', 'AUTOMATED_RESULTS_MARKER', 'configSchema', 'parseConfig', 'serializeError', 'deserializeError'];
const PROTOCOL_TYPES = ['JobTask', 'WorkerMessage', 'MainMessage', 'JobSpec', 'JobOutcome', 'LedgerStore', 'JobStore', 'StoredJob'];

describe('the root entry (issue 39)', () => {
  const runtime = runtimeExports('forkpool', 'forkpool/protocol');

  it(`import 'forkpool' has at most ${MAX_ROOT_VALUES} runtime values, among them loadConfig, the manager, the session, Deliveries, tool, the errors and their codes`, () => {
    const root = runtime.forkpool ?? [];
    expect(root.length, root.join(' ')).toBeLessThanOrEqual(MAX_ROOT_VALUES);
    expect(root).toEqual(expect.arrayContaining(ROOT_ESSENTIALS));
  });

  it('the record and event types are on forkpool; the wire, storage and prompt contracts are on forkpool/protocol and not on the root', () => {
    const rootTypes = typeOnlyExports('index.d.ts');
    const protocolTypes = typeOnlyExports('protocol.d.ts');
    expect(rootTypes).toEqual(expect.arrayContaining(ROOT_TYPES));
    expect(protocolTypes).toEqual(expect.arrayContaining(PROTOCOL_TYPES));
    expect(rootTypes.filter((name) => PROTOCOL_TYPES.includes(name))).toEqual([]);
    expect(runtime['forkpool/protocol']).toEqual(expect.arrayContaining(PROTOCOL_VALUES));
    expect((runtime.forkpool ?? []).filter((name) => PROTOCOL_VALUES.includes(name))).toEqual([]);
  });
});
