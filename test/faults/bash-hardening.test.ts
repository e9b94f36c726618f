/**
 * The bash sandbox's hardening (issue 18, "The sandbox"): every `.git` read-only and new ones
 * removed, /proc's kernel knobs read-only, no inherited descriptor inside, and bounded processes,
 * memory, file size and /tmp. Runs the real bubblewrap (see helpers/sandbox.ts); the descriptor
 * test runs the real CLI, pool and workers.
 */
import { spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, realpath, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/shared/config.js';
import { ConfigError } from '../../src/shared/errors.js';
import { bashTool } from '../../src/shared/tools/bash.js';
import { makeCommandCgroup } from '../../src/shared/tools/sandbox-limits.js';
import { useCleanup } from '../helpers/cleanup.js';
import { CLI_PATH, cliEnv } from '../helpers/cli.js';
import { toolMessagesOf } from '../helpers/requests.js';
import { skipWithoutBwrap, callTool, markerSleep, processesRunning, requireBwrap, toolContext, toolError } from '../helpers/sandbox.js';
import { startSim } from '../helpers/sim.js';
import { skipWithout } from '../helpers/system.js';

let base: string;
const cleanups = useCleanup();
beforeAll(async () => {
  base = await realpath(await mkdtemp(path.join(os.tmpdir(), 'forkpool-harden-')));
});
afterAll(() => rm(base, { recursive: true, force: true }));

let wsCount = 0;
async function workspace(files: Record<string, string> = {}): Promise<string> {
  const ws = path.join(base, `ws${++wsCount}`);
  await mkdir(ws);
  for (const [rel, content] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(ws, rel)), { recursive: true });
    await writeFile(path.join(ws, rel), content);
  }
  return ws;
}

