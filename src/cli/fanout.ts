import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import cliProgress from 'cli-progress';
import { z } from 'zod';
import { BackgroundManager } from '../main/manager.js';
import { createExecutor } from '../main/executor-factory.js';
import type { ExecutorKind } from '../main/executor.js';
import type { JobRecord } from '../main/ledger.js';
import { mergeUsageByModel, type UsageByModel } from '../shared/usage.js';
import { createCliContext, EXIT, onTermination, type GlobalFlags } from './common.js';
import { jobJson, usageLines } from './format.js';

export interface FanoutFlags extends GlobalFlags {
  executor?: string;
  progress?: boolean;
}

const lineSchema = z.strictObject({
  task: z.string().trim().min(1, 'task must be a non-empty string'),
  label: z.string().max(200).optional(),
});

interface FanoutTask {
  line: number;
  task: string;
  label: string;
}

const EXECUTORS: readonly ExecutorKind[] = ['piscina', 'tinypool', 'inline', 'worker-per-job'];

/**
 * `forkpool fanout tasks.jsonl`: every line a background job, no parent. One JSON line per
 * finished job on stdout; a live progress bar on a terminal; bad lines reported by number.
 */
export async function fanoutCommand(file: string, flags: FanoutFlags): Promise<number> {
  const executorKind = (flags.executor ?? 'piscina') as ExecutorKind;
  if (!EXECUTORS.includes(executorKind)) {
    process.stderr.write(`forkpool fanout: --executor expects one of ${EXECUTORS.join(', ')}; received "${flags.executor}"\n`);
    return EXIT.usage;
  }
  const { tasks, invalid } = await readTasks(file);
  for (const bad of invalid) process.stderr.write(`forkpool fanout: line ${bad.line}: ${bad.message} (skipped)\n`);
  const ctx = await createCliContext(flags);
  const manager = new BackgroundManager({ config: ctx.config, logger: ctx.logger, executor: createExecutor(ctx.config, ctx.logger, executorKind) });
  const lineOf = new Map<string, number>();
  const counts = { done: 0, failed: 0 };
  let usage: UsageByModel = {};
  const startedAt = Date.now();
  const bar = flags.progress !== false && process.stderr.isTTY && !ctx.json ? createBar(tasks.length) : undefined;
  const refresh = () =>
    bar?.update(counts.done + counts.failed, {
      failed: counts.failed,
      running: manager.count('running'),
      queued: manager.count('queued'),
      rate: ((counts.done + counts.failed) / Math.max(0.001, (Date.now() - startedAt) / 1000)).toFixed(1),
    });
  const ticker = bar ? setInterval(refresh, 250) : undefined;

  manager.on('done', (job: JobRecord) => {
    if (isFailure(job)) counts.failed++;
    else counts.done++;
    usage = mergeUsageByModel(usage, job.usage);
    process.stdout.write(`${JSON.stringify({ line: lineOf.get(job.id), ...jobJson(job) })}\n`);
    refresh();
  });

  const finish = async (timeoutMs?: number) => {
    const report = await manager.close(timeoutMs === undefined ? {} : { timeoutMs });
    if (ticker) clearInterval(ticker);
    refresh();
    bar?.stop();
    const seconds = (Date.now() - startedAt) / 1000;
    process.stderr.write(
      `fanout: ${counts.done} ok, ${counts.failed} failed or cancelled, ${invalid.length} invalid line(s), ${seconds.toFixed(1)}s` +
        `${report.stragglers.length ? `, ${report.stragglers.length} hard-stopped` : ''}\n`,
    );
    const lines = usageLines({ 'user:subagent': usage });
    if (lines.length) process.stderr.write(`tokens:\n${lines.join('\n')}\n`);
    await ctx.dispose();
  };
  const stopSignals = onTermination(() => finish(2_000));

  try {
    for (const task of tasks) {
      const handle = manager.spawn({ task: task.task, label: task.label, role: 'user', wave: null });
      lineOf.set(handle.id, task.line);
    }
    await manager.onIdle();
    await finish();
    return counts.failed > 0 || invalid.length > 0 ? EXIT.failure : EXIT.ok;
  } finally {
    stopSignals();
  }
}

function isFailure(job: JobRecord): boolean {
  return job.status === 'failed' || job.status === 'cancelled' || job.status === 'timed_out';
}

function createBar(total: number): cliProgress.SingleBar {
  const bar = new cliProgress.SingleBar(
    {
      stream: process.stderr,
      format: '{bar} {value}/{total} done | failed {failed} | running {running} | queued {queued} | {rate}/s | ETA {eta_formatted}',
      hideCursor: true,
      etaBuffer: 50,
    },
    cliProgress.Presets.shades_classic,
  );
  bar.start(total, 0, { failed: 0, running: 0, queued: total, rate: '0.0' });
  return bar;
}

async function readTasks(file: string): Promise<{ tasks: FanoutTask[]; invalid: Array<{ line: number; message: string }> }> {
  const input = file === '-' ? process.stdin : createReadStream(file, 'utf8');
  const tasks: FanoutTask[] = [];
  const invalid: Array<{ line: number; message: string }> = [];
  let line = 0;
  for await (const text of createInterface({ input, crlfDelay: Infinity })) {
    line++;
    if (!text.trim()) continue;
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch (error) {
      invalid.push({ line, message: `not valid JSON (${(error as Error).message})` });
      continue;
    }
    const parsed = lineSchema.safeParse(raw);
    if (!parsed.success) {
      invalid.push({ line, message: z.prettifyError(parsed.error).replace(/\n/g, '; ') });
      continue;
    }
    tasks.push({ line, task: parsed.data.task, label: parsed.data.label ?? `line ${line}` });
  }
  return { tasks, invalid };
}
