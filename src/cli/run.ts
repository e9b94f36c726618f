import { createInterface } from 'node:readline/promises';
import { AgentSession } from '../main/session/agent-session.js';
import type { PermissionAsker } from '../main/limits/permissions.js';
import type { CloseReport } from '../main/jobs/manager.js';
import { buildOrDispose, createCliContext, onTermination, type CliContext, type GlobalFlags } from './common.js';
import { EXIT, usageProblem } from './exit.js';
import { costLines, escapeForTerminal, escapeLinesForTerminal, jobLine, oneLine, usageLines } from '../main/views/terminal-lines.js';
import { jobJson } from '../main/views/job-view.js';
import { followUpNotice } from '../main/views/follow-up.js';
import type { ForkpoolConfig } from '../shared/config.js';
import type { LoopEvent } from '../shared/loop-events.js';
import { retryLine } from '../shared/model-errors.js';

/** The demo's question list: the parent fans these out, one background agent each. */
export const DEMO_PROMPT = [
  'Answer these questions about the code in this workspace:',
  '1. Where is the shared tool loop implemented, and how does it stop?',
  '2. Scout: how does the background manager enforce its concurrency cap?',
  '3. How are API keys kept out of logs and tool environments?',
  '4. Which code is marked deprecated?',
  '5. Delegate: How does the simulated model inject faults?',
].join('\n');

/**
 * The demo's peer agent and nesting, when the config declares none: a `scout` peer (its own
 * model name, fewer tools, its own prompt), given to the parent (`agentTools`: the spawn tool
 * offers only those), and depth 2, so question 5 is delegated twice.
 */
function withDemoAgents(config: ForkpoolConfig): ForkpoolConfig {
  const own = Object.keys(config.agents).length > 0;
  const agents = own
    ? config.agents
    : {
        scout: {
          description: 'Finds where things are in the code; fast and cheap',
          model: `${config.model}-scout`,
          tools: ['find_files', 'grep', 'read_file'] as ForkpoolConfig['tools'],
          budget: { maxTurns: 8 },
          systemPrompt: 'You are the scout: find the files that matter and cite them.',
          replaceSystemPrompt: false,
        },
      };
  const agentTools = own ? config.agentTools : ['scout'];
  return { ...config, agents, agentTools, background: { ...config.background, maxDepth: Math.max(2, config.background.maxDepth) } };
}

export interface RunFlags extends GlobalFlags {
  demo?: boolean;
  /** A session id kept in `--ledger`: continue it. */
  resume?: string;
}

/**
 * With a durable ledger: says (through `say`; default stderr) which session is kept where and
 * how to continue it with `command`, and on a resume what was found.
 */
export function announceLedgerSession(
  ctx: CliContext,
  session: AgentSession,
  command: 'run' | 'chat',
  resumed: boolean,
  say: (line: string) => void = ctx.note,
): void {
  const ledger = ctx.config.ledger.path;
  if (ledger === undefined) return;
  const found = session.manager.recovery;
  const lines = [`forkpool: session ${session.id} kept in ${ledger} (continue it with forkpool ${command} --ledger ${ledger} --resume ${session.id})`];
  if (found && resumed) {
    lines.push(
      `forkpool: resumed: ${found.undelivered.length} result(s) waiting, ${found.requeued.length} queued again, ${found.rerun.length} re-run, ${found.interrupted.length} delivered as interrupted${found.sleeping.length > 0 ? `, ${found.sleeping.length} asleep (each wakes at its time)` : ''}`,
    );
    for (const row of found.invalid) lines.push(`forkpool: warning: ledger row ${row.id} was not recovered: ${row.problem}`);
  }
  for (const line of lines) say(line);
  ctx.event('session', { id: session.id, ledger, ...(found && resumed ? { recovered: found } : {}) });
}

