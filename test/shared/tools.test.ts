import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, stat, symlink, truncate, writeFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolLimits } from '../../src/shared/config.js';
import { DEFAULTS } from '../../src/shared/defaults.js';
import { BUILTIN_TOOL_NAMES, GATED_TOOLS } from '../../src/shared/fixed-limits.js';
import { AbortError, ConfigError, ToolError } from '../../src/shared/errors.js';
import {
  BUILTIN_TOOLS,
  builtinTools,
  displayPath,
  redactSecrets,
  resolveInWorkspace,
  resolveWorkspaceRoot,
  scrubEnv,
  toOpenAITool,
} from '../../src/shared/tools/index.js';
import { FileReadLog } from '../../src/shared/tools/file-reads.js';
import { DEFAULT_TOOL_POLICY } from '../../src/shared/tools/policy.js';
import type { ToolContext, ToolDefinition } from '../../src/shared/tools/types.js';
import { REPO_ROOT } from '../helpers/cli.js';

const run = promisify(execFile);

const cleanup: string[] = [];
let ws: string; // real path of the workspace
let outside: string; // real path of a directory next to it

async function tempDir(prefix: string): Promise<string> {
  const dir = await resolveWorkspaceRoot(await mkdtemp(path.join(os.tmpdir(), prefix)));
  cleanup.push(dir);
  return dir;
}

function ctx(overrides: Partial<ToolLimits> = {}, extra: Partial<ToolContext> = {}): ToolContext {
  return {
    workspaceRoot: ws,
    limits: { ...DEFAULTS.tools, ...overrides },
    signal: new AbortController().signal,
    permissions: { check: async () => true },
    env: scrubEnv(process.env),
    ...extra,
  };
}

/** Validates the arguments like the tool loop does, then runs the tool. */
async function call(tool: ToolDefinition, args: unknown, context: ToolContext = ctx()): Promise<string> {
  return tool.run(tool.parameters.parse(args), context);
}

async function rejectsWith(promise: Promise<unknown>, code: string, message?: RegExp): Promise<ToolError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ToolError);
  const toolError = error as ToolError;
  expect(toolError.code).toBe(code);
  if (message) expect(toolError.message).toMatch(message);
  return toolError;
}

beforeAll(async () => {
  ws = await tempDir('forkpool-ws-');
  outside = await tempDir('forkpool-out-');
  await writeFile(path.join(outside, 'secret.txt'), 'top secret\n');
  await mkdir(path.join(ws, 'src', 'deep'), { recursive: true });
  await mkdir(path.join(ws, 'node_modules', 'pkg'), { recursive: true });
  await writeFile(path.join(ws, 'src', 'a.ts'), 'export const alpha = 1;\n// TODO: alpha\n');
  await writeFile(path.join(ws, 'src', 'b.ts'), 'export const beta = 2;\n');
  await writeFile(path.join(ws, 'src', 'deep', 'c.md'), '# Alpha notes\n');
  await writeFile(path.join(ws, 'node_modules', 'pkg', 'index.ts'), 'export const alpha = "dep";\n');
  await writeFile(path.join(ws, 'lines.txt'), Array.from({ length: 50 }, (_, i) => `line ${i + 1}`).join('\n') + '\n');
  await writeFile(path.join(ws, 'bin.dat'), Buffer.from([0x61, 0x6c, 0x70, 0x68, 0x61, 0x00, 0x01, 0x02]));
  await symlink(path.join(outside, 'secret.txt'), path.join(ws, 'link-file'));
  await symlink(outside, path.join(ws, 'link-dir'));
  await symlink(path.join(outside, 'missing.txt'), path.join(ws, 'dangling'));
});

afterAll(async () => {
  for (const dir of cleanup) await rm(dir, { recursive: true, force: true });
});

