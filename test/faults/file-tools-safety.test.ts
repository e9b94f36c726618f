/**
 * The file tools against hostile input (issue 8, section 9): regex blow-up, FIFOs and pseudo
 * file systems under the workspace, huge trees that must stop on abort or a time limit,
 * protected paths (.git) and a workspace of / or the home folder.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { mkdir, mkdtemp, open, readFile, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/shared/config.js';
import { AbortError, ConfigError } from '../../src/shared/errors.js';
import { editFileTool, findFilesTool, grepTool, listDirTool, readFileTool, resolveWorkspaceRoot, writeFileTool } from '../../src/shared/tools/index.js';
import { pseudoFsDevices } from '../../src/shared/tools/pseudo-fs.js';
import { walkFiles } from '../../src/shared/tools/walk.js';
import { callTool, toolContext, toolError } from '../helpers/sandbox.js';

let base: string;
let ws: string;

beforeAll(async () => {
  base = await realpath(await mkdtemp(path.join(os.tmpdir(), 'forkpool-safety-')));
  ws = path.join(base, 'ws');
  await mkdir(path.join(ws, 'src'), { recursive: true });
  await writeFile(path.join(ws, 'src', 'a.txt'), 'needle here\n');
  await writeFile(path.join(ws, 'redos.txt'), `${'a'.repeat(31)}!\n${'a'.repeat(5000)}!\n`);
  execFileSync('mkfifo', [path.join(ws, 'pipe')]);
  execFileSync('mkfifo', [path.join(ws, 'src', 'pipe2')]);
});
afterAll(async () => {
  // A proc mount left by a failed test must go before the folder is removed.
  try {
    execFileSync('umount', ['-l', path.join(ws, 'mnt-proc')], { stdio: 'ignore' });
  } catch {
    // not mounted
  }
  await rm(base, { recursive: true, force: true });
});

describe('grep regular expressions run in linear time', () => {
  it('(a+)+$ on 31 (and 5,000) a\'s then "!" ends at once, and still matches what it should', async () => {
    const out = await callTool(grepTool, { pattern: '(a+)+$', path: 'redos.txt' }, toolContext(ws));
    expect(out).toMatch(/No matches/);
    expect(await callTool(grepTool, { pattern: '(a+)+!$', path: 'redos.txt' }, toolContext(ws))).toMatch(/^redos\.txt:1: a{31}!\nredos\.txt:2: /);
  });

  it.each([
    ['(a)\\1', /backreferences/],
    ['(?<n>a)\\k<n>', /backreferences/],
    ['foo(?=bar)', /lookahead\/lookbehind/],
    ['(?<!x)y', /lookahead\/lookbehind/],
  ])('%s is refused, naming what is unsupported', async (pattern, what) => {
    const error = await toolError(callTool(grepTool, { pattern }, toolContext(ws)));
    expect(error.code).toBe('TOOL_ARGUMENTS_INVALID');
    expect(error.message).toMatch(what);
    expect(error.message).toMatch(/linear time/);
  });

  it('a JavaScript syntax error is reported as one; JavaScript escapes and named groups work', async () => {
    const error = await toolError(callTool(grepTool, { pattern: '(unclosed' }, toolContext(ws)));
    expect(error.message).toMatch(/invalid regular expression "\(unclosed"/);
    expect(await callTool(grepTool, { pattern: '\\u006eeedle\\s(?<w>h)ere', path: 'src' }, toolContext(ws))).toContain('src/a.txt:1: needle here');
    expect(await callTool(grepTool, { pattern: '\\\\1|NEEDLE', ignore_case: true, path: 'src' }, toolContext(ws))).toContain('src/a.txt:1:');
  });
});

describe('special files and pseudo file systems', () => {
  it('grep and find_files skip FIFOs (never open one), read_file refuses one without blocking', async () => {
    expect(await callTool(grepTool, { pattern: 'needle' }, toolContext(ws))).toContain('src/a.txt:1: needle here');
    expect(await callTool(grepTool, { pattern: 'x', path: 'pipe' }, toolContext(ws)).catch((e: unknown) => e)).toMatchObject({
      code: 'TOOL_FAILED',
      message: expect.stringMatching(/not a regular file/),
    });
    const found = await callTool(findFilesTool, { pattern: '**/*' }, toolContext(ws));
    expect(found).not.toContain('pipe');
    expect(found).toContain('src/a.txt');
    const error = await toolError(callTool(readFileTool, { path: 'src/pipe2' }, toolContext(ws)));
    expect(error.message).toMatch(/not a regular file/);
  });

  it('the pseudo file system list holds /proc and /sys', async () => {
    const { statSync } = await import('node:fs');
    const devices = await pseudoFsDevices();
    expect(devices.has(statSync('/proc').dev)).toBe(true);
    expect(devices.has(statSync('/sys').dev)).toBe(true);
  });

  // A real proc mount under the workspace: grep would open /proc/kmsg and block for good.
  const canMount = process.getuid?.() === 0 && tryMountProc();
  it.skipIf(!canMount)('grep, find_files, read_file and list_dir do not enter /proc mounted inside the workspace', async () => {
    const mounted = path.join(ws, 'mnt-proc');
    mkdirSync(mounted, { recursive: true });
    execFileSync('mount', ['-t', 'proc', 'proc', mounted]);
    try {
      expect(await callTool(grepTool, { pattern: 'zz-not-there-zz' }, toolContext(ws))).toMatch(/No matches/);
      expect(await callTool(grepTool, { pattern: 'zz-not-there-zz', path: 'mnt-proc' }, toolContext(ws)).catch((e: unknown) => e)).toMatchObject({
        code: 'PATH_OUTSIDE_WORKSPACE',
      });
      expect(await callTool(findFilesTool, { pattern: '**/kmsg' }, toolContext(ws))).toMatch(/No files match/);
      expect((await toolError(callTool(readFileTool, { path: 'mnt-proc/self/environ' }, toolContext(ws)))).code).toBe('PATH_OUTSIDE_WORKSPACE');
      expect((await toolError(callTool(listDirTool, { path: 'mnt-proc' }, toolContext(ws)))).code).toBe('PATH_OUTSIDE_WORKSPACE');
    } finally {
      execFileSync('umount', ['-l', mounted]);
    }
  });
});