export async function runCommand(promptArg: string | undefined, flags: RunFlags): Promise<number> {
  const prompt = flags.demo ? DEMO_PROMPT : promptArg === '-' ? await readStdin() : promptArg;
  if (!prompt || !prompt.trim()) {
    return usageProblem('run', 'give a prompt, "-" to read it from stdin, or --demo');
  }
  const ctx = await createCliContext(flags);
  const config = flags.demo ? withDemoAgents(ctx.config) : ctx.config;
  const session = await buildOrDispose(
    ctx,
    () =>
      new AgentSession({
        config,
        logger: ctx.logger,
        ...(config.permissionMode === 'ask' && process.stdin.isTTY ? { asker: terminalAsker } : {}),
        ...(flags.resume !== undefined ? { sessionId: flags.resume, resume: true } : {}),
      }),
  );
  // MCP servers connect before the first turn, so a job spawned at once is offered their tools (a failure is the manager's to report).
  await session.manager.tools.start().catch(() => {});
  announceLedgerSession(ctx, session, 'run', flags.resume !== undefined);
  const started = Date.now();
  session.manager.on('spawned', (job) => {
    const nested = job.parentJobId ? `${'  '.repeat((job.depth ?? 2) - 1)}└ ` : '';
    // Labels, agent names, alerts and answers are a model's text: escaped before the terminal.
    const peer = job.agent ? ` [agent ${escapeForTerminal(job.agent)}]` : '';
    ctx.note(`${nested}● ${job.id}${peer} "${escapeForTerminal(job.label)}" spawned${job.parentJobId ? ` by ${job.parentJobId} (depth ${job.depth})` : ''}`);
    ctx.event('job_spawned', {
      id: job.id,
      label: job.label,
      role: job.role,
      wave: job.wave,
      agent: job.agent ?? null,
      name: job.name ?? null,
      parentJobId: job.parentJobId ?? null,
      depth: job.depth ?? 1,
      parentToolId: job.parentToolId ?? null,
    });
  });
  session.manager.on('done', (job) => {
    ctx.note(`${job.parentJobId ? `${'  '.repeat((job.depth ?? 2) - 1)}└ ` : ''}${jobLine(job)}`);
    ctx.event('job_done', jobJson(job));
  });
  session.on('alert', (alert) => {
    ctx.note(`⚠ ${alert.jobId} "${escapeForTerminal(alert.label)}" alert (${alert.severity}): ${oneLine(alert.message, 2_000)}`);
    ctx.event('alert', { jobId: alert.jobId, label: alert.label, severity: alert.severity, message: alert.message, number: alert.number });
  });
  session.on('alert-dropped', (alert) => ctx.event('alert_dropped', { jobId: alert.jobId, number: alert.number }));
  session.manager.on('backgrounded', (job) => {
    ctx.note(`↷ ${job.id} [agent ${escapeForTerminal(job.agent ?? '?')}] backgrounded: the call returned early, the job goes on`);
    ctx.event('job_backgrounded', { id: job.id, agent: job.agent ?? null, parentToolId: job.parentToolId ?? null });
  });
  session.on('delivered', ({ turn, jobs }) => {
    ctx.note(`↳ ${jobs.length} background result(s) delivered into turn ${turn}`);
    ctx.event('delivered', { turn, jobs: jobs.map((j) => j.id) });
  });
  // Retries are never silent: one line each (`rate limited by <host>, retrying in 15 s (2/4)`), an event in --json.
  session.on('parent', (event) => {
    if (event.type === 'loop' && event.event.type === 'retry') noteRetry(ctx, null, event.event);
  });
  session.manager.on('progress', ({ jobId, event }) => {
    if (event.type === 'retry') noteRetry(ctx, jobId, event);
  });
  session.on('parent', (event) => {
    if (event.type === 'loop' && event.event.type === 'tool_call')
      ctx.logger.debug({ turn: event.turn, tool: event.event.name, ...(event.event.background ? { background: true } : {}) }, 'parent tool call');
    // What started it (a wave's end, its join's quorum or deadline, a person's job...), never the block it delivers.
    if (event.type === 'turn_start' && event.followUp) {
      ctx.note(followUpNotice(event.turn, event.cause));
      ctx.event('follow_up', { turn: event.turn, cause: event.cause ?? null });
    }
  });
  // Turns that ended without a whole answer (failed, cut at max_tokens, iteration cap, loop): the run exits 1.
  let unfinishedTurns = 0;
  session.on('turn-result', (result) => {
    if (ctx.json)
      ctx.event('answer', {
        turn: result.turn,
        followUp: result.followUp,
        stopReason: result.stopReason,
        text: result.answer,
        // Code and message only: a stack (and a cause's) names this machine's files, and is no use to a script.
        error: result.error ? { code: result.error.code, message: result.error.message } : null,
      });
    // On a terminal the answer is escaped (line feeds and tabs kept); piped, it is the exact text.
    else process.stdout.write(`${result.followUp ? '\n' : ''}${process.stdout.isTTY ? escapeLinesForTerminal(result.answer) : result.answer}\n`);
    if (result.stopReason === 'final') return;
    unfinishedTurns++;
    ctx.note(`turn ${result.turn} ended with ${result.stopReason}${result.error ? `: ${oneLine(result.error.message, 2_000)}` : ''}`);
  });

  const stopSignals = onTermination(async () => {
    const report = await session.close({ timeoutMs: Math.min(config.background.closeTimeoutMs, 5_000) });
    ctx.note(`stopped: ${report.cancelled.length} job(s) cancelled, ${report.stragglers.length} hard-stopped`);
    printTotals();
    await ctx.dispose();
  });

  let totalsPrinted = false;
  function printTotals(): void {
    // Once: on a signal, the stop handler and the main flow (woken up by close) both get here.
    if (totalsPrinted) return;
    totalsPrinted = true;
    const usage = session.agent.session.usage();
    const pool = session.manager.budgetPool();
    ctx.event('usage', { byBucket: usage, elapsedMs: Date.now() - started, ...(pool ? { sessionBudget: pool } : {}) });
    const lines = usageLines(usage);
    if (lines.length) ctx.note(`tokens (${((Date.now() - started) / 1000).toFixed(1)}s):\n${lines.join('\n')}`);
    const costs = costLines(config, usage, pool);
    if (costs.length) ctx.note(costs.join('\n'));
  }

  try {
    await session.submit(prompt);
    await session.onIdle();
    const closed = await session.close();
    printTotals();
    // Never exit 0 over a result the parent never got (its delivery could not be recorded: a full disk).
    const lost = undeliveredAtExit(ctx, session, closed);
    // Nor over an answer that is not whole (its turn's line above says why): a script reading stdout would take it for one.
    return unfinishedTurns > 0 || lost > 0 ? EXIT.failure : EXIT.ok;
  } finally {
    stopSignals();
    await ctx.dispose();
  }
}