describe('sandbox', () => {
  it('resolves the workspace root or rejects with a config error', async () => {
    expect(await resolveWorkspaceRoot(ws)).toBe(ws);
    await expect(resolveWorkspaceRoot(path.join(ws, 'nope'))).rejects.toBeInstanceOf(ConfigError);
    await expect(resolveWorkspaceRoot(path.join(ws, 'lines.txt'))).rejects.toThrow(/not a directory/);
  });

  it('allows paths inside the workspace, relative or absolute', async () => {
    expect(await resolveInWorkspace(ws, 'src/a.ts', 't')).toBe(path.join(ws, 'src/a.ts'));
    expect(await resolveInWorkspace(ws, path.join(ws, 'src/a.ts'), 't')).toBe(path.join(ws, 'src/a.ts'));
    expect(await resolveInWorkspace(ws, 'src/../lines.txt', 't')).toBe(path.join(ws, 'lines.txt'));
    expect(await resolveInWorkspace(ws, 'new/dir/file.txt', 't')).toBe(path.join(ws, 'new/dir/file.txt'));
    expect(displayPath(ws, path.join(ws, 'src', 'a.ts'))).toBe('src/a.ts');
    expect(displayPath(ws, ws)).toBe('.');
  });

  it.each([
    ['../x', /outside the workspace/],
    ['/etc/passwd', /outside the workspace/],
    ['/proc/self/environ', /pseudo-filesystem/],
    ['src/a\0.ts', /NUL byte/],
    ['link-file', /symbolic link/],
    ['link-dir/secret.txt', /symbolic link/],
    ['link-dir/new.txt', /symbolic link/],
    ['dangling', /does not exist/],
  ])('refuses %j', async (userPath, message) => {
    const error = await rejectsWith(resolveInWorkspace(ws, userPath, 'read_file'), 'PATH_OUTSIDE_WORKSPACE', message);
    expect(error.toolName).toBe('read_file');
  });

  it('reports a missing path when it must exist', async () => {
    await rejectsWith(resolveInWorkspace(ws, 'nope.txt', 'read_file', { mustExist: true }), 'TOOL_FAILED', /does not exist/);
  });
});

describe('secrets', () => {
  it('scrubs secret variables and keeps ordinary ones', () => {
    const env = scrubEnv({
      PATH: '/bin',
      HOME: '/home/u',
      LANG: 'C.UTF-8',
      TERM: 'xterm',
      OPENAI_API_KEY: 'sk-1',
      OPENAI_BASE_URL: 'http://x',
      GITHUB_TOKEN: 'g',
      AWS_REGION: 'eu',
      DB_PASSWORD: 'p',
      MY_SESSION: 's',
      DATABASE_URL: 'postgres://user:pw@db/app',
      UNDEF: undefined,
    });
    expect(env).toEqual({ PATH: '/bin', HOME: '/home/u', LANG: 'C.UTF-8', TERM: 'xterm' });
  });

  it('redacts secrets of length >= 4', () => {
    expect(redactSecrets('key=abcd1234 and abc', ['abcd1234', 'abc'])).toBe('key=[REDACTED] and abc');
  });
});