function tryMountProc(): boolean {
  const probe = path.join(os.tmpdir(), `forkpool-mount-probe-${process.pid}`);
  try {
    mkdirSync(probe, { recursive: true });
    execFileSync('mount', ['-t', 'proc', 'proc', probe], { stdio: 'ignore' });
    execFileSync('umount', ['-l', probe], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

describe('huge trees: abort and the time limit', () => {
  let tree: string;
  beforeAll(async () => {
    tree = path.join(base, 'tree');
    // 40 folders × 100 files, a tiny "huge tree" that still takes far more than 1 ms to walk.
    for (let d = 0; d < 40; d++) {
      const dir = path.join(tree, `d${d}`);
      await mkdir(dir, { recursive: true });
      await Promise.all(Array.from({ length: 100 }, (_, f) => writeFile(path.join(dir, `f${f}.txt`), 'hay\n')));
    }
  });

  it('the walk stops at the first entry after an abort (counted in entries, not time), closing every descriptor', async () => {
    const { readdirSync } = await import('node:fs');
    const fdsBefore = readdirSync('/proc/self/fd').length;
    const controller = new AbortController();
    let entries = 0;
    let afterAbort = 0;
    const start = await open(tree, 'r');
    try {
      const walk = walkFiles(start, tree, {
        signal: controller.signal,
        toolName: 'grep',
        skipDirs: [],
        pseudoDevices: await pseudoFsDevices(),
        onTick: () => {
          if (controller.signal.aborted) afterAbort++;
          else if (++entries === 500) controller.abort(new Error('cancelled'));
        },
      });
      await expect(
        (async () => {
          for await (const _file of walk) {
            // consume
          }
        })(),
      ).rejects.toBeInstanceOf(AbortError);
    } finally {
      await start.close();
    }
    expect(entries).toBe(500);
    expect(afterAbort).toBe(0);
    expect(readdirSync('/proc/self/fd').length).toBeLessThanOrEqual(fdsBefore);
  });

  it('an abort ends grep and find_files with AbortError', async () => {
    for (const [tool, args] of [
      [grepTool, { pattern: 'needle' }],
      [findFilesTool, { pattern: '**/*.md' }],
    ] as const) {
      const controller = new AbortController();
      const running = callTool(tool, args, toolContext(tree, { signal: controller.signal }));
      controller.abort(new Error('cancelled'));
      await expect(running).rejects.toBeInstanceOf(AbortError);
    }
  });

  it('grep and find_files end with TOOL_TIMEOUT at their time limit', async () => {
    for (const [tool, args] of [
      [grepTool, { pattern: 'needle' }],
      [findFilesTool, { pattern: '**/*.md' }],
    ] as const) {
      const error = await toolError(callTool(tool, args, toolContext(tree, { limits: { ...toolContext(tree).limits, searchTimeoutMs: 1 } })));
      expect(error.code).toBe('TOOL_TIMEOUT');
      expect(error.message).toMatch(/time limit/);
    }
  });
});

describe('protected paths', () => {
  beforeAll(async () => {
    await mkdir(path.join(ws, '.git', 'hooks'), { recursive: true });
    await writeFile(path.join(ws, '.git', 'config'), '[core]\n');
    await mkdir(path.join(ws, 'sub', '.git'), { recursive: true });
    await symlink('.git/hooks', path.join(ws, 'hooks-link'));
  });

  it.each(['.git/hooks/pre-commit', '.git/config', 'sub/.git/x', './.git/new-dir/file', '.GIT/config', 'hooks-link/post-checkout'])(
    'write_file refuses %s',
    async (p) => {
      const error = await toolError(callTool(writeFileTool, { path: p, content: '#!/bin/sh\necho pwned\n' }, toolContext(ws)));
      expect(error.code).toBe('PERMISSION_DENIED');
      expect(error.message).toMatch(/is protected .*protectedPaths/);
    },
  );

  it('edit_file refuses .git/config; the files are unchanged; allowProtectedWrites lets both through', async () => {
    const error = await toolError(callTool(editFileTool, { path: '.git/config', old_text: '[core]', new_text: '[core]\n\thooksPath = /tmp' }, toolContext(ws)));
    expect(error.code).toBe('PERMISSION_DENIED');
    expect(await readFile(path.join(ws, '.git', 'config'), 'utf8')).toBe('[core]\n');
    await expect(readFile(path.join(ws, '.git', 'hooks', 'pre-commit'))).rejects.toMatchObject({ code: 'ENOENT' });
    const allowed = toolContext(ws, { policy: { allowProtectedWrites: true } });
    expect(await callTool(editFileTool, { path: '.git/config', old_text: '[core]', new_text: '[core]\n' }, allowed)).toMatch(/Edited \.git\/config/);
    expect(await callTool(writeFileTool, { path: '.git/hooks/x', content: 'ok' }, allowed)).toMatch(/Created \.git\/hooks\/x/);
  });

  it('configured entries: a name protects that segment anywhere, a path its subtree only', async () => {
    const policy = { protectedPaths: ['.env', 'config/secrets'] };
    expect((await toolError(callTool(writeFileTool, { path: 'app/.env', content: 'x' }, toolContext(ws, { policy })))).code).toBe('PERMISSION_DENIED');
    expect((await toolError(callTool(writeFileTool, { path: 'config/secrets/key', content: 'x' }, toolContext(ws, { policy })))).code).toBe(
      'PERMISSION_DENIED',
    );
    expect(await callTool(writeFileTool, { path: 'config/public/key', content: 'x' }, toolContext(ws, { policy }))).toMatch(/Created/);
    // .git is no longer in this list.
    expect(await callTool(writeFileTool, { path: '.git/info', content: 'x' }, toolContext(ws, { policy }))).toMatch(/Created/);
  });
});

describe('a workspace of / or the home folder', () => {
  it.each(['/', os.homedir(), `${os.homedir()}/.`])('%s is refused unless allowBroadWorkspace', async (root) => {
    let error: unknown;
    try {
      parseConfig({ workspaceRoot: root });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const issue = (error as ConfigError).issues[0];
    expect(issue?.field).toBe('workspaceRoot');
    expect(issue?.expected).toMatch(/allowBroadWorkspace/);
    expect(parseConfig({ workspaceRoot: root, allowBroadWorkspace: true }).workspaceRoot).toBe(root);
  });

  it('resolveWorkspaceRoot refuses them too (a config not built by parseConfig), unless allowed', async () => {
    await expect(resolveWorkspaceRoot('/')).rejects.toBeInstanceOf(ConfigError);
    await expect(resolveWorkspaceRoot(os.homedir())).rejects.toBeInstanceOf(ConfigError);
    expect(await resolveWorkspaceRoot('/', { allowBroad: true })).toBe('/');
  });
});

describe('the new config fields', () => {
  it.each([
    [{ protectedPaths: ['../outside'] }, 'protectedPaths.0'],
    [{ protectedPaths: ['/etc'] }, 'protectedPaths.0'],
    [{ sandbox: 'docker' }, 'sandbox'],
    [{ sandboxReadPaths: ['relative/dir'] }, 'sandboxReadPaths.0'],
    [{ bwrapPath: 'bwrap' }, 'bwrapPath'],
    [{ toolLimits: { searchTimeoutMs: 0 } }, 'toolLimits.searchTimeoutMs'],
  ])('%j is refused naming %s', (input, field) => {
    let error: unknown;
    try {
      parseConfig({ workspaceRoot: base, ...input });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).issues.map((i) => i.field)).toEqual([field]);
  });

  it('defaults: sandbox auto, no network, .git protected; toolPolicyFrom carries them', async () => {
    const { toolPolicyFrom } = await import('../../src/shared/tools/index.js');
    const config = parseConfig({ workspaceRoot: base });
    expect(toolPolicyFrom(config)).toEqual({
      sandbox: 'auto',
      bwrapPath: '/usr/bin/bwrap',
      network: false,
      readPaths: [],
      protectedPaths: ['.git'],
      allowProtectedWrites: false,
      hiddenPaths: [],
    });
  });
});
