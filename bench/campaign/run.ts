/**
 * `npm run campaign`: the fault campaign of issue 23 at full size, as an operator would run it
 * (child processes: `forkpool fanout` producers, `forkpool worker`s, redis-server; the simulated
 * model in this process counts every model request). Each scenario prints one line and the whole
 * run a table: lines reported, lost, reported twice, run twice by the model, statuses, time and
 * the machine's load. The suite runs the same faults at small sizes (test/main/bullmq/faults.test.ts,
 * test/main/ledger/durable-kill.test.ts, test/cli/fanout.test.ts).
 *
 *   node dist-bench/bench/campaign/run.js [--only a,b] [--tasks 300] [--kills 20] [--latency 200]
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { startSimServer, type SimServer } from 'forkpool/sim';
import { mulberry32 } from '#dist/sim/rng.js';
import { isEntry } from '../entry.js';
import { campaignWorkspace, scratch, sleep, startTcpProxy } from './rig.js';
import { replaceWorkers, runScenario, startCluster, twiceDuring, type Outcome, type Sizes } from './scenarios.js';

interface Context {
  sim: SimServer;
  sizes: Sizes;
  workspace: string;
  random: () => number;
}

/** A local (Piscina, shared) fan-out's flags: its own config and ledger file outside the workspace. */
function localArgs(ctx: Context, name: string): string[] {
  const dir = scratch(name);
  const config = path.join(dir, 'config.json');
  writeFileSync(config, JSON.stringify({ workspaceRoot: ctx.workspace, baseUrl: ctx.sim.url, apiKey: 'campaign', background: { maxConcurrent: LOCAL_CAP } }));
  return ['--config', config, '--ledger', path.join(dir, 'fanout.db')];
}

/** Jobs a local fan-out runs at once: the most one kill can cut. */
const LOCAL_CAP = 16;

type Scenario = (ctx: Context) => Promise<Outcome>;

const SCENARIOS: Record<string, Scenario> = {
  /** kill -9 of a local `fanout --ledger` at random points, `--resume` each time. */
  'ledger-kill': (ctx) =>
    runScenario({
      scenario: 'ledger-kill',
      ...ctx,
      args: localArgs(ctx, 'ledger-kill'),
      producerKills: { count: ctx.sizes.kills, maxAfter: Math.ceil(ctx.sizes.tasks / ctx.sizes.kills), maxDelayMs: 300 },
      ranTwiceBound: (kills) => kills * LOCAL_CAP,
    }),
  /** A crash loop: killed early, again and again (jobs dispatched, few asked the model). */
  'crash-loop': (ctx) =>
    runScenario({
      scenario: 'crash-loop',
      ...ctx,
      args: localArgs(ctx, 'crash-loop'),
      producerKills: { count: 13, maxAfter: 2, maxDelayMs: 400 },
      ranTwiceBound: (kills) => kills * LOCAL_CAP,
    }),
  /** kill -9 of a `fanout --executor bullmq --ledger` producer; its jobs go on in Redis; `--resume` adopts them. */
  'producer-kill': (ctx) =>
    withCluster(ctx, 'producer-kill', false, (cluster) =>
      runScenario({
        scenario: 'producer-kill',
        ...ctx,
        args: ['--config', cluster.producerConfig(), '--executor', 'bullmq', '--ledger', path.join(scratch('producer-kill-ledger'), 'fanout.db')],
        producerKills: { count: Math.ceil(ctx.sizes.kills / 2), maxAfter: Math.ceil((2 * ctx.sizes.tasks) / ctx.sizes.kills), maxDelayMs: 500 },
      }),
    ),
  /** Workers SIGKILLed one after another and replaced (their jobs run again after the lock). */
  'worker-kill': (ctx) => workerFaults(ctx, 'worker-kill', 'SIGKILL'),
  /** A rolling restart: workers SIGTERMed one after another (they hand their jobs back). */
  'worker-sigterm': (ctx) => workerFaults(ctx, 'worker-sigterm', 'SIGTERM'),
  /** Redis without persistence killed and back after 1 s, twice. */
  'redis-restart': (ctx) => redisRestart(ctx, 'redis-restart', false),
  /** Redis with an fsynced append-only file killed and back after 1 s, twice. */
  'redis-restart-aof': (ctx) => redisRestart(ctx, 'redis-restart-aof', true),
  /** The producer's connections to Redis cut for 3 s, twice (workers keep theirs). */
  'network-cut': (ctx) =>
    withCluster(ctx, 'network-cut', false, async (cluster) => {
      const proxy = await startTcpProxy(cluster.redis.port);
      try {
        return await runScenario({
          scenario: 'network-cut',
          ...ctx,
          args: ['--config', cluster.producerConfig({}, `redis://127.0.0.1:${proxy.port}`), '--executor', 'bullmq'],
          during: twiceDuring(ctx.sizes.tasks, 'network cut for 3 s', async () => {
            proxy.cut();
            await sleep(3_000);
            proxy.restore();
          }),
        });
      } finally {
        await proxy.close();
      }
    }),
  /** A cluster-wide cap of 5 over workers × slots: the simulator never sees more than 5 requests at once. */
  'cluster-cap': (ctx) =>
    withCluster(ctx, 'cluster-cap', false, async (cluster) => {
      const outcome = await runScenario({
        scenario: 'cluster-cap',
        ...ctx,
        args: ['--config', cluster.producerConfig({ bullmq: { queue: cluster.queue, globalConcurrency: 5 } }), '--executor', 'bullmq'],
      });
      const peak = ctx.sim.peakConcurrency;
      return { ...outcome, broken: peak > 5, note: `peak model requests in flight ${peak} (cap 5 over ${ctx.sizes.workers} × ${ctx.sizes.slots} slots)` };
    }),
};

