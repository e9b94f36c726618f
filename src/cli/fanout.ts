import type { JobRecord, JobStatus } from '../main/ledger/ledger.js';
import { ForkpoolError, LedgerWriteError } from '../shared/errors.js';
import { mergeUsageByModel, type UsageByModel } from '../shared/usage.js';
import { onTermination } from './common.js';
import { EXIT } from './exit.js';
import { costLines, jsonForTerminal, oneLine, usageLines } from '../main/views/terminal-lines.js';
import { jobJson } from '../main/views/job-view.js';
import { describePool } from '../main/limits/budget-pool.js';
import { LineReader, type InputLine } from './line-reader.js';
import { FANOUT_LINE_MAX_BYTES } from '../shared/defaults.js';
import { countTaskLines, FanoutOutput, statusText } from './progress.js';
import { retryLine } from '../shared/model-errors.js';
import { parseLine, type FanoutTask } from './fanout-line.js';
import { DEFAULT_MAX_CONSECUTIVE_FAILURES, FailureWatch } from './fanout-failures.js';
import { countFailed, SUMMARY_STATUSES, summaryRecord, summaryText, type FanoutLineType } from './fanout-summary.js';
import { openFanout, type FanoutFlags } from './fanout-setup.js';

export { parseLine } from './fanout-line.js';
export type { FanoutFlags } from './fanout-setup.js';

/**
 * Jobs accepted but not yet started, beyond the running ones, before fanout stops reading its
 * input: enough that a free slot never waits for the reader, few enough that a million-line
 * input is never all in memory (and a writer into `-` blocks).
 */
const READ_AHEAD_MIN = 16;

/**
 * `forkpool fanout tasks.jsonl`: every line a background job, no parent. Lines are read as
 * they arrive and each becomes a job at once; reading pauses while enough jobs wait. One JSON
 * line per finished job on stdout; a line the manager refuses gets a `refused` record and the
 * rest run; a full queue (`background.queueLimit`) is waited out, not an error. The flags are
 * checked and the manager built first (fanout-setup.ts).
 */