describe('read_file', () => {
  const tool = BUILTIN_TOOLS.read_file;

  it('numbers lines and reads a window with offset and limit', async () => {
    const all = await call(tool, { path: 'lines.txt' });
    expect(all.split('\n')[0]).toBe('    1\tline 1');
    expect(all).toContain('   50\tline 50');
    const part = await call(tool, { path: 'lines.txt', offset: 10, limit: 3 });
    expect(part).toContain('   10\tline 10\n   11\tline 11\n   12\tline 12');
    expect(part).not.toContain('line 13');
    expect(part).toMatch(/lines 10-12 of 50.*offset: 13/);
    expect(await call(tool, { path: 'lines.txt', offset: 99 })).toMatch(/past the end/);
  });

  it('refuses a file over the size limit unless given a window, which it streams', async () => {
    const limits = { readFileMaxBytes: 100 };
    await rejectsWith(call(tool, { path: 'lines.txt' }, ctx(limits)), 'TOOL_FAILED', /over the 100-byte limit.*offset/);
    const out = await call(tool, { path: 'lines.txt', offset: 49, limit: 5 }, ctx(limits));
    expect(out).toContain('   49\tline 49\n   50\tline 50');
  });

  /** Bytes this process read through read(2) and friends (Linux /proc/self/io `rchar`). */
  const bytesReadByProcess = async () => Number(/^rchar: (\d+)$/m.exec(await readFile('/proc/self/io', 'utf8'))?.[1]);

  it('a 100 GB sparse file with a text head: reads only what it returns, stops at the hole and says so', async () => {
    // 200 lines of text (about 12 KB, so the binary sniff of the first 8 KiB passes), then a 100 GB hole.
    const head = Array.from({ length: 200 }, (_, i) => `line ${i + 1} ${'t'.repeat(50)}`).join('\n');
    const file = path.join(ws, 'sparse.log');
    await writeFile(file, `${head}\n`);
    await truncate(file, 100 * 1024 ** 3);
    const before = await bytesReadByProcess();
    const out = await call(tool, { path: 'sparse.log', offset: 150, limit: 400 });
    const window = await call(tool, { path: 'sparse.log', offset: 300 });
    const read = (await bytesReadByProcess()) - before;
    expect(read).toBeLessThan(4 * 1024 * 1024);
    expect(out).toContain(`  150\tline 150 `);
    expect(out).toContain(`  200\tline 200 `);
    expect(out).not.toContain('end of file');
    expect(out).toMatch(
      /\[reading stopped at a NUL byte at byte \d+ \(binary data or a sparse hole follows; read_file reads text only\); nothing after it is shown\]/,
    );
    expect(window).toMatch(/reading stopped at a NUL byte .* before line 300; use grep/);
    await rm(file);
  });

  it('a large text file: one call reads at most readFileMaxScanBytes, skipped lines included, and says where it stopped', async () => {
    await writeFile(path.join(ws, 'big.log'), `${'y'.repeat(99)}\n`.repeat(30_000)); // 3 MB
    const limits = { readFileMaxScanBytes: 1_048_576 };
    const before = await bytesReadByProcess();
    const out = await call(tool, { path: 'big.log', offset: 25_000, limit: 5 }, ctx(limits));
    expect((await bytesReadByProcess()) - before).toBeLessThan(2 * 1_048_576);
    expect(out).toMatch(/reading stopped at the 1048576-byte scan limit of one call before line 25000; use grep/);
    expect(await call(tool, { path: 'big.log', offset: 10_000, limit: 2 }, ctx(limits))).toMatch(/^10000\ty+\n10001\ty+\n/);
    await rm(path.join(ws, 'big.log'));
  });

  it('refuses directories, binary files and escapes', async () => {
    await rejectsWith(call(tool, { path: 'src' }), 'TOOL_FAILED', /is a directory/);
    await rejectsWith(call(tool, { path: 'bin.dat' }), 'TOOL_FAILED', /binary/);
    await rejectsWith(call(tool, { path: '../x' }), 'PATH_OUTSIDE_WORKSPACE');
    await rejectsWith(call(tool, { path: '/etc/passwd' }), 'PATH_OUTSIDE_WORKSPACE');
    await rejectsWith(call(tool, { path: '/proc/self/environ' }), 'PATH_OUTSIDE_WORKSPACE');
    await rejectsWith(call(tool, { path: 'link-file' }), 'PATH_OUTSIDE_WORKSPACE', /link-file/);
    await rejectsWith(call(tool, { path: 'a\0b' }), 'PATH_OUTSIDE_WORKSPACE');
  });

  it('cuts very long lines and keeps output within the budget', async () => {
    await writeFile(path.join(ws, 'long.txt'), `${'x'.repeat(5000)}\n`.repeat(40));
    const out = await call(tool, { path: 'long.txt' }, ctx({ outputMaxChars: 10_000 }));
    expect(out.length).toBeLessThanOrEqual(10_000);
    expect(out).toMatch(/line cut/);
    expect(out).toMatch(/offset: \d+/);
  });
});