async function withCluster(ctx: Context, name: string, aof: boolean, body: (cluster: Awaited<ReturnType<typeof startCluster>>) => Promise<Outcome>) {
  const cluster = await startCluster(name, ctx.sim, ctx.workspace, ctx.sizes, aof);
  try {
    return await body(cluster);
  } finally {
    await cluster.close();
  }
}

function workerFaults(ctx: Context, name: string, signal: NodeJS.Signals): Promise<Outcome> {
  return withCluster(ctx, name, false, (cluster) =>
    runScenario({
      scenario: name,
      ...ctx,
      args: ['--config', cluster.producerConfig(), '--executor', 'bullmq'],
      during: replaceWorkers(cluster, signal, Math.ceil(ctx.sizes.kills / 2), Math.floor(ctx.sizes.tasks / (ctx.sizes.kills / 2 + 1)), ctx.random),
      // A killed or stopped worker's jobs start again elsewhere: at most its slots per fault.
      ranTwiceBound: (kills) => kills * ctx.sizes.slots,
    }),
  );
}

function redisRestart(ctx: Context, name: string, aof: boolean): Promise<Outcome> {
  return withCluster(ctx, name, aof, (cluster) =>
    runScenario({
      scenario: name,
      ...ctx,
      args: ['--config', cluster.producerConfig(), '--executor', 'bullmq'],
      during: twiceDuring(ctx.sizes.tasks, `Redis${aof ? ' (AOF)' : ''} killed and back after 1 s`, () => cluster.redis.restart(1_000)),
      // An empty Redis forgets the running jobs and the results not yet taken: both are added
      // again and run over. Not bounded here; with an append-only file nothing may run twice.
      ...(aof ? {} : { ranTwiceBound: () => ctx.sizes.tasks }),
    }),
  );
}

function table(outcomes: Outcome[]): string {
  const rows = outcomes.map((o) => {
    const statuses = Object.entries(o.statuses)
      .map(([status, n]) => `${status} ${n}`)
      .join(', ');
    return `| ${o.scenario} | ${o.tasks} | ${o.kills} | ${o.starts} | ${o.reported} | ${o.lost} | ${o.doubled} | ${o.ranTwice} (≤ ${o.ranTwiceBound}) | ${o.failedUnrun} | ${statuses} | ${o.seconds} | ${o.load} | ${o.note} |`;
  });
  return [
    '| scenario | tasks | faults | starts | reported | lost | reported twice | ran twice | failed unrun | statuses | s | load (1/5/15) | note |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---|---|',
    ...rows,
  ].join('\n');
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      only: { type: 'string' },
      tasks: { type: 'string', default: '300' },
      kills: { type: 'string', default: '20' },
      workers: { type: 'string', default: '3' },
      slots: { type: 'string', default: '4' },
      latency: { type: 'string', default: '200' },
      seed: { type: 'string', default: '23' },
    },
  });
  const names = values.only?.split(',') ?? Object.keys(SCENARIOS);
  const unknown = names.filter((n) => !Object.hasOwn(SCENARIOS, n));
  if (unknown.length) throw new Error(`--only expects some of ${Object.keys(SCENARIOS).join(', ')}; received ${unknown.join(', ')}`);
  const sizes: Sizes = { tasks: Number(values.tasks), kills: Number(values.kills), workers: Number(values.workers), slots: Number(values.slots) };
  const workspace = campaignWorkspace();
  const random = mulberry32(Number(values.seed));
  const outcomes: Outcome[] = [];
  for (const name of names) {
    // A simulator per scenario: its request log counts that scenario's runs only.
    const sim = await startSimServer({
      latencyMs: Number(values.latency),
      jitterMs: 20,
      seed: Number(values.seed),
      recordBodies: true,
      requestLogLimit: 10_000_000,
    });
    try {
      const outcome = await (SCENARIOS[name] as Scenario)({ sim, sizes, workspace, random });
      outcomes.push(outcome);
      process.stderr.write(`[campaign] ${JSON.stringify(outcome)}\n`);
    } finally {
      await sim.close();
    }
  }
  process.stdout.write(`${table(outcomes)}\n`);
  const broken = outcomes.filter((o) => o.lost > 0 || o.doubled > 0 || o.failedUnrun > 0 || o.ranTwice > o.ranTwiceBound || o.broken);
  if (broken.length) {
    process.stderr.write(`[campaign] broken: ${broken.map((o) => o.scenario).join(', ')}\n`);
    process.exitCode = 1;
  }
}

if (isEntry(import.meta.url)) {
  main().catch((error: unknown) => {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  });
}