/** The tool error a call ends with (fails the test if it succeeds). */
describe.skipIf(skipWithoutBwrap())('protected paths inside bubblewrap', () => {
  beforeAll(requireBwrap);

  it('every existing .git is read-only, at any depth, with what a .git file points to', async () => {
    const ws = await workspace({
      '.git/config': '[core]\n',
      'sub/.git/config': '[core]\n',
      'a/b/c/d/.git/HEAD': 'ref: refs/heads/main\n',
      // A submodule-style .git file whose git folder lives elsewhere in the workspace.
      'mod/.git': 'gitdir: ../gitdirs/mod\n',
      'gitdirs/mod/config': '[core]\n',
    });
    const command = [
      'echo "[core] fsmonitor = touch /tmp/pwned" >> sub/.git/config',
      'mkdir sub/.git/hooks',
      'echo x > a/b/c/d/.git/HEAD',
      'echo "gitdir: /tmp/evil" > mod/.git',
      'echo "[core] fsmonitor = x" >> gitdirs/mod/config',
      'mv sub/.git sub/moved',
      'echo done',
    ].join('; ');
    const out = await callTool(bashTool, { command }, toolContext(ws, { policy: { sandbox: 'bwrap' } }));
    expect(out).toMatch(/sub\/\.git\/config: Read-only file system/);
    expect(out).toMatch(/sub\/\.git\/hooks.*Read-only file system/);
    expect(out).toMatch(/\.git\/HEAD: Read-only file system/);
    expect(out).toMatch(/mod\/\.git: Read-only file system/);
    expect(out).toMatch(/gitdirs\/mod\/config: Read-only file system/);
    expect(out).toContain('done');
    expect(await readFile(path.join(ws, 'sub/.git/config'), 'utf8')).toBe('[core]\n');
    expect(await readFile(path.join(ws, 'a/b/c/d/.git/HEAD'), 'utf8')).toBe('ref: refs/heads/main\n');
    expect(await readFile(path.join(ws, 'mod/.git'), 'utf8')).toBe('gitdir: ../gitdirs/mod\n');
    expect(await readFile(path.join(ws, 'gitdirs/mod/config'), 'utf8')).toBe('[core]\n');
  });

  it('no .git can be made at the workspace root when none exists, and none is left behind', async () => {
    const ws = await workspace({ 'README.md': 'hi\n' });
    const out = await callTool(
      bashTool,
      { command: 'git init -q . ; mkdir -p .git/hooks; echo "gitdir: /tmp" > .git; ls -a' },
      toolContext(ws, { policy: { sandbox: 'bwrap' } }),
    );
    expect(out).toMatch(/Read-only file system|Is a directory/);
    expect(existsSync(path.join(ws, '.git')), 'no .git at the root after the command').toBe(false);
  });

  it.each([
    [
      'git init in a new folder, with core.fsmonitor',
      'mkdir -p newsub && git -C newsub init -q && git -C newsub config core.fsmonitor "touch /tmp/pwned"',
      'newsub/.git',
    ],
    ['a planted .git file (gitdir: pointer)', 'mkdir -p s2/x && mkdir -p s2/evil && echo "gitdir: ../evil" > s2/x/.git', 's2/x/.git'],
    ['a bare repository layout', 'git init -q --bare plain', 'plain'],
    ['a .git link', 'mkdir -p s3 && ln -s ../gitdirs s3/.git', 's3/.git'],
  ])('%s made during the command is removed and reported as a tool error', async (_name, command, planted) => {
    const ws = await workspace({ '.git/config': '[core]\n', 'gitdirs/keep': 'x\n' });
    const error = await toolError(callTool(bashTool, { command }, toolContext(ws, { policy: { sandbox: 'bwrap' } })));
    expect(error.code).toBe('PERMISSION_DENIED');
    expect(error.message).toContain(`"${planted}"`);
    expect(error.message).toMatch(/protectedPaths.*removed them/);
    expect(existsSync(path.join(ws, planted)), `${planted} is gone`).toBe(false);
    // Only the planted entry goes: its folder, the link's target and the real .git stay.
    expect(existsSync(path.join(ws, path.dirname(planted)))).toBe(true);
    expect(await readFile(path.join(ws, 'gitdirs/keep'), 'utf8')).toBe('x\n');
    expect(await readFile(path.join(ws, '.git/config'), 'utf8')).toBe('[core]\n');
  });

  it('configured protectedPaths get the same: existing ones read-only, new ones held or removed', async () => {
    const ws = await workspace({ 'config/secrets/db.txt': 'keep\n', 'deep/x.txt': 'x\n' });
    const policy = { sandbox: 'bwrap' as const, protectedPaths: ['.git', '.envrc', 'config/secrets'] };
    const error = await toolError(
      callTool(
        bashTool,
        { command: 'echo bad > config/secrets/db.txt; echo "export GIT_DIR=x" > .envrc; echo "export A=1" > deep/.envrc; echo done' },
        toolContext(ws, { policy }),
      ),
    );
    expect(error.message).toMatch(/config\/secrets\/db\.txt: Read-only file system/);
    expect(error.message).toMatch(/\.envrc: (Read-only file system|Is a directory)/);
    expect(error.message).toContain('"deep/.envrc"');
    expect(await readFile(path.join(ws, 'config/secrets/db.txt'), 'utf8')).toBe('keep\n');
    expect(existsSync(path.join(ws, '.envrc'))).toBe(false);
    expect(existsSync(path.join(ws, 'deep/.envrc'))).toBe(false);
    expect(existsSync(path.join(ws, 'deep/x.txt'))).toBe(true);
  });

  it('allowProtectedWrites lets bash write and create .git', async () => {
    const ws = await workspace({ 'sub/.git/config': '[core]\n' });
    const out = await callTool(
      bashTool,
      { command: 'echo x >> sub/.git/config && git init -q new && echo ok' },
      toolContext(ws, { policy: { sandbox: 'bwrap', allowProtectedWrites: true } }),
    );
    expect(out).toContain('ok');
    expect(existsSync(path.join(ws, 'new/.git'))).toBe(true);
  });
});

describe.skipIf(skipWithoutBwrap())('/proc and /sys inside bubblewrap', () => {
  beforeAll(requireBwrap);

  it('kernel knobs are read-only: writing kernel.core_pattern (its own value back) fails with EROFS', async () => {
    const ws = await workspace();
    // The same value goes back, so a missing fix changes nothing on this machine.
    const command = [
      'v=$(cat /proc/sys/kernel/core_pattern); printf "%s\\n" "$v" > /proc/sys/kernel/core_pattern && echo WROTE-CORE',
      "for p in /proc/sys /proc/sysrq-trigger /proc/irq /proc/bus /proc/fs; do [ -e $p ] && awk -v p=$p '$5 == p { print p, $6 }' /proc/self/mountinfo; done",
      'cat /proc/kallsyms /proc/keys 2>/dev/null | head -c 100 | wc -c',
      'ls /sys',
    ].join('; ');
    const out = await callTool(bashTool, { command }, toolContext(ws, { policy: { sandbox: 'bwrap' } }));
    expect(out).not.toContain('WROTE-CORE');
    if (process.getuid?.() === 0) expect(out).toMatch(/core_pattern: Read-only file system/);
    for (const entry of ['sys', 'sysrq-trigger', 'irq', 'bus', 'fs'].filter((e) => existsSync(`/proc/${e}`))) {
      expect(out, `/proc/${entry} is mounted read-only`).toMatch(new RegExp(`^/proc/${entry} ro,`, 'm'));
    }
    // Masked: empty.
    expect(out).toMatch(/^0$/m);
    expect(out).toMatch(/\/sys.*No such file or directory/);
  });
});