describe('list_dir', () => {
  it('lists sorted entries with directories marked', async () => {
    const out = await call(BUILTIN_TOOLS.list_dir, {});
    const lines = out.split('\n');
    expect(lines.slice(1)).toEqual([...lines.slice(1)].sort());
    expect(lines).toContain('src/');
    expect(lines).toContain('lines.txt');
    expect(lines).toContain('link-dir@');
    expect(await call(BUILTIN_TOOLS.list_dir, { path: 'src' })).toContain('deep/');
  });

  it('caps the listing and refuses escapes', async () => {
    const out = await call(BUILTIN_TOOLS.list_dir, {}, ctx({ findMaxResults: 2 }));
    expect(out).toMatch(/more entries not shown/);
    await rejectsWith(call(BUILTIN_TOOLS.list_dir, { path: 'link-dir' }), 'PATH_OUTSIDE_WORKSPACE');
    await rejectsWith(call(BUILTIN_TOOLS.list_dir, { path: '..' }), 'PATH_OUTSIDE_WORKSPACE');
  });

  it('shows exactly the first entries by name, without a gap, and says how many more (count cap and output budget)', async () => {
    // 700 long names created in shuffled order: 500 of them are ~100,000 characters, over the 30,000 output budget.
    const names = Array.from({ length: 700 }, (_, i) => `${String(i).padStart(4, '0')}-${'n'.repeat(190)}`);
    const shuffled = [...names].sort((a, b) => ((a.charCodeAt(1) * 7 + a.charCodeAt(3) * 13) % 11) - ((b.charCodeAt(1) * 7 + b.charCodeAt(3) * 13) % 11));
    await mkdir(path.join(ws, 'many'));
    await Promise.all(shuffled.map((name) => writeFile(path.join(ws, 'many', name), '')));
    const listed = (out: string) => out.split('\n').filter((line) => /^\d{4}-n+$/.test(line));
    const out = await call(BUILTIN_TOOLS.list_dir, { path: 'many' });
    const shown = listed(out);
    expect(out.startsWith('many/ (700 entries)\n')).toBe(true);
    expect(shown.length).toBeGreaterThan(100);
    expect(shown).toEqual(names.slice(0, shown.length));
    expect(out).toContain(`[the first ${shown.length} by name shown; ${700 - shown.length} more entries not shown.`);
    expect(out.length).toBeLessThanOrEqual(DEFAULTS.tools.outputMaxChars);
    // Short names: the count cap decides, and it is the first 50 too.
    const capped = await call(BUILTIN_TOOLS.list_dir, { path: 'many' }, ctx({ findMaxResults: 50, outputMaxChars: 1_000_000 }));
    expect(listed(capped)).toEqual(names.slice(0, 50));
    expect(capped).toContain('[the first 50 by name shown; 650 more entries not shown.');
    await rm(path.join(ws, 'many'), { recursive: true });
  });
});

describe('find_files', () => {
  const tool = BUILTIN_TOOLS.find_files;

  it('finds by glob, skips node_modules and does not follow symlinks', async () => {
    const out = await call(tool, { pattern: '**/*.ts' });
    expect(out).toContain('src/a.ts');
    expect(out).toContain('src/b.ts');
    expect(out).not.toContain('node_modules');
    expect(await call(tool, { pattern: '**/secret.txt' })).toMatch(/No files match/);
    expect(await call(tool, { pattern: '*.md', path: 'src/deep' })).toContain('src/deep/c.md');
  });

  it('caps results with a note and refuses patterns that leave the search path', async () => {
    expect(await call(tool, { pattern: '**/*' }, ctx({ findMaxResults: 2 }))).toMatch(/showing the first 2/);
    await rejectsWith(call(tool, { pattern: '../**' }), 'PATH_OUTSIDE_WORKSPACE');
    await rejectsWith(call(tool, { pattern: '/etc/*' }), 'PATH_OUTSIDE_WORKSPACE');
    await rejectsWith(call(tool, { pattern: '*', path: 'link-dir' }), 'PATH_OUTSIDE_WORKSPACE');
  });
});

