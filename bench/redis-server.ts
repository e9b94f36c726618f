/**
 * A redis-server of a bench's own on a free loopback port (Debian's redis-server on PATH), waited
 * for until it accepts connections (a fixed pause was too short on a loaded machine).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { acceptsConnections, freeLoopbackPort } from '#dist/shared/loopback.js';

export interface Redis {
  url: string;
  port: number;
  /** SIGKILL (or SIGTERM), then, after `downMs`, start again on the same port and folder. */
  restart(downMs: number): Promise<void>;
  stop(): Promise<void>;
}

/** `aof`: an fsync-always append-only file in `dir`; without, nothing is persisted. */
export async function startRedis(dir = mkdtempSync(path.join(os.tmpdir(), 'forkpool-bench-redis-')), aof = false): Promise<Redis> {
  const port = await freeLoopbackPort();
  const args = ['--bind', '127.0.0.1', '--port', String(port), '--save', '', '--dir', dir, '--loglevel', 'warning'];
  args.push(...(aof ? ['--appendonly', 'yes', '--appendfsync', 'always'] : ['--appendonly', 'no']));
  let child: ChildProcess;
  const start = async () => {
    child = spawn('redis-server', args, { stdio: 'ignore' });
    for (let tries = 0; !(await acceptsConnections(port)); tries++) {
      if (child.exitCode !== null || tries >= 400) throw new Error(`redis-server on port ${port} did not start (exit code ${child.exitCode})`);
      await sleep(25);
    }
  };
  const stop = async () => {
    if (child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  };
  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    restart: async (downMs) => {
      await stop();
      await sleep(downMs);
      await start();
    },
    stop,
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