/**
 * After a clean close, when the durable ledger failed a write during the session: the background
 * results that ended before the close and never reached the parent (a follow-up delivers every
 * ending while the session lives, unless the ledger could not record the delivery). Not counted:
 * the jobs the close itself stopped (`closed`), and any result left undelivered by a person's
 * choice on a healthy ledger (a chat quit before its follow-up). Says how many and where they
 * are, and returns the count.
 */
export function undeliveredAtExit(ctx: CliContext, session: AgentSession, closed: CloseReport, command: 'run' | 'chat' = 'run'): number {
  const health = session.manager.ledgerHealth();
  if (health.failedWrites === 0) return 0;
  const stoppedByClose = new Set([...closed.cancelled, ...closed.stragglers]);
  const waiting = session.deliveries.undelivered().filter((job) => !stoppedByClose.has(job.id));
  if (waiting.length === 0) return 0;
  const why = health.failure ? `the ledger could not record their delivery: ${oneLine(health.failure.message, 300)}` : 'they were never delivered';
  const ledger = ctx.config.ledger.path;
  const where =
    ledger === undefined
      ? 'they are lost with this process'
      : health.unsaved > 0
        ? `${health.unsaved} record(s) could not be written to ${ledger}: a --resume runs those jobs again`
        : `they wait in ${ledger}: forkpool ${command} --ledger ${ledger} --resume ${session.id} delivers them`;
  ctx.note(`forkpool: ${waiting.length} background result(s) ended but never reached the parent (${why}); ${where}`);
  ctx.event('undelivered', { jobs: waiting.map((job) => job.id), ledgerHealth: health });
  return waiting.length;
}

const terminalAsker: PermissionAsker = async (request) => {
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    const answer = (await rl.question(`Allow ${request.tool}: ${request.summary}? [y]es once / [a]lways / [N]o `)).trim().toLowerCase();
    return answer === 'a' || answer === 'always' ? 'always' : answer === 'y' || answer === 'yes' ? 'once' : 'deny';
  } finally {
    rl.close();
  }
};

async function readStdin(): Promise<string> {
  let text = '';
  for await (const chunk of process.stdin) text += String(chunk);
  return text;
}

/** One retry of a model call, the parent's (`jobId` null) or a job's: a line on stderr, an event in --json. */
export function noteRetry(ctx: Pick<CliContext, 'note' | 'event'>, jobId: string | null, event: Extract<LoopEvent, { type: 'retry' }>): void {
  ctx.note(`↻ ${jobId ? `${jobId}: ` : ''}${retryLine(event)}`);
  ctx.event('retry', {
    jobId,
    attempt: event.attempt,
    maxRetries: event.maxRetries ?? null,
    delayMs: event.delayMs,
    status: event.status ?? null,
    host: event.host ?? null,
    reason: event.reason,
  });
}