describe('grep', () => {
  const tool = BUILTIN_TOOLS.grep;
  let tree: string;

  beforeAll(async () => {
    tree = path.join(ws, 'tree');
    await mkdir(path.join(tree, 'sub'), { recursive: true });
    await writeFile(path.join(tree, 'one.txt'), 'nothing\nneedle here\n');
    await writeFile(path.join(tree, 'sub', 'two.js'), 'const Needle = 1;\n');
    await writeFile(path.join(tree, 'big.txt'), `${'needle filler line\n'.repeat(2000)}`); // ~38 KB
    await writeFile(path.join(tree, 'blob.bin'), Buffer.concat([Buffer.from('needle'), Buffer.alloc(16), Buffer.from('needle\n')]));
    await writeFile(path.join(tree, 'wide.txt'), `${'a'.repeat(1000)}needle${'b'.repeat(1000)}\n`);
  });

  it('prints path:line: text, skipping large and binary files', async () => {
    const out = await call(tool, { pattern: 'needle', path: 'tree' }, ctx({ grepMaxFileBytes: 10_000 }));
    expect(out).toContain('tree/one.txt:2: needle here');
    expect(out).not.toContain('big.txt');
    expect(out).not.toContain('blob.bin');
    expect(out).not.toContain('two.js');
    expect(out).toMatch(/skipped 1 file over 10000 bytes, 1 binary file/);
    const wide = out.split('\n').find((l) => l.startsWith('tree/wide.txt:1: '));
    expect(wide).toBeDefined();
    expect(wide!.length).toBeLessThan(400);
    expect(wide).toContain('needle');
  });

  it('supports ignore_case, glob and max_results', async () => {
    expect(await call(tool, { pattern: 'needle', path: 'tree', ignore_case: true, glob: '*.js' })).toContain('tree/sub/two.js:1: const Needle = 1;');
    const capped = await call(tool, { pattern: 'needle', path: 'tree/big.txt', max_results: 5 });
    expect(capped.split('\n').filter((l) => l.startsWith('tree/big.txt:'))).toHaveLength(5);
    expect(capped).toMatch(/stopped at 5 matches/);
  });

  it('skips node_modules unless searching inside it, and refuses bad input', async () => {
    expect(await call(tool, { pattern: 'alpha' })).not.toContain('node_modules');
    expect(await call(tool, { pattern: 'alpha', path: 'node_modules' })).toContain('node_modules/pkg/index.ts:1:');
    await rejectsWith(call(tool, { pattern: '(unclosed' }), 'TOOL_ARGUMENTS_INVALID', /invalid regular expression/);
    await rejectsWith(call(tool, { pattern: 'x', path: '../../' }), 'PATH_OUTSIDE_WORKSPACE');
    expect(await call(tool, { pattern: 'top secret' })).toMatch(/No matches/);
  });

  it('stops when the signal is aborted', async () => {
    const controller = new AbortController();
    controller.abort(new Error('cancelled'));
    await expect(call(tool, { pattern: 'needle' }, ctx({}, { signal: controller.signal }))).rejects.toBeInstanceOf(AbortError);
  });

  it('records each file it matched with the hash of the whole file, read to its end or cut short at the match cap', async () => {
    // Over 64 KiB: hashed over several chunks as it is searched.
    await writeFile(path.join(tree, 'sub', 'long.txt'), `${'x'.repeat(70_000)}\nneedle at the end\n`);
    const sha256 = async (rel: string) =>
      createHash('sha256')
        .update(await readFile(path.join(ws, rel)))
        .digest('hex');
    const reads = new FileReadLog();
    await call(tool, { pattern: 'needle', path: 'tree', glob: '{one,long}.txt' }, ctx({}, { reads }));
    const recorded = new Map(reads.entries().map((r) => [r.path, r]));
    expect([...recorded.keys()].sort()).toEqual(['tree/one.txt', 'tree/sub/long.txt']);
    for (const [rel, read] of recorded) {
      const stats = await stat(path.join(ws, rel));
      expect(read).toMatchObject({ sha256: await sha256(rel), size: stats.size, mtimeMs: stats.mtimeMs, ranges: [] });
    }
    // Stopped after 3 of big.txt's 2,000 matches: the hash is still of the whole file.
    const capped = new FileReadLog();
    await call(tool, { pattern: 'needle', path: 'tree/big.txt', max_results: 3 }, ctx({}, { reads: capped }));
    expect(capped.entries()).toEqual([expect.objectContaining({ path: 'tree/big.txt', sha256: await sha256('tree/big.txt') })]);
  });
});

