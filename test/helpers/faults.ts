/**
 * Helpers of the fault suite (test/faults). Builds on pool.ts (workspace, sim,
 * config, manager) and adds: one job run end to end through the real pool with its progress
 * events; loopback stand-ins for what the sim cannot do (an endpoint that answers every request
 * with one fixed HTTP status; a proxy that records request headers); and process checks read
 * from /proc (orphans, a unique command-line marker, a process's working directory).
 */
import { existsSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { createServer, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { JobRecord } from '../../src/main/ledger/ledger.js';
import type { BackgroundManager } from '../../src/main/jobs/manager.js';
import type { ForkpoolConfig, ForkpoolConfigInput } from '../../src/shared/config.js';
import type { LoopEvent } from '../../src/shared/loop-events.js';
import type { SimServer, SimServerOptions } from '../../src/sim/index.js';
import type { Cleanup } from './cleanup.js';
import { RESEARCH_TASK, makeWorkspace } from './config.js';
import { ended, makeConfig, makeManager } from './pool.js';
import { startSim } from './sim.js';

export type Background = NonNullable<ForkpoolConfigInput['background']>;

export interface JobRun {
  record: JobRecord;
  sim: SimServer;
  manager: BackgroundManager;
  config: ForkpoolConfig;
  /** The job's progress events, in order (model requests, retries, tool calls). */
  events: LoopEvent[];
}

/** Retry events of a run. */
export const retriesOf = (events: readonly LoopEvent[]) => events.filter((e): e is Extract<LoopEvent, { type: 'retry' }> => e.type === 'retry');

/**
 * Spawns one job through the real Piscina pool and the real worker entry, against a sim
 * started with `sim`; resolves once it has ended. The manager and sim are closed after the test.
 */
export async function runOneJob(
  cleanups: Cleanup,
  opts: {
    sim?: SimServerOptions;
    config?: Partial<ForkpoolConfigInput>;
    background?: Background;
    task?: string;
    /** Points the job somewhere other than the sim's URL (a wrong prefix, a stand-in server). */
    baseUrl?: (simUrl: string) => string;
  } = {},
): Promise<JobRun> {
  const root = await makeWorkspace(cleanups);
  const sim = await startSim(cleanups, opts.sim ?? {});
  const extra = { ...opts.config, ...(opts.baseUrl ? { baseUrl: opts.baseUrl(sim.url) } : {}) };
  const config = makeConfig(sim, root, { maxConcurrent: 1, ...opts.background }, extra);
  const manager = makeManager(config, cleanups);
  const events: LoopEvent[] = [];
  manager.on('progress', ({ event }) => events.push(event));
  const { id } = manager.spawn({ task: opts.task ?? RESEARCH_TASK, label: 'under test' });
  const record = await ended(manager, id);
  return { record, sim, manager, config, events };
}

export interface StatusServer {
  /** Base URL for the openai client. */
  url: string;
  /** Requests received so far. */
  hits: number;
}

/**
 * A loopback endpoint that answers every request with `status` and an OpenAI-style error body.
 * For statuses the sim cannot produce (400, 401) and for bodies that echo a request header.
 */
export async function startStatusServer(cleanups: Cleanup, status: number, message: (headers: IncomingHttpHeaders) => string): Promise<StatusServer> {
  const state = { url: '', hits: 0 };
  const server = createServer((req, res) => {
    state.hits++;
    req.resume();
    req.on('end', () => {
      const body = JSON.stringify({ error: { message: message(req.headers), type: 'invalid_request_error', param: null, code: null } });
      res.writeHead(status, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) });
      res.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  cleanups.add(() => new Promise<void>((resolve) => server.close(() => resolve())).finally(() => server.closeAllConnections()));
  return state;
}

export interface RecordingProxy {
  url: string;
  /** Every request seen: its headers and raw body. */
  requests: Array<{ headers: IncomingHttpHeaders; body: string }>;
}

/** A loopback proxy in front of `target` (a sim URL) that records each request's headers and body. */
export function startRecordingProxy(cleanups: Cleanup, target: string): Promise<RecordingProxy> {
  return startRoutingProxy(cleanups, target, () => target);
}

/**
 * A recording proxy that sends each request to the sim `route` picks by its body (all sims with
 * the same path): e.g. the parent's requests (they offer `spawn_background_agent`) to one
 * scripted sim and the jobs' to another, so two scripts never race for each other's steps.
 */
export async function startRoutingProxy(cleanups: Cleanup, first: string, route: (body: string) => string): Promise<RecordingProxy> {
  const state: RecordingProxy = { url: '', requests: [] };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      state.requests.push({ headers: req.headers, body: body.toString('utf8') });
      const to = new URL(route(body.toString('utf8')));
      const upstream = httpRequest(
        { host: to.hostname, port: to.port, method: req.method, path: req.url, headers: { ...req.headers, host: to.host } },
        (up) => {
          res.writeHead(up.statusCode ?? 502, up.headers);
          up.pipe(res);
        },
      );
      upstream.on('error', () => res.destroy());
      // The client went away (abort, timeout): drop the upstream request too.
      res.on('close', () => upstream.destroy());
      upstream.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}${new URL(first).pathname}`;
  cleanups.add(() => new Promise<void>((resolve) => server.close(() => resolve())).finally(() => server.closeAllConnections()));
  return state;
}

export interface HoldingProxy extends RecordingProxy {
  /** Responses held so far (the upstream answered; the client has not been told yet). */
  held(): number;
  /** Sends every held response on, and stops holding. */
  release(): void;
}

/**
 * A loopback proxy in front of `target` that records requests like {@link startRecordingProxy}
 * and holds back the response of every request whose body `hold` accepts until `release()`.
 * It lets a test keep a request "in flight" for exactly as long as the scenario needs, by
 * events instead of by latency (which a loaded machine stretches).
 */
export async function startHoldingProxy(cleanups: Cleanup, target: string, hold: (body: string) => boolean): Promise<HoldingProxy> {
  const to = new URL(target);
  const waiting: Array<() => void> = [];
  let holding = true;
  const state: HoldingProxy = {
    url: '',
    requests: [],
    held: () => waiting.length,
    release: () => {
      holding = false;
      for (const send of waiting.splice(0)) send();
    },
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      state.requests.push({ headers: req.headers, body: body.toString('utf8') });
      const held = holding && hold(body.toString('utf8'));
      const upstream = httpRequest(
        { host: to.hostname, port: to.port, method: req.method, path: req.url, headers: { ...req.headers, host: to.host } },
        (up) => {
          const parts: Buffer[] = [];
          up.on('data', (c: Buffer) => parts.push(c));
          up.on('end', () => {
            const send = () => {
              const headers = { ...up.headers };
              delete headers['transfer-encoding'];
              const payload = Buffer.concat(parts);
              res.writeHead(up.statusCode ?? 502, { ...headers, 'content-length': String(payload.length) });
              res.end(payload);
            };
            if (held && holding) waiting.push(send);
            else send();
          });
        },
      );
      upstream.on('error', () => res.destroy());
      res.on('close', () => upstream.destroy());
      upstream.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}${to.pathname}`;
  cleanups.add(() => new Promise<void>((resolve) => server.close(() => resolve())).finally(() => server.closeAllConnections()));
  return state;
}

export const HAS_PROC = existsSync('/proc/self/cmdline');

/**
 * Live (not zombie) processes other than this one whose command line contains `cmdline`, or
 * whose working directory is `cwdUnder` or inside it. Read from /proc; Linux only.
 */
export function liveProcesses(match: { cmdline?: string; cwdUnder?: string }): number[] {
  const found: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      // The state follows the parenthesised command name: "pid (comm) S ...".
      if (stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) === 'Z') continue;
      if (match.cmdline !== undefined && readFileSync(`/proc/${name}/cmdline`, 'utf8').replace(/\0/g, ' ').includes(match.cmdline)) found.push(Number(name));
      else if (match.cwdUnder !== undefined) {
        const cwd = readlinkSync(`/proc/${name}/cwd`);
        if (cwd === match.cwdUnder || cwd.startsWith(`${match.cwdUnder}/`)) found.push(Number(name));
      }
    } catch {
      // The process ended while we looked, or is not ours to read.
    }
  }
  return found;
}

