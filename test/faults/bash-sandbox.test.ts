/**
 * bash inside bubblewrap (issue 8, section 9 "bash is not a sandbox", and section 3 "Nothing
 * outlives its job", tool side). Every test runs the real bwrap; without it they fail loudly
 * unless FORKPOOL_TEST_NO_BWRAP=1. The `none` mode's own guarantees are checked at the end.
 */
import { mkdir, mkdtemp, readFile, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/shared/errors.js';
import { bashTool } from '../../src/shared/tools/bash.js';
import { checkSandbox } from '../../src/shared/tools/bwrap.js';
import { BUILTIN_TOOL_NAMES } from '../../src/shared/fixed-limits.js';
import { waitFor } from '../helpers/cleanup.js';
import { skipWithoutBwrap, callTool, markerSleep, processesRunning, recordingRegistry, requireBwrap, toolContext } from '../helpers/sandbox.js';

let ws: string;
let outside: string;
let base: string;

beforeAll(async () => {
  base = await realpath(await mkdtemp(path.join(os.tmpdir(), 'forkpool-bwrap-')));
  ws = path.join(base, 'ws');
  outside = path.join(base, 'outside');
  await mkdir(path.join(ws, '.git', 'hooks'), { recursive: true });
  await writeFile(path.join(ws, '.git', 'config'), '[core]\n');
  await mkdir(outside);
  await writeFile(path.join(outside, 'secret.txt'), 'outside-secret-content\n');
});
afterAll(() => rm(base, { recursive: true, force: true }));

describe.skipIf(skipWithoutBwrap())('bash in bubblewrap', () => {
  beforeAll(requireBwrap);
  const bwrap = () => toolContext(ws, { policy: { sandbox: 'bwrap' } });

  it("hands the model no secret: not in its environment, bwrap's (/proc/1/environ) or the parent's (/proc/$PPID/environ)", async () => {
    const saved = { ...process.env };
    process.env.OPENAI_API_KEY = 'sk-test-SECRET-4242';
    process.env.GITHUB_TOKEN = 'ghp_test_SECRET_4242';
    // Not secret by name: only the minimal environment keeps it out.
    process.env.FORKPOOL_TEST_PLAIN_VALUE = 'plain-value-4242';
    process.env.MY_APP_SETTING = 'plain-setting-4242';
    try {
      const command =
        "tr '\\0' '\\n' < /proc/1/environ; echo ---; tr '\\0' '\\n' < /proc/$PPID/environ; echo ---; env; echo ---; cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n' | base64 -w0";
      // Even an unscrubbed context environment does not reach the sandbox.
      for (const env of [toolContext(ws).env, { ...process.env } as Record<string, string>]) {
        const out = await callTool(bashTool, { command }, { ...bwrap(), env });
        expect(out).toContain('HOME=/tmp');
        expect(out).toMatch(/\[exit code: 0\]$/);
        for (const leaked of ['SECRET-4242', 'SECRET_4242', 'OPENAI_API_KEY', 'GITHUB_TOKEN', 'plain-setting-4242', 'MY_APP_SETTING']) {
          expect(out, `${leaked} reached the model`).not.toContain(leaked);
        }
        const encoded = out.split('---\n')[3] ?? '';
        expect(Buffer.from(encoded.split('\n')[0] ?? '', 'base64').toString()).not.toMatch(/SECRET|plain-setting/);
      }
    } finally {
      for (const name of Object.keys(process.env)) if (!(name in saved)) delete process.env[name];
    }
  });

  it('sees nothing outside the workspace and writes nowhere else', async () => {
    const rel = path.relative(ws, path.join(outside, 'secret.txt'));
    const out = await callTool(
      bashTool,
      {
        command: `cat ${rel}; cat ${outside}/secret.txt; ls /root; touch /usr/forkpool-x; echo inside > made.txt; echo tmp > /tmp/forkpool-tmp-${process.pid}; echo hook >> .git/config; ls -d /etc/shadow; echo done`,
      },
      bwrap(),
    );
    expect(out).not.toContain('outside-secret-content');
    expect(out).toMatch(/secret\.txt: No such file or directory/);
    expect(out).toMatch(/\/usr\/forkpool-x'?: Read-only file system/);
    expect(out).toMatch(/\.git\/config: Read-only file system/);
    expect(out).toMatch(/\/etc\/shadow': No such file or directory/);
    expect(out).toContain('done');
    expect(await readFile(path.join(ws, 'made.txt'), 'utf8')).toBe('inside\n');
    // /tmp inside is the sandbox's own.
    await expect(readFile(`/tmp/forkpool-tmp-${process.pid}`)).rejects.toMatchObject({ code: 'ENOENT' });
    expect(await readFile(path.join(ws, '.git', 'config'), 'utf8')).toBe('[core]\n');
  });

  it('a .git link planted to an outside folder is not mounted (the read-only bind takes the checked object, not the path)', async () => {
    const ws2 = path.join(base, 'ws2');
    await mkdir(ws2, { recursive: true });
    await symlink(outside, path.join(ws2, '.git'));
    const out = await callTool(bashTool, { command: 'cat .git/secret.txt; ls -la .git' }, toolContext(ws2, { policy: { sandbox: 'bwrap' } }));
    expect(out).not.toContain('outside-secret-content');
    expect(out).toMatch(/\.git\/secret\.txt: No such file or directory/);
  });

  it('sandboxReadPaths are visible read-only', async () => {
    const out = await callTool(
      bashTool,
      { command: `cat ${outside}/secret.txt; echo x > ${outside}/new.txt` },
      toolContext(ws, { policy: { sandbox: 'bwrap', readPaths: [outside] } }),
    );
    expect(out).toContain('outside-secret-content');
    expect(out).toMatch(/new\.txt: Read-only file system/);
  });

  it('has no network unless granted', async () => {
    const server: Server = createServer((socket) => socket.end('hello-from-host\n'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const port = (server.address() as { port: number }).port;
      const command = `exec 3<>/dev/tcp/127.0.0.1/${port} && head -n1 <&3`;
      const denied = await callTool(bashTool, { command }, bwrap());
      expect(denied).not.toContain('hello-from-host');
      expect(denied).toMatch(/Connection refused|Network is unreachable/);
      const granted = await callTool(bashTool, { command }, toolContext(ws, { policy: { sandbox: 'bwrap', network: true } }));
      expect(granted).toContain('hello-from-host');
    } finally {
      server.close();
    }
  });

  it('(setsid sleep &) does not survive the call', async () => {
    const sleeper = markerSleep();
    // The command ends only once the escaped sleep runs, so "gone" below means killed, not never started.
    const command = `(setsid ${sleeper.command} > /dev/null 2>&1 &); until pgrep -xf '${sleeper.command}' > /dev/null; do :; done; echo started`;
    const out = await callTool(bashTool, { command }, bwrap());
    expect(out).toContain('started');
    await waitFor(() => processesRunning(sleeper.argv).length === 0, `${sleeper.command} is gone after the call`);
  });

  it('SIGKILL to the registered group ends everything the command started, setsid children included', async () => {
    const registry = recordingRegistry();
    const a = markerSleep();
    const b = markerSleep();
    const c = markerSleep();
    const running = callTool(bashTool, { command: `${a.command} & (setsid ${c.command} &); ${b.command}` }, { ...bwrap(), processes: registry });
    await waitFor(() => [a, b, c].every((s) => processesRunning(s.argv).length === 1), 'all three sleeps started');
    expect(registry.log.map(([kind]) => kind)).toEqual(['started']);
    const pgid = registry.log[0]?.[1] as number;
    // What the main thread does on hard stop, thread death or close.
    process.kill(-pgid, 'SIGKILL');
    const out = await running;
    expect(out).toMatch(/killed by signal SIGKILL/);
    await waitFor(() => [a, b, c].every((s) => processesRunning(s.argv).length === 0), 'no sleep of the command is left');
    expect(registry.log).toEqual([
      ['started', pgid],
      ['ended', pgid],
    ]);
  });

  it('timeout and abort kill the whole sandbox', async () => {
    const sleeper = markerSleep();
    const out = await callTool(bashTool, { command: `${sleeper.command} & echo started; wait`, timeout_ms: 300 }, bwrap());
    expect(out).toMatch(/timed out after 300 ms/);
    await waitFor(() => processesRunning(sleeper.argv).length === 0, 'the background sleep is gone after the timeout');
  });

  it('at start: bwrap works here, so no notice; asked-for bwrap that does not work is a config error', () => {
    const tools = [...BUILTIN_TOOL_NAMES];
    expect(checkSandbox({ sandbox: 'auto', bwrapPath: '/usr/bin/bwrap', tools })).toEqual({ mode: 'bwrap' });
    expect(checkSandbox({ sandbox: 'bwrap', bwrapPath: '/usr/bin/bwrap', tools })).toEqual({ mode: 'bwrap' });
  });
});

describe('without bubblewrap', () => {
  it('auto falls back to a process group and says so once; bwrap asked for fails at start naming the field', () => {
    const tools = [...BUILTIN_TOOL_NAMES];
    const status = checkSandbox({ sandbox: 'auto', bwrapPath: '/nonexistent/bwrap', tools });
    expect(status.mode).toBe('none');
    expect(status.notice).toMatch(/bubblewrap is not usable here .*bash runs without a sandbox/);
    expect(checkSandbox({ sandbox: 'auto', bwrapPath: '/nonexistent/bwrap', tools: ['read_file'] })).toEqual({ mode: 'none' });
    expect(checkSandbox({ sandbox: 'none', bwrapPath: '/usr/bin/bwrap', tools }).notice).toMatch(/sandbox "none"/);
    let error: unknown;
    try {
      checkSandbox({ sandbox: 'bwrap', bwrapPath: '/nonexistent/bwrap', tools });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).issues[0]?.field).toBe('sandbox');
  });

  it("auto with an unusable bwrap runs bash as a process group (today's behaviour)", async () => {
    const out = await callTool(
      bashTool,
      { command: 'echo $HOME; ls -d /root' },
      toolContext(ws, { policy: { sandbox: 'auto', bwrapPath: '/nonexistent/bwrap' } }),
    );
    expect(out).toContain('/root');
    expect(out).not.toContain('No such file');
  });

  it('sandbox none: the registered group, killed with SIGKILL, takes every process of the group', async () => {
    const registry = recordingRegistry();
    const a = markerSleep();
    const b = markerSleep();
    const running = callTool(
      bashTool,
      { command: `${a.command} & ${b.command}` },
      { ...toolContext(ws, { policy: { sandbox: 'none' } }), processes: registry },
    );
    await waitFor(() => processesRunning(a.argv).length === 1 && processesRunning(b.argv).length === 1, 'both sleeps started');
    const pgid = registry.log[0]?.[1] as number;
    process.kill(-pgid, 'SIGKILL');
    await running;
    await waitFor(() => processesRunning(a.argv).length === 0 && processesRunning(b.argv).length === 0, 'no sleep of the group is left');
    expect(registry.log).toEqual([
      ['started', pgid],
      ['ended', pgid],
    ]);
  });
});
