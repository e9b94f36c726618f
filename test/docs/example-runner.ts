/**
 * Runs one doc example (markdown-examples.ts) for real: a TypeScript block as a Node program on
 * the built package, a shell block in bash with `forkpool` on PATH, each in a folder of its own
 * with a small workspace, on the shared simulator. The conventions are docs/CONTRIBUTING.md's.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import type { CodeBlock } from './markdown-examples.js';

/** What every example shares: the repository, the simulator, a Redis (when there is one). */
export interface ExampleWorld {
  root: string;
  /** A temp folder: `node_modules` (forkpool and the repository's packages), `bin` (shims). */
  dir: string;
  simUrl: string;
  redisUrl?: string;
  freePort(): Promise<number>;
}

export interface ExampleRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  output: string;
  timedOut: boolean;
}

/** The workspace each example starts in: what the docs' examples ask about. */
const WORKSPACE: Record<string, string> = {
  'src/retry.ts': 'export async function withRetry(fn: () => Promise<unknown>) {\n  // exponential backoff: 250 ms, doubled per attempt\n  return fn();\n}\n',
  'src/cache.ts': '// An LRU cache with a size limit.\nexport class LruCache {}\n',
  'src/db/index.ts': 'export const db = { order: (id: number) => ({ id, shipped: true }) };\n',
  'src/routes.ts': "export const routes = ['GET /v1/jobs', 'POST /v1/jobs'];\n",
  'tasks.jsonl': '{"task": "Where is the retry backoff?", "label": "retry"}\n{"task": "Where is the LRU cache?", "label": "cache"}\n',
};

/** Text the docs use for what only a reader has, and what the test puts there instead. */
function placeholders(world: ExampleWorld, port: number, folder: string): Array<[string, string]> {
  return [
    ['OPENAI_API_KEY=sk-...', `OPENAI_API_KEY=sk-example OPENAI_BASE_URL=${world.simUrl}`],
    ['http://127.0.0.1:8000/v1', world.simUrl],
    ['redis://10.0.0.5:6379', world.redisUrl ?? 'redis://10.0.0.5:6379'],
    ['/srv/checkout', '.'],
    ["'/tmp/ws'", JSON.stringify(path.join(folder, 'ws'))],
    ['/var/lib/forkpool/', `${path.join(folder, 'home')}/`],
    ['port: 3000', `port: ${port}`],
    ['port: 4477', `port: ${port}`],
    ['localhost:8080', `localhost:${port}`],
    ['--port 8080', `--port ${port}`],
    ['127.0.0.1:4477', `127.0.0.1:${port}`],
  ];
}

/**
 * One pass, so a value put in is never scanned again (a simulator on port 44773 must not meet the
 * `127.0.0.1:4477` placeholder), and a placeholder ending in a digit matches only a whole number.
 */
function substitute(text: string, pairs: Array<[string, string]>): string {
  const pattern = pairs.map(([from]) => from.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') + (/\d$/.test(from) ? '(?!\\d)' : '')).join('|');
  const values = new Map(pairs);
  return text.replace(new RegExp(pattern, 'g'), (found) => values.get(found) ?? found);
}

/** Makes the shared folder: package links and the command shims. */
export function prepareWorld(root: string, dir: string): void {
  const modules = path.join(dir, 'node_modules');
  mkdirSync(modules, { recursive: true });
  for (const entry of readdirSync(path.join(root, 'node_modules'))) {
    if (entry.startsWith('.')) continue;
    symlinkSync(path.join(root, 'node_modules', entry), path.join(modules, entry));
  }
  symlinkSync(root, path.join(modules, 'forkpool'));
  const bin = path.join(dir, 'bin');
  mkdirSync(bin);
  const shim = (name: string, body: string) => writeFileSync(path.join(bin, name), `#!/bin/bash\n${body}\n`, { mode: 0o755 });
  shim('forkpool', `exec ${JSON.stringify(process.execPath)} ${JSON.stringify(path.join(root, 'dist/cli/bin.js'))} "$@"`);
  // `npx forkpool` is the installed CLI; nothing else is fetched (the test is offline).
  shim('npx', 'if [ "$1" = forkpool ]; then shift; exec forkpool "$@"; fi\necho "docs test: npx $1 is not run offline: annotate the block" >&2; exit 127');
  shim('npm', 'echo "docs test: npm $* is not run here: annotate the block" >&2; exit 127');
  shim('node', `exec ${JSON.stringify(process.execPath)} "$@"`);
}

/** A fresh folder for one example, holding the workspace files. */
function exampleFolder(world: ExampleWorld, block: CodeBlock): string {
  const folder = path.join(world.dir, `${block.file.replace(/[^a-z0-9]+/gi, '-')}-${block.line}`);
  for (const [file, text] of Object.entries(WORKSPACE)) {
    mkdirSync(path.dirname(path.join(folder, 'ws', file)), { recursive: true });
    writeFileSync(path.join(folder, 'ws', file), text);
  }
  mkdirSync(path.join(folder, 'home'));
  return folder;
}

/** The environment of an example: nothing of the test's own model or forkpool settings. */
function exampleEnv(world: ExampleWorld, folder: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) if (!/^(OPENAI_|FORKPOOL_|ANTHROPIC_)/.test(name)) env[name] = value;
  const git = {
    GIT_AUTHOR_NAME: 'Docs Example',
    GIT_AUTHOR_EMAIL: 'docs@example.invalid',
    GIT_COMMITTER_NAME: 'Docs Example',
    GIT_COMMITTER_EMAIL: 'docs@example.invalid',
  };
  return { ...env, ...git, PATH: `${path.join(world.dir, 'bin')}:${env.PATH ?? ''}`, HOME: path.join(folder, 'home'), NO_COLOR: '1' };
}

