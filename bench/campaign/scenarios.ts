/**
 * The campaign's scenarios, each as an operator meets it: a `forkpool fanout` of N task lines,
 * killed or not, resumed or not, with `forkpool worker` processes killed, stopped or starved
 * of Redis while it runs. Each returns what a person checks afterwards: every line reported
 * once (one fresh ending per line across every start; a resumed run re-prints the finished
 * ones `fromLedger`), none lost, and how many lines the model saw run more than once.
 */
import os from 'node:os';
import type { SimServer } from 'forkpool/sim';
import { runsByLine, scratch, sleep, startProcess, startRedis, startWorker, taskFile, writeJson, type Proc, type Redis } from './rig.js';

export interface Sizes {
  tasks: number;
  /** Kills of the producer (ledger scenarios) or of workers. */
  kills: number;
  workers: number;
  slots: number;
}

export interface Outcome {
  scenario: string;
  tasks: number;
  starts: number;
  kills: number;
  /** Lines with an ending in the last start's output (printed fresh or from the ledger). */
  reported: number;
  lost: number;
  /** Lines with more than one fresh ending across all starts, or twice in one output. */
  doubled: number;
  /** Lines whose job made its first model request more than once. */
  ranTwice: number;
  /** The most `ranTwice` may be: the runs the faults cut (0 where nothing forces a re-run). */
  ranTwiceBound: number;
  /** Ended lines whose job never asked the model, failed all the same (the crash-loop check). */
  failedUnrun: number;
  statuses: Record<string, number>;
  seconds: number;
  load: string;
  note: string;
  /** A scenario's own check failed (named in its note). */
  broken?: boolean;
}

interface Line {
  line: number;
  status: string;
  fromLedger: boolean;
  code: string | undefined;
}

function parseLines(proc: Proc): Line[] {
  const out: Line[] = [];
  for (const text of proc.lines) {
    try {
      const json = JSON.parse(text) as { line?: number; status?: string; fromLedger?: boolean; error?: { code?: string } };
      if (typeof json.line === 'number' && typeof json.status === 'string')
        out.push({ line: json.line, status: json.status, fromLedger: json.fromLedger === true, code: json.error?.code });
    } catch {
      // Not a result line.
    }
  }
  return out;
}

const loadNow = () =>
  os
    .loadavg()
    .map((n) => n.toFixed(1))
    .join(' ');

interface Plan {
  scenario: string;
  sim: SimServer;
  sizes: Sizes;
  args: string[];
  /** Kill the producer this many times (then `--resume` it), at random points. */
  producerKills?: { count: number; maxAfter: number; maxDelayMs: number };
  /** Runs beside the (last) producer; resolves with a note and its count of kills. */
  during?: (producer: Proc, printed: () => number) => Promise<{ kills: number; note: string }>;
  random: () => number;
  /** How many lines may run twice after `kills` faults (default 0). */
  ranTwiceBound?: (kills: number) => number;
}

/** Runs the fan-out (and its resumes) to the end and judges the outputs. */
export async function runScenario(plan: Plan): Promise<Outcome> {
  const dir = scratch(plan.scenario);
  const tasks = taskFile(dir, plan.sizes.tasks);
  const began = Date.now();
  const load = loadNow();
  const starts: Line[][] = [];
  let kills = 0;
  let note = '';
  let resume = false;
  for (;;) {
    const producer = startProcess(['fanout', tasks, ...plan.args, ...(resume ? ['--resume'] : []), '--no-progress', '--log-level', 'error']);
    const fresh = () => parseLines(producer).filter((l) => !l.fromLedger).length;
    const kill = plan.producerKills && kills < plan.producerKills.count ? plan.producerKills : undefined;
    if (kill) {
      const after = Math.floor(plan.random() * kill.maxAfter);
      await Promise.race([producer.waitForLine(() => fresh() >= after), producer.exited]);
      await sleep(Math.floor(plan.random() * kill.maxDelayMs));
      if ((await producer.kill('SIGKILL')) === null) kills++;
    } else if (plan.during) {
      const done = await plan.during(producer, fresh);
      kills += done.kills;
      note = done.note;
    }
    const code = await producer.exited;
    starts.push(parseLines(producer));
    if (code === null) {
      resume = true;
      continue;
    }
    if (code !== 0 && code !== 1) throw new Error(`${plan.scenario}: fanout exited ${code}: ${producer.stderr}`);
    break;
  }
  return judge(plan, starts, kills, note, (Date.now() - began) / 1_000, load);
}

