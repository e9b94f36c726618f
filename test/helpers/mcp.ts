/**
 * MCP servers for tests: the reference servers installed as devDependencies (server-everything
 * over stdio and streamable HTTP, server-filesystem), and the hostile fixture
 * (test/fixtures/mcp/hostile-server.mjs). Each is run with this Node, never through npx.
 */
import { spawn, execFileSync } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { Cleanup } from './cleanup.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
export const EVERYTHING_BIN = `${root}node_modules/@modelcontextprotocol/server-everything/dist/index.js`;
export const FILESYSTEM_BIN = `${root}node_modules/@modelcontextprotocol/server-filesystem/dist/index.js`;
export const HOSTILE_BIN = `${root}test/fixtures/mcp/hostile-server.mjs`;
export const HOSTILE_HTTP_BIN = `${root}test/fixtures/mcp/hostile-http-server.mjs`;

/** A tool call context for a direct `run()`. */
export function callContext(signal: AbortSignal = new AbortController().signal) {
  return { signal, jobId: 'job-1', callId: 'call-1', agent: 'test' };
}

/** Command lines of live processes that hold `marker` among their arguments. */
export function processesWith(marker: string): string[] {
  const out = execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' });
  return out.split('\n').filter((line) => line.includes(marker) && !line.includes('ps -eo'));
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address !== null ? address.port : 0));
    });
  });
}

/** server-everything in streamable HTTP mode on a free loopback port (or `port`): its URL, and how to kill it. */
export async function startEverythingHttp(cleanup: Cleanup, port?: number): Promise<{ url: string; port: number; kill: () => Promise<void> }> {
  const listenOn = port ?? (await freePort());
  const child = spawn(process.execPath, [EVERYTHING_BIN, 'streamableHttp'], {
    env: { PATH: process.env.PATH ?? '', PORT: String(listenOn) },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const kill = async () => {
    child.kill('SIGKILL');
    await exited;
  };
  cleanup.add(kill);
  await new Promise<void>((resolve, reject) => {
    let err = '';
    child.stderr.on('data', (chunk: Buffer) => {
      err += chunk.toString();
      if (err.includes('listening on port')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`server-everything (streamableHttp) exited with ${code}: ${err}`)));
  });
  return { url: `http://127.0.0.1:${listenOn}/mcp`, port: listenOn, kill };
}