const IMPORT = /^import\s[\s\S]*?\sfrom\s*['"][^'"]+['"];?[ \t]*$/gm;

/**
 * A TS block as an ES module: its imports first, then in a scope of their own the prelude's
 * names (every export of `forkpool`, `z`, `config` and `manager` on the simulator), then its
 * setup and its code in an inner scope, which may declare the same names.
 */
export async function typescriptProgram(block: CodeBlock, world: ExampleWorld, port: number, folder: string): Promise<string> {
  const pairs = placeholders(world, port, folder);
  const code = substitute(block.code, pairs);
  const setup = block.notes.setup.map((line) => substitute(line, pairs));
  const imports = code.match(IMPORT) ?? [];
  const body = code.replace(IMPORT, '');
  const exportNames = Object.keys(await import(path.join(world.root, 'dist/bundle/index.js')));
  const own = [...setup, body].join('\n');
  const wants = (name: string) => new RegExp(`\\b${name}\\b`).test(own) && !new RegExp(`\\b(const|let|var)\\s+${name}\\b`).test(own);
  const source = [
    "import * as __forkpool from 'forkpool';",
    "import { z as __z } from 'zod';",
    ...imports,
    '{',
    `const { ${exportNames.join(', ')} } = __forkpool;`,
    'const z = __z;',
    `const simUrl = ${JSON.stringify(world.simUrl)};`,
    `const config = loadConfig({ config: { baseUrl: ${JSON.stringify(world.simUrl)}, workspaceRoot: process.cwd() } });`,
    wants('manager') ? 'const manager = new BackgroundManager({ config });' : '',
    '{',
    ...setup,
    body,
    '}',
    '}',
    // Flushed, then ended: a fragment may leave a manager or a server open.
    "process.stdout.write('', () => process.exit(0));",
  ].join('\n');
  return transpile(source);
}

function transpile(source: string): string {
  return ts.transpileModule(source, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2023 } }).outputText;
}

/** Runs `command` in its own process group (killed, with whatever it started, when it ends or times out). */
function runGroup(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv, timeoutMs: number): Promise<ExampleRun> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    let timedOut = false;
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const killGroup = () => {
      try {
        process.kill(-(child.pid ?? 0), 'SIGKILL');
      } catch {
        // already gone
      }
    };
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup();
    }, timeoutMs);
    let exit: { code: number | null; signal: NodeJS.Signals | null } = { code: null, signal: null };
    child.on('exit', (code, signal) => {
      exit = { code, signal };
      killGroup(); // a server or worker the block started in the background (it holds the pipes open)
    });
    child.on('close', () => {
      clearTimeout(timer);
      resolve({ ...exit, output, timedOut });
    });
  });
}

/** Runs a `ts`/`js` or `sh` block; the caller checks the result. */
export async function runExample(block: CodeBlock, world: ExampleWorld, timeoutMs: number): Promise<ExampleRun> {
  const folder = exampleFolder(world, block);
  const ws = path.join(folder, 'ws');
  const env = exampleEnv(world, folder);
  const port = await world.freePort();
  if (block.lang === 'sh' || block.lang === 'bash') {
    const script = ['set -eo pipefail', ...block.notes.setup, block.code].map((part) => substitute(part, placeholders(world, port, folder))).join('\n');
    writeFileSync(path.join(folder, 'example.sh'), script);
    return runGroup('bash', [path.join(folder, 'example.sh')], ws, env, timeoutMs);
  }
  const program = path.join(folder, 'example.mjs');
  if (/^export /m.test(block.code)) {
    // A module file (a tool module): imported as it is, and it must export something.
    writeFileSync(path.join(folder, 'module.mjs'), transpile(block.code));
    writeFileSync(program, "const m = await import('./module.mjs'); if (Object.keys(m).length === 0) throw new Error('the module exports nothing');\n");
    return runGroup(process.execPath, [program], ws, env, timeoutMs);
  }
  writeFileSync(program, await typescriptProgram(block, world, port, folder));
  return runGroup(process.execPath, [program], ws, env, timeoutMs);
}