/**
 * Node itself marks a few low inherited descriptors close-on-exec at start (5 and 9 here, not 20):
 * a higher one is what reaches its children untouched.
 */
const INHERITED_FD = 20;

describe('descriptors inherited by the host process', () => {
  it.each(skipWithoutBwrap() ? ['none'] : ['bwrap', 'none'])('do not reach bash (sandbox %s; real CLI, pool and worker)', async (sandbox) => {
    const ws = await workspace({ 'one.jsonl': `${JSON.stringify({ task: 'Look at the descriptors.' })}\n` });
    await writeFile(path.join(ws, 'forkpool.config.json'), JSON.stringify({ sandbox }));
    const target = path.join(base, `fd-target-${sandbox}.txt`);
    await writeFile(target, 'original\n');
    const command = `ls -l /proc/self/fd; echo planted >> /dev/fd/${INHERITED_FD}; echo planted >&${INHERITED_FD}; cat <&${INHERITED_FD}; echo "pid1=$(cat /proc/1/comm)"; echo end`;
    const sim = await startSim(cleanups, { script: [{ toolCalls: [{ name: 'bash', arguments: { command } }] }, { content: 'done' }] });
    // The shell that starts node passes a descriptor on, as `20>>file node …` would.
    const fd = openSync(target, 'a+');
    try {
      const child = spawn(process.execPath, [CLI_PATH, 'fanout', '--grant', 'bash', '--base-url', sim.url, 'one.jsonl'], {
        cwd: ws,
        env: cliEnv({ OPENAI_API_KEY: 'sk-test-fd' }),
        stdio: ['ignore', 'pipe', 'pipe', ...Array<'ignore'>(INHERITED_FD - 3).fill('ignore'), fd],
      });
      cleanups.add(() => void child.kill('SIGKILL'));
      let stderr = '';
      child.stderr?.setEncoding('utf8').on('data', (d: string) => (stderr += d));
      child.stdout?.resume();
      const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
      expect(code, stderr).toBe(0);
    } finally {
      closeSync(fd);
    }
    const [listing = ''] = toolMessagesOf(sim.requests[1]?.body);
    expect(listing).toContain('end');
    // The config file took effect: in bubblewrap, pid 1 is bwrap's own.
    if (sandbox === 'bwrap') expect(listing).toContain('pid1=bwrap');
    else expect(listing).not.toContain('pid1=bwrap');
    expect(listing).not.toContain(target);
    expect(listing).toMatch(new RegExp(`/dev/fd/${INHERITED_FD}: (No such file or directory|Bad file descriptor)`));
    expect(readFileSync(target, 'utf8')).toBe('original\n');
  });
});

