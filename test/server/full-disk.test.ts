/**
 * Issue 18: `forkpool serve --ledger` on a disk that fills up (a real, small tmpfs; we mount it,
 * so this needs root and mount permission, else it is skipped with the reason). The process
 * keeps serving; a spawn the disk cannot take is refused (503, LEDGER_WRITE_FAILED); `/healthz`
 * says the ledger is degraded and why (SQLITE_FULL); once there is room again, writes go on.
 * The built CLI runs as a child process (build first).
 */
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { useCleanup } from '../helpers/cleanup.js';
import { parseJsonLines, spawnCli } from '../helpers/cli.js';
import { tempWorkspace } from '../helpers/config.js';
import { mountSmallDisk } from '../helpers/small-disk.js';
import { skipWithout } from '../helpers/system.js';

const TOKEN = 'full-disk-test-token-0123456789';

const disk = mountSmallDisk('2m');
if (!('skip' in disk)) afterAll(() => disk.unmount());

describe('serve --ledger on a disk that fills up', () => {
  const cleanup = useCleanup();
  // Said in one line, and under `.ci/run` (FORKPOOL_TEST_REQUIRE_SYSTEM=1) the test runs and fails instead.
  if ('skip' in disk && skipWithout('a small tmpfs (root, mount -t tmpfs)', false, disk.skip)) {
    it.skip(`skipped: ${disk.skip}`, () => {});
    return;
  }

  it('keeps serving; a spawn is refused with 503 LEDGER_WRITE_FAILED; /healthz says degraded (SQLITE_FULL); with room again, writes go on', async () => {
    if ('skip' in disk) throw new Error(`needs a small tmpfs: ${disk.skip}`);
    const { dir } = disk;
    const cwd = tempWorkspace({ 'a.txt': 'alpha\n' }, cleanup);
    const server = spawnCli(['serve', '--port', '0', '--json', '--ledger', path.join(dir, 'ledger.db'), '--sim-latency', '150'], {
      cwd,
      cleanup,
      env: { FORKPOOL_SERVER_TOKEN: TOKEN },
    });
    const stdout = await server.waitForStdout((s) => s.includes('"listening"'));
    const url = String(parseJsonLines(stdout).find((e) => e.type === 'listening')?.url);
    const api = (p: string, init: RequestInit = {}) =>
      fetch(`${url}${p}`, { ...init, headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', ...init.headers } });
    const spawn = (task: string) => api('/v1/jobs', { method: 'POST', body: JSON.stringify({ task }) });

    const before = await spawn('find a.txt (before)');
    expect(before.status).toBe(202);
    const runningId = ((await before.json()) as { jobs: Array<{ id: string }> }).jobs[0]?.id;
    expect(((await (await fetch(`${url}/healthz`)).json()) as { ledger: unknown }).ledger).toEqual({ state: 'ok' });

    disk.fill();
    // The job spawned before starts and ends on the full disk: its writes fail, the process goes on.
    for (;;) {
      const job = (await (await api(`/v1/jobs/${runningId}`)).json()) as { state: string; status?: string };
      if (job.state === 'ended') {
        expect(job.status).toBe('ok');
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    // The next spawns cannot be written: each is refused, and the process stays up.
    const refused = await spawn('find a.txt (on a full disk)');
    expect(refused.status).toBe(503);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('LEDGER_WRITE_FAILED');
    const health = (await (await fetch(`${url}/healthz`)).json()) as { ok: boolean; ledger: { state: string; error?: { code: string } } };
    expect(health.ok).toBe(true);
    expect(health.ledger).toMatchObject({ state: 'degraded', error: { code: 'SQLITE_FULL' } });
    expect((await api('/v1/jobs')).status).toBe(200);

    disk.free();
    const after = await spawn('find a.txt (after)');
    expect(after.status).toBe(202);
    // That write went through, and what waited in memory with it.
    expect(((await (await fetch(`${url}/healthz`)).json()) as { ledger: unknown }).ledger).toEqual({ state: 'ok' });
    expect(server.child.exitCode).toBe(null);
    server.child.kill('SIGTERM');
    const exit = await server.exited;
    expect(exit.code).toBe(143);
    expect(exit.stderr).not.toMatch(/SqliteError|\n\s+at /);
  });
});
