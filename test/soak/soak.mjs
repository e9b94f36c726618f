#!/usr/bin/env node
/**
 * The soak: many jobs through the real Piscina pool against the simulated model with about
 * 10% injected faults of every kind (model faults from the simulator, thread faults from the
 * fault fixture, cancels and hard stops). Checks: zero lost, zero delivered twice, every job
 * in one final state, the thread count back to minThreads, and the process exits on its own.
 *
 *   node test/soak/soak.mjs [--jobs 1000] [--seed 7]      (npm run soak builds first)
 *
 * Prints a human summary on stderr and one JSON line on stdout. Exit code 1 if an invariant broke.
 */
import { parseArgs } from 'node:util';
import { BackgroundManager, parseConfig } from '../../dist/index.js';
import { PiscinaExecutor } from '../../dist/executors.js';
import { startSimServer, FAULT_KINDS } from '../../dist/sim/index.js';

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

const WORKER_FAULTS = ['exit', 'throw_sync', 'throw_async', 'oom', 'loop', 'ignore_cancel'];
const fixture = new URL('../fixtures/faulty-worker.mjs', import.meta.url).href;

const sim = await startSimServer({ latencyMs: 5, jitterMs: 10, seed: Number(values.seed), faultRate: 0.1, faultKinds: [...FAULT_KINDS], recordBodies: false });
const started = Date.now();
const summary = { jobs: totalJobs, byStatus: {}, byEndedBy: {}, lost: 0, deliveredTwice: 0, endedTwice: 0, requeued: 0, threadsAfter: {}, invariantsHold: true, seconds: 0 };
try {
  for (const isolation of ['thread', 'shared']) {
    await soakHalf(isolation, isolation === 'thread' ? Math.ceil(totalJobs / 2) : Math.floor(totalJobs / 2));
  }
} finally {
  await sim.close();
}
summary.seconds = Number(((Date.now() - started) / 1000).toFixed(1));
process.stderr.write(
  `soak: ${totalJobs} jobs in ${summary.seconds}s — lost ${summary.lost}, delivered twice ${summary.deliveredTwice}, ended twice ${summary.endedTwice}, ` +
    `re-queued ${summary.requeued}\n  by status ${JSON.stringify(summary.byStatus)}\n  ended by ${JSON.stringify(summary.byEndedBy)}\n` +
    `  threads after idle ${JSON.stringify(summary.threadsAfter)}\n  invariants ${summary.invariantsHold ? 'hold' : 'BROKEN'}\n`,
);
process.stdout.write(`${JSON.stringify(summary)}\n`);
process.exitCode = summary.invariantsHold ? 0 : 1;

async function soakHalf(isolation, jobs) {
  const config = parseConfig({
    baseUrl: sim.url,
    workspaceRoot: process.cwd(),
    requestTimeoutMs: 1_500,
    streamIdleTimeoutMs: 700,
    maxRetries: 2,
    maxIterations: 8,
    background: { maxConcurrent: 16, isolation, tasksPerThread: 8, heapMb: 64, cancelGraceMs: 300, timeoutMinutes: 0.25, maxRequeues: 1, closeTimeoutMs: 3_000 },
  });
  const executor = new PiscinaExecutor({ isolation, threads: isolation === 'thread' ? 16 : 2, tasksPerThread: 8, heapMb: 64, workerFile: fixture, idleTimeoutMs: 300 });
  const manager = new BackgroundManager({ config, executor, closeExecutor: true });
  const doneCount = new Map();
  const delivered = new Set();
  let turn = 0;
  const check = (ok, what) => {
    if (!ok) {
      summary.invariantsHold = false;
      process.stderr.write(`soak: invariant broken: ${what}\n`);
    }
  };
  manager.on('done', (job) => {
    doneCount.set(job.id, (doneCount.get(job.id) ?? 0) + 1);
    summary.byStatus[job.status] = (summary.byStatus[job.status] ?? 0) + 1;
    summary.byEndedBy[job.endedBy] = (summary.byEndedBy[job.endedBy] ?? 0) + 1;
  });
  manager.on('requeued', () => summary.requeued++);
  // Loops and jobs that ignore cancel are cancelled once they start: the hard stop ends them.
  manager.on('started', (job) => {
    if (/^FAULT:(loop|ignore_cancel)/.test(job.task)) setTimeout(() => manager.cancel(job.id), 20);
  });
  const drain = () => {
    turn++;
    for (const job of manager.drain(turn)) {
      if (delivered.has(job.id)) summary.deliveredTwice++;
      delivered.add(job.id);
    }
  };
  const turns = setInterval(drain, 50);

  const ids = [];
  for (let i = 0; i < jobs; i++) {
    const r = random();
    const task = r < 0.03 ? `FAULT:${WORKER_FAULTS[Math.floor(random() * WORKER_FAULTS.length)]}` : 'Where is the background manager and how does it cancel jobs?';
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
  for (let waited = 0; executor.threadCount() !== executor.minThreads && waited < 5_000; waited += 100) await new Promise((r2) => setTimeout(r2, 100));
  summary.threadsAfter[isolation] = { threads: executor.threadCount(), minThreads: executor.minThreads };
  check(executor.threadCount() === executor.minThreads, `${isolation}: ${executor.threadCount()} threads after idle, expected ${executor.minThreads}`);
  await manager.close();
  check(executor.threadCount() === 0, `${isolation}: threads left after close`);
  for (const id of ids) {
    const count = doneCount.get(id) ?? 0;
    if (count === 0) summary.lost++;
    if (count > 1) summary.endedTwice++;
    check(manager.get(id)?.state === 'ended', `${id} not ended`);
    check(delivered.has(id), `${id} never delivered`);
  }
  check(summary.lost === 0 && summary.endedTwice === 0 && summary.deliveredTwice === 0, 'lost, ended twice or delivered twice');
}
