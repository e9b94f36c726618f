#!/usr/bin/env node
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { FANOUT_MAX_CONSECUTIVE_FAILURES } from '../shared/defaults.js';
import { GATED_TOOLS } from '../shared/fixed-limits.js';
import { completionCommand, SHELLS } from './completion.js';
import { EXIT, parseIntFlag, parsePositiveNumber, errorJsonLine, reportError, reportErrorsAsJson } from './exit.js';
import { flushCliTracing } from './tracing.js';
import { loadOptional } from '../main/executors/optional-package.js';
// Types only: each command's module (and what it loads: the job engine, openai, pino, sqlite, the
// simulator, the TUI) is imported by its action, so `forkpool --version` or `--help` loads none of
// it (test/package/light-import.test.ts).
import type { ToolsFlags } from './tools.js';
import type { InitFlags } from './init.js';
import type { JobsShowFlags } from './jobs.js';
import type { FanoutFlags } from './fanout.js';
import type { ChatFlags } from './chat.js';
import type { RunFlags } from './run.js';
import type { SimFlags } from './sim.js';
import type { ServeFlags } from './serve.js';
import type { WorkerFlags } from './worker.js';

function globalOptions(command: Command): Command {
  return (
    command
      .option('-c, --config <file>', 'config file (default: ./forkpool.config.json when present)')
      .option('-m, --model <name>', 'model name (env FORKPOOL_MODEL / OPENAI_MODEL)')
      .option('--base-url <url>', 'OpenAI-compatible base URL (env OPENAI_BASE_URL); none and no key: the built-in simulator')
      .addOption(
        new Option(
          '--api <wire>',
          'the wire the endpoint speaks: chat (Chat Completions), responses (OpenAI Responses), anthropic (Messages; key ANTHROPIC_API_KEY)',
        ).choices(['chat', 'responses', 'anthropic']),
      )
      .option('-w, --workspace <dir>', 'workspace root the tools are confined to (default: the current directory)')
      .option('--allow-broad-workspace', 'accept / or the home folder as the workspace (refused by default)')
      .option('--json', 'one JSON event per line on stdout, for scripts')
      .addOption(
        new Option('--log-level <level>', 'log level on stderr').choices(['silent', 'fatal', 'error', 'warn', 'info', 'debug', 'trace']).default('warn'),
      )
      .option('--concurrency <n>', 'background jobs running at once (max_background_agents, default 3)', parseIntFlag('--concurrency', 1))
      .addOption(
        new Option('--isolation <mode>', 'thread: one job per worker thread; shared: many per thread (default thread; fanout: shared)').choices([
          'thread',
          'shared',
        ]),
      )
      .option('--timeout <minutes>', 'per-job wall clock, counted from start (default 20)', parsePositiveNumber('--timeout'))
      .option('--max-iterations <n>', "the parent agent's model calls per turn (default 20)", parseIntFlag('--max-iterations', 1))
      .option(
        '--max-turns <n>',
        "a background job's model calls: its budget's maxTurns (default 50; a spawn may ask fewer)",
        parseIntFlag('--max-turns', 1, 100_000),
      )
      // Any catalog name (a gated host, module or MCP tool too): an unknown one is a config error naming it.
      .option('--grant <tools...>', `grant gated tools up front (${GATED_TOOLS.join(', ')}, or a gated tool of yours)`)
      .option('--ask', 'ask on the terminal before an ungranted gated tool runs in the parent (background jobs never ask)')
      .option('--no-stream', 'use non-streaming model requests')
      .option('--sim', 'run on the built-in simulated model (loopback, no key), whatever endpoint is configured')
      .option('--sim-latency <ms>', 'latency of the built-in simulator, when it is used', parseIntFlag('--sim-latency', 0))
      .option('--sim-steps <n>', 'model calls of a research answer on the built-in simulator (default 3)', parseIntFlag('--sim-steps', 1, 100))
  );
}