describe('bash', () => {
  const tool = BUILTIN_TOOLS.bash;

  it('runs in the workspace root and reports the exit code', async () => {
    const out = await call(tool, { command: 'pwd; echo err >&2; exit 3' });
    expect(out).toContain(ws);
    expect(out).toContain('err');
    expect(out).toMatch(/\[exit code: 3\]$/);
  });

  it('kills the whole process group on timeout (sandbox none; bubblewrap: test/faults/bash-sandbox.test.ts)', async () => {
    const none = ctx({}, { policy: { ...DEFAULT_TOOL_POLICY, sandbox: 'none' } });
    const out = await call(tool, { command: 'sleep 30 & echo $! > bg.pid; echo started; wait', timeout_ms: 300 }, none);
    expect(out).toContain('started');
    expect(out).toMatch(/timed out after 300 ms/);
    const pid = Number((await readFile(path.join(ws, 'bg.pid'), 'utf8')).trim());
    expect(await isGone(pid)).toBe(true);
  });

  it('is aborted by the signal', async () => {
    const controller = new AbortController();
    const running = call(tool, { command: 'sleep 30' }, ctx({}, { signal: controller.signal }));
    setTimeout(() => controller.abort(new Error('stop')), 50);
    await expect(running).rejects.toBeInstanceOf(AbortError);
  });

  it('never shows secrets from the environment', async () => {
    process.env.OPENAI_API_KEY = 'sk-test-secret-123';
    try {
      for (const env of [scrubEnv(process.env), { ...process.env } as Record<string, string>]) {
        const out = await call(tool, { command: 'env' }, ctx({}, { env }));
        expect(out).toContain('PATH=');
        expect(out).not.toContain('sk-test-secret-123');
        expect(out).not.toContain('OPENAI_API_KEY');
      }
    } finally {
      delete process.env.OPENAI_API_KEY;
    }
  });

  it('caps long output keeping head and tail', async () => {
    const out = await call(tool, { command: 'echo START; yes line | head -n 20000; echo END' }, ctx({ outputMaxChars: 1000 }));
    expect(out.length).toBeLessThanOrEqual(1000);
    expect(out.startsWith('START')).toBe(true);
    expect(out).toMatch(/characters omitted/);
    expect(out).toMatch(/END\n\[exit code: 0\]$/);
  });
});

