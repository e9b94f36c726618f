#!/usr/bin/env node
/**
 * The soak: many jobs through the real Piscina pool against the simulated model with about
 * 10% injected faults of every kind (model faults from the simulator, thread faults from the
 * fault fixture, cancels and hard stops). Every check is made from observations the manager
 * does not produce itself: the event stream (recorded by listeners that only record), the
 * drains accumulated over the run, the sim's request log (each task carries a marker naming
 * its job), and a wrapper around the executor that logs every `run` it is asked for. Checks:
 * each job one `done` and one delivery, at most `maxConcurrent` running by the event stream,
 * at most 1 + maxRequeues runs per job and none after close, no model request from a job
 * cancelled while queued, a model request behind every job that completed ok, the thread count
 * back to minThreads, and the process exits on its own.
 *
 *   node test/soak/soak.mjs [--jobs 1000] [--seed 7]      (npm run soak builds first)
 *
 * Prints a human summary on stderr and one JSON line on stdout. Exit code 1 if an invariant broke.
 */
import { parseArgs } from 'node:util';
// Module paths, not the package root: the soak reaches below the public API on purpose.
import { BackgroundManager } from '../../dist/main/jobs/manager.js';
import { PiscinaExecutor } from '../../dist/main/executors/piscina-executor.js';
import { parseConfig } from '../../dist/shared/config.js';
import { startSimServer, FAULT_KINDS } from '../../dist/sim/index.js';
import { Deliveries } from '../../dist/main/delivery/deliveries.js';

const { values } = parseArgs({ options: { jobs: { type: 'string', default: '1000' }, seed: { type: 'string', default: '7' } } });
const totalJobs = Number(values.jobs);
let seed = Number(values.seed);
/** Deterministic PRNG (mulberry32), so a failing soak can be replayed with its seed. */
const random = () => {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};

// On Node 24 a worker over its heap cap sometimes aborts the whole process (see
// test/helpers/faults.ts, HEAP_CAP_ABORTS_PROCESS): the soak leaves that fault out there.
const HEAP_CAP_ABORTS_PROCESS = Number(process.versions.node.split('.')[0]) >= 24;
const WORKER_FAULTS = ['exit', 'throw_sync', 'throw_async', ...(HEAP_CAP_ABORTS_PROCESS ? [] : ['oom']), 'loop', 'ignore_cancel'];
const fixture = new URL('../fixtures/faulty-worker.mjs', import.meta.url).href;

// Bodies are kept: the request log tells which job asked (a marker in each task).
const sim = await startSimServer({ latencyMs: 5, jitterMs: 10, seed: Number(values.seed), faultRate: 0.1, faultKinds: [...FAULT_KINDS], recordBodies: true });
const MAX_CONCURRENT = 16;
const MAX_REQUEUES = 1;
const started = Date.now();
const summary = {
  jobs: totalJobs,
  byStatus: {},
  byEndedBy: {},
  lost: 0,
  deliveredTwice: 0,
  undelivered: 0,
  requeued: 0,
  peakRunning: 0,
  maxRuns: 0,
  runsAfterClose: 0,
  modelRequests: 0,
  threadsAfter: {},
  invariantsHold: true,
  seconds: 0,
};
try {
  for (const isolation of ['thread', 'shared']) {
    await soakHalf(isolation, isolation === 'thread' ? Math.ceil(totalJobs / 2) : Math.floor(totalJobs / 2));
  }
} finally {
  await sim.close();
}
summary.seconds = Number(((Date.now() - started) / 1000).toFixed(1));
process.stderr.write(
  `soak: ${totalJobs} jobs in ${summary.seconds}s — lost ${summary.lost}, delivered twice ${summary.deliveredTwice}, undelivered ${summary.undelivered}, ` +
    `re-queued ${summary.requeued}, peak running ${summary.peakRunning}, most runs of one job ${summary.maxRuns}, runs after close ${summary.runsAfterClose}, model requests ${summary.modelRequests}\n  by status ${JSON.stringify(summary.byStatus)}\n  ended by ${JSON.stringify(summary.byEndedBy)}\n` +
    `  threads after idle ${JSON.stringify(summary.threadsAfter)}\n  invariants ${summary.invariantsHold ? 'hold' : 'BROKEN'}\n`,
);
process.stdout.write(`${JSON.stringify(summary)}\n`);
process.exitCode = summary.invariantsHold ? 0 : 1;