export function buildProgram(setExit: (code: number) => void): Command {
  const program = new Command('forkpool')
    .description('Background sub-agents for LLM agents, in Piscina worker threads.')
    .version('0.1.0')
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride();

  globalOptions(program.command('run').description('run the parent agent on a prompt; background agents fan out and report back'))
    .argument('[prompt]', 'the prompt, or "-" to read it from stdin')
    .addOption(
      new Option('--role <role>', "the parent agent's role: its usage is booked under <role>, its jobs' under <role>:subagent (default primary)").choices([
        'primary',
        'escalation',
      ]),
    )
    .option('--demo', 'run the built-in demo prompt over this workspace')
    .option('--ledger <file>', 'keep jobs and the session in this SQLite file (docs/durability.md); the session id is printed')
    .option('--allow-ledger-in-workspace', 'accept a --ledger file inside the workspace, where jobs could read and rewrite it (refused by default)')
    .option('--resume <session>', 'continue a session kept in --ledger: its conversation, its waiting results and interrupted jobs')
    .action(async (prompt: string | undefined, flags: RunFlags) => setExit(await (await import('./run.js')).runCommand(prompt, flags)));

  globalOptions(
    program
      .command('chat')
      .description(
        'talk to the parent agent over many turns: live background jobs, /bg commands, Ctrl+Enter for a job of your own (plain lines when not on a terminal)',
      ),
  )
    .option('--ledger <file>', 'keep jobs and the conversation in this SQLite file (docs/durability.md); the session id is printed')
    .option('--allow-ledger-in-workspace', 'accept a --ledger file inside the workspace, where jobs could read and rewrite it (refused by default)')
    .option('--resume <session>', 'continue a conversation kept in --ledger, with its waiting results and interrupted jobs')
    .addOption(
      new Option('--role <role>', "the parent agent's role: its usage is booked under <role>, its jobs' under <role>:subagent (default primary)").choices([
        'primary',
        'escalation',
      ]),
    )
    .option(
      '--agent <name>',
      'your own jobs (/bg start, Ctrl+Enter) run as this configured agent (default: background.defaultAgent, else asked once on a terminal)',
    )
    .action(async (flags: ChatFlags) => setExit(await (await import('./chat.js')).chatCommand(flags)));

  globalOptions(program.command('fanout').description('run every line of a JSONL file ({"task": …, "label": …}) as a background job, no parent'))
    .argument('<file>', 'JSONL file, or "-" for stdin')
    .addOption(new Option('--executor <kind>', 'where jobs run').choices(['piscina', 'tinypool', 'inline', 'worker-per-job', 'bullmq']).default('piscina'))
    .option('--no-progress', 'no progress bar')
    .option('--agent <name>', 'run every line as this configured agent (a line\'s own "agent" wins; default: background.defaultAgent)')
    .option('--ledger <file>', "keep every task's job in this SQLite file, so a killed fan-out can be resumed")
    .option('--allow-ledger-in-workspace', 'accept a --ledger file inside the workspace, where jobs could read and rewrite it (refused by default)')
    .option('--resume', 'continue the fan-out kept in --ledger: finished tasks are printed from it, only the rest run')
    .option(
      '--max-consecutive-failures <n>',
      `stop starting jobs after this many in a row fail alike on connection or auth (refused, DNS, TLS, 401/403); 0: never (default ${FANOUT_MAX_CONSECUTIVE_FAILURES})`,
      parseIntFlag('--max-consecutive-failures', 0),
    )
    .option('--schema <file>', 'a JSON Schema file: every job answers with a value of it, printed as "data" in its line (docs/delivery.md "Typed results")')
    .option(
      '--approve-with <url|command>',
      "answer the jobs' approvals (approvals ask): POST each to this http(s) URL, or give it to this command on stdin; the JSON decision it answers decides (default: deny every gated call)",
    )
    .action(async (file: string, flags: FanoutFlags) => setExit(await (await import('./fanout.js')).fanoutCommand(file, flags)));

  globalOptions(program.command('serve').description('serve the HTTP + SSE API and the live jobs page (loopback, bearer token)'))
    .addOption(
      new Option('--role <role>', "the parent agent's role: its usage is booked under <role>, its jobs' under <role>:subagent (default primary)").choices([
        'primary',
        'escalation',
      ]),
    )
    .option('-p, --port <n>', 'port (0: any free port; default 4477 or config server.port)', parseIntFlag('--port', 0, 65_535))
    .option('--host <host>', 'address to bind (default 127.0.0.1 or config server.host)')
    .addOption(
      new Option('--executor <kind>', 'where jobs run (default: config executor, piscina)').choices([
        'piscina',
        'tinypool',
        'inline',
        'worker-per-job',
        'bullmq',
      ]),
    )
    .option('--ledger <file>', "keep the server's jobs and sessions in this SQLite file; a restart finds them again")
    .option('--allow-ledger-in-workspace', 'accept a --ledger file inside the workspace, where jobs could read and rewrite it (refused by default)')
    .action(async (flags: ServeFlags) => {
      // fastify (an optional peer) loads only for this command.
      const { serveCommand } = await loadOptional('forkpool serve', ['fastify'], () => import('./serve.js'));
      setExit(await serveCommand(flags));
    });

  program
    .command('worker')
    .description('run background jobs from a BullMQ queue (executor "bullmq"), on this or any machine that reaches Redis')
    .option('--redis <url>', 'Redis URL (env FORKPOOL_REDIS_URL, config redisUrl)')
    .option('--concurrency <n>', 'jobs this worker runs at once, one thread each (default background.maxConcurrent)', parseIntFlag('--concurrency', 1))
    .option('--queue <name>', 'BullMQ queue (default bullmq.queue, "forkpool")')
    .option(
      '--lock-ms <ms>',
      "job lock; a dead worker's jobs run again within about 1.5 times this (default bullmq.lockMs, 6000)",
      parseIntFlag('--lock-ms', 1_000),
    )
    .option(
      '--max-stalls <n>',
      'a job whose worker died this many times is failed, not run again (default bullmq.maxStalls, 2)',
      parseIntFlag('--max-stalls', 0, 100),
    )
    .option('-c, --config <file>', 'config file (default: ./forkpool.config.json when present)')
    .option('--json', 'one JSON event per line on stdout')
    .addOption(new Option('--log-level <level>', 'log level on stderr').choices(['silent', 'fatal', 'error', 'warn', 'info', 'debug', 'trace']).default('warn'))
    .action(async (flags: WorkerFlags) => {
      // bullmq and ioredis (optional peers) load only for this command.
      const { workerCommand } = await loadOptional('forkpool worker', ['bullmq', 'ioredis'], () => import('./worker.js'));
      setExit(await workerCommand(flags));
    });

  program
    .command('completion')
    .description('print a shell completion script (bash, zsh or fish), made from these commands and options')
    .argument('<shell>', SHELLS.join(', '))
    .action((shell: string) => setExit(completionCommand(shell, program)));

  program
    .command('jobs')
    .description('read a job of a finished fan-out or session from its durable ledger')
    .command('show')
    .description("a job's line and its transcript: model turns (tokens, time, tool calls with arguments) and tool results (head and tail)")
    .argument('<id>', 'the job id (bg-N)')
    .option('--ledger <file>', 'the SQLite ledger the fan-out or session ran with (default: ledger.path of the config)')
    .option('-c, --config <file>', 'config file, for its ledger.path (default: ./forkpool.config.json when present)')
    .option('--scope <name>', 'the scope (session id, "fanout", "server") when the id is in several')
    .option('--offset <n>', 'first step shown, among the kept ones', parseIntFlag('--offset', 0))
    .option('--limit <n>', 'steps shown at most', parseIntFlag('--limit', 1))
    .option('--json', 'one JSON object: the job and its transcript page')
    .action(async (id: string, flags: JobsShowFlags) => setExit((await import('./jobs.js')).jobsShowCommand(id, flags)));

  program
    .command('tools')
    .description("list the tool catalog: built-ins, the config's tool modules and MCP servers' tools, with source, gate and JSON Schema")
    .option('-c, --config <file>', 'config file (default: ./forkpool.config.json when present)')
    .option('--json', 'one JSON object: every tool with its name, source, gated, description and parameters')
    .action(async (flags: ToolsFlags) => setExit(await (await import('./tools.js')).toolsCommand(flags)));

  program
    .command('init')
    .description('write a starter forkpool.config.json here, commented, with its JSON Schema for editors')
    .option('--force', 'replace an existing forkpool.config.json')
    .action(async (flags: InitFlags) => setExit((await import('./init.js')).initCommand(flags)));

  program
    .command('sim')
    .description('run the simulated OpenAI-compatible model server on loopback')
    .option('-p, --port <n>', 'port (0: any free port)', parseIntFlag('--port', 0, 65_535), 8787)
    .option('--host <host>', 'loopback address to bind', '127.0.0.1')
    .option('--latency <ms>', 'fixed latency before each response', parseIntFlag('--latency', 0))
    .option('--per-token <ms>', 'extra latency per output token', parseIntFlag('--per-token', 0))
    .option('--jitter <ms>', 'uniform seeded jitter added to the latency', parseIntFlag('--jitter', 0))
    .option('--fault-rate <p>', 'probability of a random fault per request (0..1)', (v: string) => {
      const n = Number(v);
      // InvalidArgumentError, not a bare CommanderError: commander prints it (the latter exited 2 silently).
      if (!(n >= 0 && n <= 1)) throw new InvalidArgumentError(`--fault-rate expects a number from 0 to 1, received "${v}"`);
      return n;
    })
    .option('--faults <kinds>', 'comma-separated fault kinds drawn at that rate')
    .option('--seed <n>', 'PRNG seed', parseIntFlag('--seed', 0))
    .action(async (flags: SimFlags) => setExit(await (await import('./sim.js')).simCommand(flags)));

  return program;
}

async function main(): Promise<void> {
  let exitCode: number = EXIT.ok;
  const program = buildProgram((code) => (exitCode = code));
  // Bare `forkpool` on a terminal opens the chat; elsewhere it prints the help as before.
  const argv = process.argv.length === 2 && process.stdin.isTTY && process.stdout.isTTY ? [...process.argv, 'chat'] : process.argv;
  const options = argv.slice(2);
  reportErrorsAsJson(options.slice(0, options.includes('--') ? options.indexOf('--') : undefined).includes('--json'));
  try {
    await program.parseAsync(argv);
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help and version are not errors; every other usage problem exits 2 (commander said it on stderr).
      const ok = error.exitCode === 0 || error.code === 'commander.helpDisplayed' || error.code === 'commander.version';
      exitCode = ok ? EXIT.ok : EXIT.usage;
      if (!ok) errorJsonLine('USAGE', error.message.replace(/^error: /, ''), EXIT.usage);
    } else {
      exitCode = reportError(error);
    }
  }
  // The last spans (a run's turn and jobs) leave before the process does.
  await flushCliTracing();
  process.exitCode = exitCode;
}

await main();