describe.skipIf(skipWithoutBwrap())('resource limits inside bubblewrap', () => {
  beforeAll(requireBwrap);
  const limited = (ws: string, limits: Record<string, number>) => {
    const ctx = toolContext(ws, { policy: { sandbox: 'bwrap' } });
    return { ...ctx, limits: { ...ctx.limits, ...limits } };
  };

  it('a fork bomb stops at bashMaxProcesses: the machine keeps its processes, the tool answers with SANDBOX_LIMIT', async (test) => {
    // uid 0 without a cgroup has nothing that bounds processes (the kernel exempts root from
    // RLIMIT_NPROC): the README says so, and there is nothing to test.
    const probe = await makeCommandCgroup({ bashMaxProcesses: 64, bashMaxMemoryMb: 1024, bashMaxFileMb: 1, bashTmpMb: 1 });
    await probe?.remove();
    if (
      skipWithout(
        'a cgroup forkpool can make',
        probe !== undefined || process.getuid?.() !== 0,
        'cgroup v1 as root, or a delegated cgroup v2 with pids and memory',
      )
    )
      test.skip();
    const ws = await workspace();
    const sleeper = markerSleep();
    const running = callTool(
      bashTool,
      { command: `for i in $(seq 400); do ${sleeper.command} & done; wait`, timeout_ms: 4_000 },
      limited(ws, { bashMaxProcesses: 64 }),
    );
    let most = 0;
    let settled = false;
    void running.catch(() => {}).finally(() => (settled = true));
    while (!settled) {
      most = Math.max(most, processesRunning(sleeper.argv).length);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const error = await toolError(running);
    expect(error.code).toBe('SANDBOX_LIMIT');
    expect(error.message).toMatch(/limit on processes \(toolLimits\.bashMaxProcesses = 64\)/);
    expect(most).toBeGreaterThan(0);
    expect(most).toBeLessThanOrEqual(64);
  });

  it('a bash call refused before it runs (too many entries to scan) leaves no cgroup of its own behind', async (test) => {
    const probe = await makeCommandCgroup({ bashMaxProcesses: 64, bashMaxMemoryMb: 1024, bashMaxFileMb: 1, bashTmpMb: 1 });
    await probe?.remove();
    // No cgroup can be made here: nothing could leak.
    if (skipWithout('a cgroup forkpool can make', probe !== undefined, 'cgroup v1 as root, or a delegated cgroup v2 with pids and memory')) test.skip();
    const own = readFileSync('/proc/self/cgroup', 'utf8');
    // Where makeCommandCgroup makes them: v1's pids hierarchy when there is one, else the v2 group.
    const v1 = /^\d+:pids:(.*)$/m.exec(own)?.[1];
    const pidsDir = v1 !== undefined ? path.join('/sys/fs/cgroup/pids', v1) : path.join('/sys/fs/cgroup', /^0::(.*)$/m.exec(own)?.[1] ?? '');
    const ours = async () => (await readdir(pidsDir)).filter((name) => name.startsWith(`forkpool-${process.pid}-`));
    const before = await ours();
    const ws = await workspace(Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`f${i}.txt`, 'x'])));
    const ctx = toolContext(ws, { policy: { sandbox: 'bwrap' } });
    const error = await toolError(callTool(bashTool, { command: 'true' }, { ...ctx, limits: { ...ctx.limits, hiddenScanMaxEntries: 10 } }));
    expect(error.code).toBe('PATH_HIDDEN');
    expect(await ours()).toEqual(before);
  });

  it('a big write to /tmp stops at bashTmpMb', async () => {
    const ws = await workspace();
    const error = await toolError(
      callTool(bashTool, { command: 'head -c 40M /dev/zero > /tmp/big; stat -c "size=%s" /tmp/big; exit 1' }, limited(ws, { bashTmpMb: 8 })),
    );
    expect(error.code).toBe('SANDBOX_LIMIT');
    expect(error.message).toMatch(/limit on \/tmp size \(toolLimits\.bashTmpMb = 8 MiB/);
    const size = Number(/size=(\d+)/.exec(error.message)?.[1]);
    expect(size).toBeLessThanOrEqual(8 * 1024 * 1024);
  });

  it.each(skipWithoutBwrap() ? ['none'] : ['bwrap', 'none'])('a big file in the workspace stops at bashMaxFileMb (sandbox %s)', async (sandbox) => {
    const ws = await workspace();
    const ctx = toolContext(ws, { policy: { sandbox: sandbox as 'bwrap' | 'none' } });
    const error = await toolError(callTool(bashTool, { command: 'head -c 20M /dev/zero > big.bin' }, { ...ctx, limits: { ...ctx.limits, bashMaxFileMb: 2 } }));
    expect(error.code).toBe('SANDBOX_LIMIT');
    expect(error.message).toMatch(/limit on file size \(toolLimits\.bashMaxFileMb = 2 MiB\)/);
    expect((await stat(path.join(ws, 'big.bin'))).size).toBeLessThanOrEqual(2 * 1024 * 1024);
  });

  it('memory stops at bashMaxMemoryMb', async () => {
    const ws = await workspace();
    const error = await toolError(
      callTool(bashTool, { command: 'x=$(head -c 300000000 /dev/zero | tr "\\0" a); echo ${#x}' }, limited(ws, { bashMaxMemoryMb: 64 })),
    );
    expect(error.code).toBe('SANDBOX_LIMIT');
    expect(error.message).toMatch(/limit on memory \(toolLimits\.bashMaxMemoryMb = 64 MiB\)/);
  });

  it('an ordinary command under the default limits runs as before', async () => {
    const ws = await workspace();
    const out = await callTool(
      bashTool,
      { command: 'node -e "console.log(40 + 2)" 2>/dev/null || echo 42; git --version >/dev/null && echo git-ok' },
      toolContext(ws, { policy: { sandbox: 'bwrap' } }),
    );
    expect(out).toMatch(/^42$/m);
    expect(out).toContain('git-ok');
    expect(out).toMatch(/\[exit code: 0\]$/);
  });
});

describe('resource limit config', () => {
  it.each(['bashMaxProcesses', 'bashMaxMemoryMb', 'bashMaxFileMb', 'bashTmpMb'])('toolLimits.%s: 0 is refused naming the field', (field) => {
    let error: unknown;
    try {
      parseConfig({ workspaceRoot: base, toolLimits: { [field]: 0 } });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const issue = (error as ConfigError).issues[0];
    expect(issue?.field).toBe(`toolLimits.${field}`);
    expect(issue?.received).toContain('0');
  });
});