describe('write_file and edit_file', () => {
  const exists = (rel: string) =>
    stat(path.join(ws, rel)).then(
      () => true,
      () => false,
    );

  it('a path that would fail at its end (3,000 folders deep, a 300-byte name, past PATH_MAX) is refused before any folder is made', async () => {
    const tooDeep = `deep-a/${'a/'.repeat(3_000)}file.txt`;
    const longName = `deep-b/${'b/'.repeat(10)}${'x'.repeat(300)}.txt`;
    const longPath = `deep-c/${`${'c'.repeat(200)}/`.repeat(21)}file.txt`;
    for (const [userPath, why] of [
      [tooDeep, /3001 folders deep, over the limit of 128/],
      [longName, /a name in it is 304 bytes long, over the file system's limit of 255/],
      [longPath, /the full path is \d+ bytes long, over the file system's limit of 4095/],
    ] as const) {
      const error = await rejectsWith(call(BUILTIN_TOOLS.write_file, { path: userPath, content: 'x' }), 'TOOL_FAILED', why);
      expect(error.message).toMatch(/nothing was created$/);
    }
    expect([await exists('deep-a'), await exists('deep-b'), await exists('deep-c')]).toEqual([false, false, false]);
    // 128 folders deep is still fine.
    expect(await call(BUILTIN_TOOLS.write_file, { path: `deep-d/${'d/'.repeat(127)}ok.txt`, content: 'ok' })).toMatch(/^Created/);
    await rm(path.join(ws, 'deep-d'), { recursive: true });
  });

  it('a write that fails after its folders were made (file size limit, EFBIG) removes the new file and those folders, and only those', async () => {
    await mkdir(path.join(ws, 'kept', 'old'), { recursive: true });
    const script = `const [tools, root] = process.argv.slice(1);
const { BUILTIN_TOOLS } = await import(tools);
const { DEFAULTS } = await import(tools.replace('tools/index.js', 'defaults.js'));
const ctx = { workspaceRoot: root, limits: DEFAULTS.tools, signal: new AbortController().signal, permissions: { check: async () => true }, env: {} };
for (const path of ['kept/old/new/a/b/c/big.txt', 'kept/old/small.txt']) {
  try { console.log(JSON.stringify({ path, output: await BUILTIN_TOOLS.write_file.run({ path, content: 'z'.repeat(path.includes('big') ? 200_000 : 10) }, ctx) })); }
  catch (error) { console.log(JSON.stringify({ path, error: error.message, code: error.code })); }
}`;
    const tools = path.join(REPO_ROOT, 'dist', 'shared', 'tools', 'index.js');
    // ulimit -f 64: files up to 64 KiB; a longer write fails with EFBIG (Node ignores SIGXFSZ).
    const { stdout } = await run('bash', ['-c', 'ulimit -f 64 && exec "$0" "$@"', process.execPath, '--input-type=module', '-e', script, tools, ws], {
      timeout: 30_000,
    });
    const [big, small] = stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { error?: string; code?: string; output?: string });
    expect(big).toMatchObject({ code: 'TOOL_FAILED', error: expect.stringMatching(/EFBIG.*the new file and any folders made for it were removed/) });
    expect(small?.output).toMatch(/^Created/);
    expect(await exists('kept/old/new')).toBe(false);
    expect(await exists('kept/old/small.txt')).toBe(true);
    await rm(path.join(ws, 'kept'), { recursive: true });
  });

  it('writes a new file, creating parent directories', async () => {
    const out = await call(BUILTIN_TOOLS.write_file, { path: 'out/nested/new.txt', content: 'hello\nworld\n' });
    expect(out).toMatch(/Created out\/nested\/new.txt/);
    expect(await readFile(path.join(ws, 'out/nested/new.txt'), 'utf8')).toBe('hello\nworld\n');
    expect(await call(BUILTIN_TOOLS.write_file, { path: 'out/nested/new.txt', content: 'x' })).toMatch(/Overwrote/);
  });

  it('refuses to write through symlinks or paths outside', async () => {
    const tool = BUILTIN_TOOLS.write_file;
    await rejectsWith(call(tool, { path: 'link-file', content: 'pwned' }), 'PATH_OUTSIDE_WORKSPACE');
    await rejectsWith(call(tool, { path: 'link-dir/new.txt', content: 'pwned' }), 'PATH_OUTSIDE_WORKSPACE');
    await rejectsWith(call(tool, { path: 'link-dir/sub/new.txt', content: 'pwned' }), 'PATH_OUTSIDE_WORKSPACE');
    await rejectsWith(call(tool, { path: 'dangling', content: 'pwned' }), 'PATH_OUTSIDE_WORKSPACE');
    await rejectsWith(call(tool, { path: '../escape.txt', content: 'pwned' }), 'PATH_OUTSIDE_WORKSPACE');
    expect(await readFile(path.join(outside, 'secret.txt'), 'utf8')).toBe('top secret\n');
    await expect(readFile(path.join(outside, 'new.txt'))).rejects.toThrow();
    await expect(readFile(path.join(outside, 'missing.txt'))).rejects.toThrow();
  });

  it('edits exactly one occurrence, or all with replace_all', async () => {
    const tool = BUILTIN_TOOLS.edit_file;
    const file = path.join(ws, 'edit.txt');
    await writeFile(file, 'a = 1\nb = 1\nc = 2\n');
    await rejectsWith(call(tool, { path: 'edit.txt', old_text: '= 1', new_text: '= 9' }), 'TOOL_FAILED', /occurs 2 times .*lines 1, 2.*replace_all/);
    await rejectsWith(call(tool, { path: 'edit.txt', old_text: 'zzz', new_text: 'y' }), 'TOOL_FAILED', /not found/);
    expect(await call(tool, { path: 'edit.txt', old_text: 'c = 2', new_text: 'c = $&' })).toMatch(/line 3/);
    expect(await readFile(file, 'utf8')).toBe('a = 1\nb = 1\nc = $&\n');
    expect(await call(tool, { path: 'edit.txt', old_text: '= 1', new_text: '= 9', replace_all: true })).toMatch(/2 occurrences/);
    expect(await readFile(file, 'utf8')).toBe('a = 9\nb = 9\nc = $&\n');
    await rejectsWith(call(tool, { path: 'link-file', old_text: 'top', new_text: 'x' }), 'PATH_OUTSIDE_WORKSPACE');
  });

  it('matches CRLF files with LF old_text and keeps their line endings', async () => {
    await writeFile(path.join(ws, 'crlf.txt'), 'one\r\ntwo\r\nthree\r\n');
    await call(BUILTIN_TOOLS.edit_file, { path: 'crlf.txt', old_text: 'one\ntwo', new_text: 'uno\ndos' });
    expect(await readFile(path.join(ws, 'crlf.txt'), 'utf8')).toBe('uno\r\ndos\r\nthree\r\n');
  });
});

describe('index', () => {
  it('registers every built-in tool with the right gating', () => {
    expect(Object.keys(BUILTIN_TOOLS).sort()).toEqual([...BUILTIN_TOOL_NAMES].sort());
    for (const name of BUILTIN_TOOL_NAMES) expect(BUILTIN_TOOLS[name].gated).toBe(GATED_TOOLS.includes(name));
    expect(builtinTools(['grep', 'read_file', 'grep']).map((t) => t.name)).toEqual(['grep', 'read_file']);
  });

  it('turns each tool into an OpenAI function with a compact object JSON schema (bounds stay in the validation)', () => {
    for (const tool of Object.values(BUILTIN_TOOLS)) {
      const api = toOpenAITool(tool);
      expect(api.type).toBe('function');
      expect(api.function.name).toBe(tool.name);
      const params = api.function.parameters;
      expect(params.type).toBe('object');
      expect(params).not.toHaveProperty('$schema');
      // The compact form sent to the model (issue 40); the zod schema still refuses unknown keys.
      expect(params).not.toHaveProperty('additionalProperties');
      expect(JSON.stringify(params)).not.toMatch(/"(minLength|maxLength|minimum|maximum|pattern)":[^{]/);
      expect(tool.parameters.safeParse({ not_an_argument: 1 }).success).toBe(false);
      const props = params.properties as Record<string, { type?: string }>;
      expect(Object.keys(props).length).toBeGreaterThan(0);
      for (const prop of Object.values(props)) expect(prop.type).toBeTruthy();
    }
    const grep = toOpenAITool(BUILTIN_TOOLS.grep).function.parameters;
    expect(grep.required).toEqual(['pattern']);
  });
});

/** True when the process is gone or a zombie awaiting its reaper. */
async function isGone(pid: number): Promise<boolean> {
  // The kill is sent before the tool returns; the kernel may need a moment to deliver it (longer
  // on a loaded machine). Unkilled, the process would live 30 s, far past this bound.
  for (let i = 0; i < 250; i++) {
    try {
      process.kill(pid, 0);
    } catch {
      return true;
    }
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
    if (stat === '' || / Z /.test(stat)) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return false;
}