export async function fanoutCommand(file: string, flags: FanoutFlags): Promise<number> {
  const opened = await openFanout(file, flags);
  if ('exitCode' in opened) return opened.exitCode;
  const { input, ctx, ledger, manager, deliveries, outputSchema } = opened;
  const out = new FanoutOutput(process.stdout, process.stderr, flags.progress !== false && process.stderr.isTTY === true && !ctx.json);
  const reader = new LineReader(input);
  const startedAt = Date.now();
  /** A stdout line; under `--json` it says what it is (see fanout-summary.ts). */
  const emit = (type: FanoutLineType, record: Record<string, unknown>) => out.result(jsonForTerminal(ctx.json ? { type, ...record } : record));
  const failures = new FailureWatch(flags.maxConsecutiveFailures ?? DEFAULT_MAX_CONSECUTIVE_FAILURES);
  let started = 0;
  /** Queued jobs the circuit breaker kept from starting. */
  let notStarted = 0;
  let lastLine = 0;

  const tally = Object.fromEntries(SUMMARY_STATUSES.map((s) => [s, 0])) as Record<JobStatus, number>;
  let refused = 0;
  let interrupted = 0;
  let invalid = 0;
  let readFailed = false;
  let accepted = 0;
  let ended = 0;
  const running = new Set<string>();
  const lineOf = new Map<string, number>();
  let usage: UsageByModel = {};
  let stopping = false;

  // Wakes whoever waits for room (a job ending) or for the end (stop).
  const waiters = new Set<() => void>();
  const wakeAll = () => {
    for (const wake of [...waiters]) wake();
    waiters.clear();
  };
  const nextEnding = () => new Promise<void>((resolve) => waiters.add(resolve));
  const pending = () => accepted - ended;
  const readAhead = ctx.config.background.maxConcurrent + Math.max(READ_AHEAD_MIN, ctx.config.background.maxConcurrent);

  // The bar's total: a file's task lines, counted first (one read, ~1 s per GB; a stream has none: "so far").
  const total = out.live ? await countTaskLines(file) : undefined;
  let endedBefore = 0;
  const drawStatus = () =>
    out.status(
      statusText({
        read: accepted,
        ended,
        ...(total !== undefined ? { total, handled: ended + refused + invalid + endedBefore } : {}),
        failed: countFailed(tally),
        running: running.size,
        queued: pending() - running.size,
        startedAt,
        now: Date.now(),
        pool: describePool(manager.budgetPool()),
      }),
    );
  const ticker = out.live ? setInterval(drawStatus, 250) : undefined;
  ticker?.unref();

  manager.on('started', (job: JobRecord) => {
    running.add(job.id);
    started++;
  });
  manager.on('requeued', (job: JobRecord) => {
    running.delete(job.id);
  });
  // A retry is never silent: one line on stderr, above the status line (`rate limited by <host>, retrying in 15 s (2/4)`),
  // or under --json a `{"type":"retry"}` line on stdout naming the task line and label.
  manager.on('progress', ({ jobId, event }) => {
    if (event.type !== 'retry') return;
    if (!ctx.json) {
      out.note(`↻ line ${lineOf.get(jobId) ?? '?'} (${jobId}): ${retryLine(event)}`);
      return;
    }
    emit('retry', {
      line: lineOf.get(jobId) ?? null,
      label: manager.get(jobId)?.label ?? null,
      jobId,
      attempt: event.attempt,
      maxRetries: event.maxRetries ?? null,
      status: event.status ?? null,
      host: event.host ?? null,
      waitMs: event.delayMs,
      reason: event.reason,
    });
  });
  /**
   * Printed is recorded: a result is printed only once the ledger has its ending and its
   * delivery (one strict write, which takes any unsaved record along). While the disk refuses,
   * ended results wait here in order, and go out with the first write that works (the next
   * ending, or the end of the run); a result never printed is one a --resume prints (from the
   * ledger, or by running its task again), so no result is printed twice across runs.
   */
  const unrecorded = new Map<string, Readonly<JobRecord>>();
  let recordFailure: string | undefined;
  const printRecorded = () => {
    for (const [id, job] of unrecorded) {
      try {
        deliveries.markDelivered(id);
      } catch (error) {
        if (!(error instanceof LedgerWriteError)) throw error;
        if (recordFailure === undefined)
          out.note(`forkpool fanout: the ledger cannot record results (${oneLine(error.message)}); they are printed once it can`);
        recordFailure = oneLine(error.message);
        return;
      }
      unrecorded.delete(id);
      // Printed is delivered: its full text may now go, so a million-line fan-out stays bounded.
      emit('result', { line: lineOf.get(id), ...jobJson(job) });
      lineOf.delete(id);
    }
  };

  manager.on('done', (job: Readonly<JobRecord>) => {
    running.delete(job.id);
    ended++;
    // Stopped by this stop, still unfinished in the ledger: its one reported ending comes from --resume.
    if (job.resumable) {
      interrupted++;
      if (job.startedAt === undefined) notStarted++;
      lineOf.delete(job.id);
      return;
    }
    if (job.status) tally[job.status]++;
    usage = mergeUsageByModel(usage, job.usage);
    unrecorded.set(job.id, job);
    printRecorded();
    // After the breaker tripped, the queued jobs its stop cancels are not failures of their own.
    const keptFromStarting = failures.tripped !== undefined && job.startedAt === undefined;
    if (keptFromStarting) notStarted++;
    const seen = keptFromStarting ? {} : failures.record(job);
    if (seen.note !== undefined) out.note(`forkpool fanout: ${seen.note}`);
    if (seen.tripped !== undefined) stopStarting();
    drawStatus();
    wakeAll();
  });

  // Resumed: what the ledger check found is said before anything is printed from it (and fails the run).
  for (const finding of ledger?.findings ?? []) out.note(`forkpool fanout: ledger: ${finding}`);
  let ledgerProblems = ledger?.findings.length ?? 0;
  // Resumed: what finished before is printed from the ledger; what recovery re-queued runs again.
  for (const job of ledger ? manager.jobs() : []) {
    const line = ledger?.lineOf(job.id);
    if (job.state !== 'ended') {
      accepted++;
      lineOf.set(job.id, line as number);
      continue;
    }
    if (job.status) tally[job.status]++;
    endedBefore++;
    usage = mergeUsageByModel(usage, job.usage);
    // Read back from the ledger: its ending is on disk already; marking it delivered may still fail (printed all the same).
    emit('result', { line, ...jobJson(job), fromLedger: true });
    try {
      deliveries.markDelivered(job.id);
    } catch (error) {
      if (!(error instanceof LedgerWriteError)) throw error;
    }
  }

  const refuse = (task: FanoutTask, error: unknown) => {
    refused++;
    const code = error instanceof ForkpoolError ? error.code : 'INTERNAL';
    const message = oneLine(error instanceof Error ? error.message : String(error));
    out.note(`forkpool fanout: line ${task.line}: refused: ${message} [${code}]`);
    emit('refused', { line: task.line, label: task.label, status: 'refused', error: { code, message } });
  };

  /** Spawns one job; waits out QUEUE_FULL while jobs are pending; any other refusal is reported. */
  const spawnLine = async (task: FanoutTask) => {
    for (;;) {
      try {
        const agent = task.agent ?? flags.agent;
        const spawn = () =>
          manager.spawn({
            task: task.task,
            label: task.label,
            role: 'user',
            wave: null,
            ...(agent !== undefined ? { agent } : {}),
            ...(task.budget !== undefined ? { budget: task.budget } : {}),
            ...(outputSchema !== undefined ? { outputSchema } : {}),
          });
        const handle = ledger ? ledger.spawnForLine(task, spawn) : spawn();
        accepted++;
        lastLine = task.line;
        lineOf.set(handle.id, task.line);
        return;
      } catch (error) {
        if (stopping) return;
        // With nothing pending no room can ever come: refuse instead of waiting forever.
        if (error instanceof ForkpoolError && error.code === 'QUEUE_FULL' && pending() > 0) {
          await nextEnding();
          continue;
        }
        refuse(task, error);
        return;
      }
    }
  };

  const feed = async () => {
    let lineNumber = 0;
    for (;;) {
      let read: InputLine | undefined;
      try {
        read = await reader.next();
      } catch (error) {
        readFailed = true;
        out.note(`forkpool fanout: reading the input failed after line ${lineNumber}: ${oneLine((error as Error).message)}`);
        return;
      }
      if (read === undefined || stopping) return;
      lineNumber = read.number;
      if (!('text' in read)) {
        // Refused while it was read: its bytes were never held.
        invalid++;
        out.note(`forkpool fanout: line ${lineNumber}: ${read.bytes} bytes, over the limit of ${FANOUT_LINE_MAX_BYTES} bytes a line (skipped)`);
        continue;
      }
      const parsed = parseLine(read.text, lineNumber);
      if (parsed === undefined) continue;
      if ('problem' in parsed) {
        invalid++;
        out.note(`forkpool fanout: line ${lineNumber}: ${parsed.problem} (skipped)`);
        continue;
      }
      // Resumed: this line has its job in the ledger already (printed above, or running again).
      if (ledger?.hasLine(parsed.line)) {
        const mismatch = ledger.inputMismatch(parsed);
        if (mismatch !== undefined) {
          ledgerProblems++;
          out.note(`forkpool fanout: ledger: ${mismatch}`);
        }
        continue;
      }
      // Backpressure: no more reading (and no more queued jobs) until a job ends.
      while (!stopping && pending() >= readAhead) await nextEnding();
      if (stopping) return;
      await spawnLine(parsed);
    }
  };

  let finishing: Promise<void> | undefined;
  /** Closes the manager and prints the summary: once, whoever calls first (main flow or a signal). */
  const finish = (timeoutMs?: number): Promise<void> =>
    (finishing ??= (async () => {
      const report = await manager.close(timeoutMs === undefined ? {} : { timeoutMs });
      // One more try for what the disk refused; what is left was never printed, and fails the run.
      printRecorded();
      if (unrecorded.size > 0)
        out.note(
          `forkpool fanout: ${unrecorded.size} result(s) ended but the ledger could not record them (${recordFailure ?? 'write failed'}): not printed; --resume prints them`,
        );
      if (ticker) clearInterval(ticker);
      out.stop();
      const summary = {
        tally,
        refused,
        invalid,
        started,
        seconds: (Date.now() - startedAt) / 1000,
        hardStopped: report.stragglers.length,
        ledgerProblems,
        interrupted,
        causes: failures.causes(),
        stoppedEarly: failures.tripped,
        notStarted,
        lastLine,
        resumable: ledger !== undefined,
        exitCode: exitCode(),
      };
      for (const line of summaryText(summary)) process.stderr.write(`${line}\n`);
      if (ctx.json) emit('summary', summaryRecord(summary));
      const lines = usageLines({ 'user:subagent': usage });
      if (lines.length) process.stderr.write(`tokens:\n${lines.join('\n')}\n`);
      for (const line of costLines(ctx.config, { 'user:subagent': usage }, manager.budgetPool())) process.stderr.write(`${line}\n`);
      ledger?.close();
      await ctx.dispose();
    })());

  const stop = () => {
    stopping = true;
    reader.close();
    wakeAll();
    return finish(2_000);
  };
  /**
   * The circuit breaker tripped: no more lines are read and no queued job starts (with a
   * ledger they stay unfinished there, for --resume); running jobs may end as they will.
   */
  function stopStarting(): void {
    stopping = true;
    reader.close();
    wakeAll();
    void manager.close({ drain: true, keepUnfinished: true });
  }
  const stopSignals = onTermination(stop);
  // `fanout … | head -1`: the reader of stdout left. Stop as on a signal, quietly, exit 1.
  let stdoutGone = false;
  const onStdoutError = (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') {
      out.note(`forkpool fanout: writing results failed: ${oneLine(error.message)}`);
    }
    stdoutGone = true;
    out.stdoutClosed();
    void stop();
  };
  process.stdout.on('error', onStdoutError);

  try {
    await feed();
    while (!stopping && pending() > 0) await nextEnding();
  } finally {
    reader.close();
    // Always: a failure above must not leave worker threads (and the process) running.
    await finish();
    stopSignals();
    process.stdout.off('error', onStdoutError);
  }
  return exitCode();

  function exitCode(): number {
    // A ledger that did not check out fails the run even when every line ran: never exit 0 over it.
    const anyFailed =
      countFailed(tally) > 0 ||
      refused > 0 ||
      invalid > 0 ||
      readFailed ||
      stdoutGone ||
      ledgerProblems > 0 ||
      unrecorded.size > 0 ||
      failures.tripped !== undefined;
    return anyFailed ? EXIT.failure : EXIT.ok;
  }
}