function judge(plan: Plan, starts: Line[][], kills: number, note: string, seconds: number, load: string): Outcome {
  const fresh = new Map<number, number>();
  let doubled = 0;
  for (const output of starts) {
    const seen = new Set<number>();
    for (const line of output) {
      if (seen.has(line.line)) doubled++;
      seen.add(line.line);
      if (!line.fromLedger) fresh.set(line.line, (fresh.get(line.line) ?? 0) + 1);
    }
  }
  for (const count of fresh.values()) if (count > 1) doubled++;
  const last = starts.at(-1) ?? [];
  const statuses: Record<string, number> = {};
  for (const line of last) {
    const key = line.code === undefined ? line.status : `${line.status} ${line.code}`;
    statuses[key] = (statuses[key] ?? 0) + 1;
  }
  const runs = runsByLine(plan.sim);
  const reported = new Set(last.map((l) => l.line)).size;
  return {
    scenario: plan.scenario,
    tasks: plan.sizes.tasks,
    starts: starts.length,
    kills,
    reported,
    lost: plan.sizes.tasks - reported,
    doubled,
    ranTwice: [...runs.values()].filter((n) => n > 1).length,
    ranTwiceBound: plan.ranTwiceBound?.(kills) ?? 0,
    failedUnrun: last.filter((l) => l.status !== 'ok' && (runs.get(l.line) ?? 0) === 0).length,
    statuses,
    seconds: Math.round(seconds),
    load,
    note,
  };
}

/** Everything a BullMQ scenario needs: Redis, a queue, workers with their own config. */
export interface Cluster {
  redis: Redis;
  queue: string;
  workerConfig: string;
  workers: Proc[];
  slots: number;
  producerConfig(extra?: Record<string, unknown>, redisUrl?: string): string;
  close(): Promise<void>;
}

export async function startCluster(name: string, sim: SimServer, workspace: string, sizes: Sizes, aof = false): Promise<Cluster> {
  const dir = scratch(name);
  const redis = await startRedis(dir, aof);
  const queue = `campaign-${name}`;
  const workerConfig = writeJson(dir, 'worker.json', { workspaceRoot: workspace, baseUrl: sim.url, apiKey: 'campaign' });
  const workers = await Promise.all(Array.from({ length: sizes.workers }, () => startWorker(redis.url, queue, sizes.slots, workerConfig)));
  const producerConfig = (extra: Record<string, unknown> = {}, redisUrl = redis.url) =>
    writeJson(dir, `producer-${Math.random().toString(36).slice(2)}.json`, {
      workspaceRoot: workspace,
      baseUrl: sim.url,
      apiKey: 'campaign',
      executor: 'bullmq',
      redisUrl,
      bullmq: { queue },
      background: { maxConcurrent: sizes.tasks },
      ...extra,
    });
  return {
    redis,
    queue,
    workerConfig,
    workers,
    slots: sizes.slots,
    producerConfig,
    close: async () => {
      await Promise.all(workers.map((w) => w.kill('SIGKILL')));
      await redis.stop();
    },
  };
}

/**
 * Every `every` printed results, one worker is stopped with `signal` and a new one started in
 * its place (a rolling restart, or a crash), `count` times.
 */
export function replaceWorkers(cluster: Cluster, signal: NodeJS.Signals, count: number, every: number, random: () => number) {
  return async (producer: Proc, printed: () => number) => {
    let kills = 0;
    while (kills < count && producer.child.exitCode === null) {
      const target = (kills + 1) * every;
      await Promise.race([producer.waitForLine(() => printed() >= target), producer.exited]);
      if (producer.child.exitCode !== null) break;
      const index = Math.floor(random() * cluster.workers.length);
      await (cluster.workers[index] as Proc).kill(signal);
      kills++;
      cluster.workers[index] = await startWorker(cluster.redis.url, cluster.queue, cluster.slots, cluster.workerConfig);
    }
    return { kills, note: `${kills} worker(s) ${signal === 'SIGKILL' ? 'killed' : 'stopped'}` };
  };
}

/** Twice, when a third and then two thirds of the results are printed: `fault` (Redis restarted, the network cut). */
export function twiceDuring(tasks: number, what: string, fault: () => Promise<void>) {
  return async (producer: Proc, printed: () => number) => {
    let kills = 0;
    for (const share of [1 / 3, 2 / 3]) {
      await Promise.race([producer.waitForLine(() => printed() >= Math.floor(tasks * share)), producer.exited]);
      if (producer.child.exitCode !== null) break;
      await fault();
      kills++;
    }
    return { kills, note: `${what} ${kills} time(s)` };
  };
}