function check(ok, what) {
  if (!ok) {
    summary.invariantsHold = false;
    process.stderr.write(`soak: invariant broken: ${what}\n`);
  }
}

async function soakHalf(isolation, jobs) {
  const config = parseConfig({
    baseUrl: sim.url,
    workspaceRoot: process.cwd(),
    requestTimeoutMs: 1_500,
    // The sim's `hang_before_headers` is given up after this and retried. requestTimeoutMs counts
    // from the first byte; without this the default (10 minutes) left each such hang to the
    // job's 15 s timeout, most of the short soak's wall time.
    firstByteTimeoutMs: 1_500,
    streamIdleTimeoutMs: 700,
    maxRetries: 2,
    background: {
      budget: { maxTurns: 8 },
      maxConcurrent: MAX_CONCURRENT,
      isolation,
      tasksPerThread: 8,
      heapMb: 64,
      cancelGraceMs: 300,
      timeoutMinutes: 0.25,
      maxRequeues: MAX_REQUEUES,
      closeTimeoutMs: 3_000,
    },
  });
  const executor = new PiscinaExecutor({
    isolation,
    threads: isolation === 'thread' ? 16 : 2,
    tasksPerThread: 8,
    heapMb: 64,
    workerFile: fixture,
    idleTimeoutMs: 300,
  });
  // The executor's own log: every run it was asked for, and whether the manager was closing.
  const runs = [];
  let closing = false;
  const run = (task, options) => {
    runs.push({ id: task.spec.id, afterClose: closing });
    return executor.run(task, options);
  };
  // Everything else passes through to the real executor (whatever the Executor interface holds).
  const observed = new Proxy(executor, {
    get(target, prop) {
      if (prop === 'run') return run;
      const value = Reflect.get(target, prop, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  const manager = new BackgroundManager({ config, executor: observed });
  const events = [];
  const deliveries = [];
  const firstRequest = sim.requests.length;
  let turn = 0;
  // Listeners only record.
  for (const type of ['started', 'done', 'requeued']) manager.on(type, (job) => events.push({ type, job }));
  // Loops and jobs that ignore cancel are cancelled once they start: the hard stop ends them.
  manager.on('started', (job) => {
    if (/^FAULT:(loop|ignore_cancel)/.test(job.task)) setTimeout(() => manager.cancel(job.id), 20);
  });
  const drain = () => {
    turn++;
    for (const job of new Deliveries(manager).drain(turn)) deliveries.push(job.id);
  };
  const turns = setInterval(drain, 50);

  const ids = [];
  for (let i = 0; i < jobs; i++) {
    const r = random();
    // The marker names the job in the sim's request log (the task is the job's first user message).
    const task =
      r < 0.03
        ? `FAULT:${WORKER_FAULTS[Math.floor(random() * WORKER_FAULTS.length)]}`
        : `Where is the background manager and how does it cancel jobs? [soak ${isolation} ${i}]`;
    ids.push(manager.spawn({ task, label: `soak ${isolation} ${i}` }).id);
    // Some jobs are cancelled at a random moment: queued, starting or running.
    if (random() < 0.05) {
      const id = ids[ids.length - 1];
      setTimeout(() => manager.cancel(id), Math.floor(random() * 400));
    }
    if (i % 50 === 49) await new Promise((r2) => setTimeout(r2, 5));
  }
  await manager.onIdle();
  clearInterval(turns);
  drain();
  // Replaced and extra threads settle back to the pool's minimum once idle.
  // (Polled with a generous bound: idle threads retire on their own timer, there is no event.)
  for (let waited = 0; executor.threadCount() !== executor.minThreads && waited < 60_000; waited += 100) await new Promise((r2) => setTimeout(r2, 100));
  summary.threadsAfter[isolation] = { threads: executor.threadCount(), minThreads: executor.minThreads };
  check(executor.threadCount() === executor.minThreads, `${isolation}: ${executor.threadCount()} threads after idle, expected ${executor.minThreads}`);
  closing = true;
  await manager.close();
  // The soak made this executor, so it closes it (a manager need not close one it was handed).
  await executor.close();
  check(executor.threadCount() === 0, `${isolation}: threads left after close`);
  checkHalf(isolation, ids, { events, deliveries, runs, requests: sim.requests.slice(firstRequest) });
}

/** The invariants of one half, from the recorded observations only. */
function checkHalf(isolation, ids, { events, deliveries, runs, requests }) {
  const countBy = (items, key) => items.reduce((m, x) => m.set(key(x), (m.get(key(x)) ?? 0) + 1), new Map());
  const dones = events.filter((e) => e.type === 'done');
  const doneCount = countBy(dones, (e) => e.job.id);
  const deliveredCount = countBy(deliveries, (id) => id);
  const runCount = countBy(runs, (r) => r.id);
  for (const { job } of dones) {
    summary.byStatus[job.status] = (summary.byStatus[job.status] ?? 0) + 1;
    summary.byEndedBy[job.endedBy] = (summary.byEndedBy[job.endedBy] ?? 0) + 1;
  }
  summary.requeued += events.filter((e) => e.type === 'requeued').length;
  // Running, by the event stream: from `started` to `done` or `requeued`.
  const running = new Set();
  for (const e of events) {
    if (e.type === 'started') running.add(e.job.id);
    else running.delete(e.job.id);
    summary.peakRunning = Math.max(summary.peakRunning, running.size);
  }
  check(summary.peakRunning <= MAX_CONCURRENT, `${isolation}: ${summary.peakRunning} jobs running at once by the event stream (cap ${MAX_CONCURRENT})`);
  const runsAfterClose = runs.filter((r) => r.afterClose).length;
  summary.runsAfterClose += runsAfterClose;
  check(runsAfterClose === 0, `${isolation}: ${runsAfterClose} runs started after close`);
  // The sim's log, by the marker in each job's task.
  const markerOf = (req) =>
    /\[soak (\w+) (\d+)\]/
      .exec(JSON.stringify(req.body?.messages?.[1] ?? ''))
      ?.slice(1)
      .join(' ');
  const requestsByMarker = countBy(
    requests.filter((req) => markerOf(req)),
    markerOf,
  );
  summary.modelRequests += requests.length;
  const lastDone = new Map(dones.map((e) => [e.job.id, e.job]));
  for (const id of ids) {
    const done = doneCount.get(id) ?? 0;
    const delivered = deliveredCount.get(id) ?? 0;
    if (done === 0) summary.lost++;
    if (delivered > 1) summary.deliveredTwice++;
    if (delivered === 0) summary.undelivered++;
    check(done === 1, `${id}: ${done} done events`);
    check(delivered === 1, `${id}: delivered ${delivered} times`);
    const tries = runCount.get(id) ?? 0;
    summary.maxRuns = Math.max(summary.maxRuns, tries);
    check(tries <= 1 + MAX_REQUEUES, `${id}: run ${tries} times`);
    const job = lastDone.get(id);
    const marker = /\[soak (\w+ \d+)\]/.exec(job?.task ?? '')?.[1];
    if (!job || !marker) continue;
    const asked = requestsByMarker.get(marker) ?? 0;
    // Cancelled while queued: it never ran, so the model never heard of it.
    if (job.endedBy === 'queue') check(asked === 0 && tries === 0, `${id}: cancelled while queued, yet ${tries} runs and ${asked} model requests`);
    // Completed ok: its answer came from the model, so the model was asked.
    if (job.endedBy === 'completed' && job.status === 'ok') check(asked > 0, `${id}: ended ok with no model request in the sim's log`);
  }
}
