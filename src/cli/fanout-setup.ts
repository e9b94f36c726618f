/**
 * What `forkpool fanout` needs before it reads its first line: its flags checked (`--executor`,
 * `--schema`, `--approve-with`, `--agent`, `--resume`), the CLI context, the ledger of a kept
 * fan-out, and the manager, its MCP servers connected and its approver answering. A flag that
 * does not check out is a usage problem (exit 2) before any job runs, and what was opened for it
 * is disposed of.
 */
import type { Readable } from 'node:stream';
import { BackgroundManager } from '../main/jobs/manager.js';
import { Deliveries } from '../main/delivery/deliveries.js';
import { createExecutor } from '../main/jobs/executor-factory.js';
import type { ExecutorKind } from '../main/executors/executor.js';
import type { OutputSchema } from '../shared/output-schema.js';
import { FANOUT_ISOLATION } from '../shared/defaults.js';
import { preview } from '../main/views/terminal-lines.js';
import { buildOrDispose, createCliContext, type CliContext, type GlobalFlags } from './common.js';
import { usageProblem } from './exit.js';
import { openInput } from './line-reader.js';
import { openFanoutLedger, type FanoutLedger } from './fanout-ledger.js';
import { readSchemaFile } from './schema-file.js';
import { answerApprovals, fanoutApprovals, parseApprover } from './approve-with.js';

export interface FanoutFlags extends GlobalFlags {
  executor?: string;
  progress?: boolean;
  /** The configured agent every line runs unless the line names its own. */
  agent?: string;
  /** Continue the fan-out in `--ledger FILE`: print what finished, run only the rest. */
  resume?: boolean;
  /** The circuit breaker: failures in a row of a kind every job shares before no more jobs start (0: off). */
  maxConsecutiveFailures?: number;
  /** A JSON Schema file: every job's answer is typed by it (its `data` in each line). */
  schema?: string;
  /** Who answers the jobs' approvals (an http(s) URL or a command; approve-with.ts); without it, every gated call is denied. */
  approveWith?: string;
}

const EXECUTORS: readonly ExecutorKind[] = ['piscina', 'tinypool', 'inline', 'worker-per-job', 'bullmq'];

/** A fan-out ready to read its input. */
export interface OpenedFanout {
  /** The task lines: the file, or stdin for `-`. */
  input: Readable;
  ctx: CliContext;
  /** `--ledger FILE` (or `ledger.path`): where the fan-out is kept, for `--resume`. */
  ledger: FanoutLedger | undefined;
  manager: BackgroundManager;
  deliveries: Deliveries;
  /** `--schema FILE`: every job's answer is typed by it. */
  outputSchema: OutputSchema | undefined;
}

/** Checks the flags and opens what the fan-out runs on, or says what is wrong (`exitCode` 2). */
export async function openFanout(file: string, flags: FanoutFlags): Promise<OpenedFanout | { exitCode: number }> {
  /** Says what is wrong (usage, exit 2). */
  const problem = (text: string) => ({ exitCode: usageProblem('fanout', text) });
  const executorKind = flags.executor ?? 'piscina';
  if (!EXECUTORS.includes(executorKind)) {
    return problem(`--executor expects one of ${EXECUTORS.join(', ')}; received ${preview(String(flags.executor))}`);
  }
  const typed = flags.schema === undefined ? undefined : readSchemaFile(flags.schema);
  if (typed && 'problem' in typed) return problem(typed.problem);
  const approver = flags.approveWith === undefined ? undefined : parseApprover(flags.approveWith);
  if (approver && 'problem' in approver) return problem(approver.problem);
  const input = openInput(file);
  // Its own default isolation (weaker than every flag, variable and file): see FANOUT_ISOLATION.
  // And with a session budget, a task waits for budget held by running ones (unless the config says `refuse`).
  const ctx = await createCliContext(flags, { defaultIsolation: FANOUT_ISOLATION, defaultOnExhausted: 'queue' });
  ctx.config = fanoutApprovals(ctx.config, approver);
  if (flags.agent !== undefined && !Object.hasOwn(ctx.config.agents, flags.agent)) {
    const known = Object.keys(ctx.config.agents);
    await ctx.dispose();
    return problem(
      `--agent expects one of the configured agents (${known.length ? known.join(', ') : 'none is configured'}); received ${preview(flags.agent)}`,
    );
  }
  if (flags.resume && ctx.config.ledger.path === undefined) {
    await ctx.dispose();
    return problem('--resume continues the fan-out kept in a ledger; give it with --ledger FILE (or ledger.path in the config)');
  }
  const ledger = ctx.config.ledger.path === undefined ? undefined : await buildOrDispose(ctx, () => openFanoutLedger(ctx.config, flags.resume === true));
  if (ledger && 'problem' in ledger) {
    await ctx.dispose();
    return problem(ledger.problem);
  }
  const manager = await buildOrDispose(ctx, () => {
    try {
      return new BackgroundManager({
        config: ctx.config,
        logger: ctx.logger,
        // With a ledger, BullMQ job ids derive from it: a resumed fan-out adopts what is still queued or running.
        executor: createExecutor(ctx.config, ctx.logger, executorKind, undefined, ledger?.jobs.scope),
        closeExecutor: true,
        ...(ledger ? { store: ledger.jobs } : {}),
      });
    } catch (error) {
      ledger?.close();
      throw error;
    }
  });
  // MCP servers connect before the first spawn, so every job is offered their tools (a failure is the manager's to report).
  await manager.tools.start().catch(() => {});
  const deliveries = new Deliveries(manager);
  if (approver) answerApprovals(manager, approver, ctx.config.approvalTimeoutMs, (line) => process.stderr.write(`${line}\n`));
  return { input, ctx, ledger, manager, deliveries, outputSchema: typed?.schema };
}