/** True while process `pid` exists and is not a zombie. */
export function isAlive(pid: number | undefined): boolean {
  if (pid === undefined) return false;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/** Active TCP sockets of this thread (the sim's server side of each open connection, among others). */
export function openTcpSockets(): number {
  return process.getActiveResourcesInfo().filter((r) => r === 'TCPSocketWrap').length;
}

/** A marker unique to this run, for finding a process by its command line. */
export function uniqueMarker(): string {
  return `${Math.floor(1000 + Math.random() * 8999)}${process.pid % 1000}`;
}

/**
 * On Node 24 a worker thread that reaches its heap cap sometimes aborts the whole process
 * (V8 "FATAL ERROR: Reached heap limit" instead of ERR_WORKER_OUT_OF_MEMORY for the thread;
 * seen 1 run in 6 here, never on Node 20). The heap-cap tests run where the cap holds; on
 * Node 24 the limit is documented in docs/RELIABILITY.md instead of being tested into a crash.
 */
export const HEAP_CAP_ABORTS_PROCESS = Number(process.versions.node.split('.')[0]) >= 24;

/**
 * Unhandled rejections and uncaught exceptions seen while a test runs (each would have exited a
 * host that embeds forkpool); the listeners are removed by `cleanup`.
 */
export function watchProcess(cleanup: Pick<Cleanup, 'add'>): unknown[] {
  const seen: unknown[] = [];
  const onError = (error: unknown) => seen.push(error);
  process.on('unhandledRejection', onError);
  process.on('uncaughtException', onError);
  cleanup.add(() => {
    process.off('unhandledRejection', onError);
    process.off('uncaughtException', onError);
  });
  return seen;
}
