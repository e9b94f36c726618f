/**
 * Issue 36: `forkpool worker` runs a job of a producer's simulator on a simulator of its own, and
 * starts that simulator only when the first such job comes: a worker on a real endpoint listens
 * on no port of its own. A real worker process, a real Redis and a producer on the bullmq
 * executor; its listening sockets are read from /proc (Linux).
 */
import { existsSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  bullManager,
  ended,
  RESEARCH_TASK,
  makeConfig,
  makeWorkspace,
  skipWithoutRedis,
  startSim,
  startTcpProxy,
  startWorker,
  testRedis,
  useCleanup,
} from '../../helpers/index.js';

const cleanup = useCleanup();

/** The TCP ports process `pid` listens on (its socket inodes matched against the LISTEN rows of /proc/net/tcp{,6}). */
function listeningPorts(pid: number): number[] {
  const inodes = new Set(
    readdirSync(`/proc/${pid}/fd`).flatMap((fd) => {
      try {
        const link = readlinkSync(`/proc/${pid}/fd/${fd}`);
        return /^socket:\[(\d+)\]$/.exec(link)?.[1] ?? [];
      } catch {
        return []; // closed meanwhile
      }
    }),
  );
  return ['tcp', 'tcp6'].flatMap((table) =>
    readFileSync(`/proc/${pid}/net/${table}`, 'utf8')
      .split('\n')
      .slice(1)
      .map((row) => row.trim().split(/\s+/))
      // local_address is HEX_IP:HEX_PORT, st 0A is LISTEN, the inode is the tenth column.
      .filter((cols) => cols[3] === '0A' && inodes.has(cols[9] ?? ''))
      .map((cols) => Number.parseInt(cols[1]?.split(':')[1] ?? '', 16)),
  );
}

describe.skipIf(skipWithoutRedis() || !existsSync('/proc/self/net/tcp'))("bullmq: the worker's own simulator", { timeout: 180_000 }, () => {
  it('a worker on a real endpoint starts none (no port of its own) until a job of a producer on its simulator comes; then one, once', async () => {
    const redis = await testRedis(cleanup);
    const workspace = await makeWorkspace(cleanup);
    const sim = await startSim(cleanup);
    // The "real" endpoint: the sim behind a proxy, whose URL is no simulator's (the job is not marked).
    const proxy = await startTcpProxy(cleanup, Number(new URL(sim.url).port));
    const endpoint = `http://127.0.0.1:${proxy.port}/v1`;
    const worker = await startWorker(cleanup, redis.url, { queue: redis.queue, concurrency: 1, config: { baseUrl: endpoint, workspaceRoot: workspace } });
    expect(listeningPorts(worker.pid)).toEqual([]);

    const bullmq = { queue: redis.queue, pollMs: 500 };
    const onEndpoint = await bullManager(makeConfig(undefined, workspace, {}, { baseUrl: endpoint, executor: 'bullmq', redisUrl: redis.url, bullmq }), cleanup);
    expect(await ended(onEndpoint, onEndpoint.spawn({ task: RESEARCH_TASK, label: 'real' }).id)).toMatchObject({ status: 'ok' });
    expect(listeningPorts(worker.pid)).toEqual([]);
    const started = () =>
      worker.cli
        .stdout()
        .split('\n')
        .filter((line) => line.includes('"simulator-started"'));
    expect(started()).toEqual([]);

    // The producer's own simulator (registered in this process): its jobs are marked, and run on the worker's.
    const onSim = await bullManager(makeConfig(sim, workspace, {}, { executor: 'bullmq', redisUrl: redis.url, bullmq }), cleanup);
    for (const label of ['sim-1', 'sim-2']) {
      expect(await ended(onSim, onSim.spawn({ task: RESEARCH_TASK, label }).id)).toMatchObject({ status: 'ok' });
    }
    expect(started()).toHaveLength(1);
    const url = (JSON.parse(started()[0] as string) as { url: string }).url;
    expect(listeningPorts(worker.pid)).toEqual([Number(new URL(url).port)]);
  });
});
