import { createInterface } from 'node:readline/promises';
import { AgentSession } from '../main/agent-session.js';
import type { PermissionAsker } from '../main/permissions.js';
import { createCliContext, EXIT, onTermination, type GlobalFlags } from './common.js';
import { jobJson, jobLine, usageLines } from './format.js';

/** The demo's question list: the parent fans these out, one background agent each. */
export const DEMO_PROMPT = [
  'Answer these questions about the code in this workspace:',
  '1. Where is the shared tool loop implemented, and how does it stop?',
  '2. How does the background manager enforce its concurrency cap?',
  '3. How are API keys kept out of logs and tool environments?',
  '4. How does the simulated model inject faults?',
].join('\n');

export interface RunFlags extends GlobalFlags {
  demo?: boolean;
}

export async function runCommand(promptArg: string | undefined, flags: RunFlags): Promise<number> {
  const prompt = flags.demo ? DEMO_PROMPT : promptArg === '-' ? await readStdin() : promptArg;
  if (!prompt || !prompt.trim()) {
    process.stderr.write('forkpool run: give a prompt, "-" to read it from stdin, or --demo\n');
    return EXIT.usage;
  }
  const ctx = await createCliContext(flags);
  const { config } = ctx;
  const session = new AgentSession({
    config,
    logger: ctx.logger,
    ...(config.permissionMode === 'ask' && process.stdin.isTTY ? { asker: terminalAsker } : {}),
  });
  const started = Date.now();
  session.manager.on('spawned', (job) => {
    ctx.note(`● ${job.id} "${job.label}" spawned`);
    ctx.event('job_spawned', { id: job.id, label: job.label, role: job.role, wave: job.wave });
  });
  session.manager.on('done', (job) => {
    ctx.note(jobLine(job));
    ctx.event('job_done', jobJson(job));
  });
  session.on('delivered', ({ turn, jobs }) => {
    ctx.note(`↳ ${jobs.length} background result(s) delivered into turn ${turn}`);
    ctx.event('delivered', { turn, jobs: jobs.map((j) => j.id) });
  });
  session.on('parent', (event) => {
    if (event.type === 'loop' && event.event.type === 'tool_call') ctx.logger.debug({ turn: event.turn, tool: event.event.name }, 'parent tool call');
    if (event.type === 'turn_start' && event.followUp) ctx.note(`… wave finished: follow-up turn ${event.turn}`);
  });
  session.on('turn-result', (result) => {
    if (ctx.json) ctx.event('answer', { turn: result.turn, followUp: result.followUp, stopReason: result.stopReason, text: result.answer, error: result.error ?? null });
    else process.stdout.write(`${result.followUp ? '\n' : ''}${result.answer}\n`);
    if (result.error) ctx.note(`turn ${result.turn} ended with ${result.stopReason}: ${result.error.message}`);
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
    ctx.event('usage', { byBucket: usage, elapsedMs: Date.now() - started });
    const lines = usageLines(usage);
    if (lines.length) ctx.note(`tokens (${((Date.now() - started) / 1000).toFixed(1)}s):\n${lines.join('\n')}`);
  }

  try {
    const first = await session.submit(prompt);
    await session.onIdle();
    await session.close();
    printTotals();
    return first.stopReason === 'error' ? EXIT.failure : EXIT.ok;
  } finally {
    stopSignals();
    await ctx.dispose();
  }
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
