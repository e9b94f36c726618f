/**
 * `forkpool serve` as a process: SIGTERM while jobs run closes them within the bound, reports
 * them, exits 143 and leaves no process behind; in process, close() leaves no worker thread.
 */
import { spawn } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { describe, expect, it } from 'vitest';
import { useCleanup } from '../helpers/cleanup.js';
import { tempWorkspace } from '../helpers/config.js';
import { startTestServer } from '../helpers/server.js';

const cleanup = useCleanup();
const CLI = new URL('../../dist/cli/index.js', import.meta.url).pathname;
const TOKEN = 'shutdown-test-token';

function descendants(pid: number): number[] {
  let out: string;
  try {
    out = execFileSync('ps', ['-e', '-o', 'pid=,ppid='], { encoding: 'utf8' });
  } catch {
    return [];
  }
  const children = new Map<number, number[]>();
  for (const line of out.trim().split('\n')) {
    const [child, parent] = line.trim().split(/\s+/).map(Number) as [number, number];
    children.set(parent, [...(children.get(parent) ?? []), child]);
  }
  const found: number[] = [];
  const walk = (p: number) => (children.get(p) ?? []).forEach((c) => (found.push(c), walk(c)));
  walk(pid);
  return found;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('shutdown', () => {
  it('SIGTERM: stops accepting, cancels the running jobs, reports them, exits 143, leaves no process', async () => {
    const workspace = tempWorkspace({ 'src/a.ts': 'export const retryBackoff = 1;\n' }, cleanup);
    const child = spawn(
      process.execPath,
      [CLI, 'serve', '--port', '0', '--json', '--sim-latency', '3000', '--concurrency', '4', '--workspace', workspace, '--grant', 'bash'],
      {
        env: { ...process.env, FORKPOOL_SERVER_TOKEN: TOKEN, OPENAI_API_KEY: '', OPENAI_BASE_URL: '' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    cleanup.add(() => (alive(child.pid as number) ? child.kill('SIGKILL') : undefined));
    const lines = createInterface({ input: child.stdout });
    const events: any[] = [];
    const linesDone = once(lines, 'close');
    let onListening: (event: any) => void = () => {};
    const listeningEvent = new Promise<any>((resolve) => (onListening = resolve));
    lines.on('line', (line) => {
      const event = JSON.parse(line);
      events.push(event);
      if (event.type === 'listening') onListening(event);
    });
    const listening = await listeningEvent;
    expect(listening.token).toBeUndefined();
    const url: string = listening.url;
    const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
    const tasks = Array.from({ length: 6 }, (_, i) => ({ task: 'Where is the retry backoff implemented?', label: `j${i}` }));
    expect((await fetch(`${url}/v1/jobs`, { method: 'POST', headers, body: JSON.stringify({ tasks }) })).status).toBe(202);
    // Wait until four run (the other two wait in the queue).
    for (;;) {
      const metrics = await (await fetch(`${url}/metrics`, { headers })).text();
      if (metrics.includes('forkpool_jobs{state="running"} 4')) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    const before = descendants(child.pid as number);
    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    const [code, signal] = await exited;
    await linesDone;
    const rest = events;
    expect(signal).toBeNull();
    expect(code).toBe(143);
    const closed = rest.find((e) => e.type === 'closed');
    expect(closed).toMatchObject({ signal: 'SIGTERM' });
    expect([...closed.cancelled].sort()).toEqual(['bg-1', 'bg-2', 'bg-3', 'bg-4', 'bg-5', 'bg-6']);
    for (const pid of [child.pid as number, ...before]) expect(alive(pid), `pid ${pid}`).toBe(false);
    await expect(fetch(`${url}/healthz`)).rejects.toThrow();
  });

  it('close(): in flight event streams end, no worker thread is left, a second close is the same promise', async () => {
    const { api, server } = await startTestServer(cleanup, { background: { maxConcurrent: 3 } }, { latencyMs: 2_000 });
    await api('/v1/jobs', { json: { tasks: [{ task: 'a task' }, { task: 'b task' }, { task: 'c task' }] } });
    const events = await api('/v1/events');
    const reading = events.text();
    const longPoll = api('/v1/jobs/bg-1/result?wait=60');
    while (server.state.manager.count('running') < 3) await new Promise((r) => setTimeout(r, 20));
    expect(server.state.executor.threadCount()).toBeGreaterThan(0);
    const closing = server.close();
    expect(server.close()).toBe(closing);
    const report = await closing;
    expect(report.cancelled.sort()).toEqual(['bg-1', 'bg-2', 'bg-3']);
    expect(server.state.executor.threadCount()).toBe(0);
    await reading;
    expect((await longPoll).status).toBe(200);
  });
});
