import { statSync } from 'node:fs';
import type { Logger } from 'pino';
import type { ForkpoolConfig } from '../shared/config.js';
import { ConfigError } from '../shared/errors.js';
import { EXIT, UsageError } from './exit.js';
import { loadConfig, type ConfigOverrides } from '../main/setup/config-load.js';
import { createLogger, LOG_LEVELS, type LogLevel } from '../main/setup/logger.js';
import { startSimServer, type SimServer } from '../sim/index.js';
import { jsonForTerminal } from '../shared/terminal-text.js';
import { configuredSecrets } from '../shared/tools/secrets.js';
import { flushCliTracing, startCliTracing } from './tracing.js';
import { DEFAULTS } from '../shared/defaults.js';
import { assertKeyForEndpoint, keyVariableFor } from '../shared/endpoint-key.js';

/** Flags every command shares. */
export interface GlobalFlags {
  config?: string;
  model?: string;
  baseUrl?: string;
  api?: string;
  workspace?: string;
  /** Accept / or the home folder as the workspace. */
  allowBroadWorkspace?: boolean;
  json?: boolean;
  logLevel?: string;
  concurrency?: number;
  isolation?: string;
  timeout?: number;
  grant?: string[];
  maxIterations?: number;
  maxTurns?: number;
  stream?: boolean;
  ask?: boolean;
  /** `--role primary|escalation` (run, chat, serve): the parent agent's role. */
  role?: string;
  simLatency?: number;
  /** Model calls of a research answer on the built-in simulator (its `researchSteps`). */
  simSteps?: number;
  /** `--sim`: the built-in simulator serves the model, whatever endpoint or key is configured. */
  sim?: boolean;
  /** `--ledger FILE`: the durable ledger (SQLite). */
  ledger?: string;
  /** `--allow-ledger-in-workspace`: accept a ledger file inside the workspace. */
  allowLedgerInWorkspace?: boolean;
}

export interface CliContext {
  config: ForkpoolConfig;
  logger: Logger;
  json: boolean;
  /** Set when the built-in simulator serves the model. */
  sim?: SimServer;
  /** Writes one line to stdout: a JSON event with `--json`, else nothing. */
  event(type: string, data: Record<string, unknown>): void;
  /** One human line on stderr (suppressed with `--json`, where events say it). */
  note: (line: string) => void;
  dispose(): Promise<void>;
}

/**
 * Loads the config (file < environment < flags), builds the logger and, when no model is
 * configured at all, starts the built-in simulator on loopback and says so in one line.
 */
export async function createCliContext(
  flags: GlobalFlags,
  defaults: Pick<ConfigOverrides, 'defaultIsolation' | 'defaultOnExhausted'> = {},
): Promise<CliContext> {
  const level = (flags.logLevel ?? 'warn') as LogLevel;
  if (!LOG_LEVELS.includes(level)) {
    throw new ConfigError([
      { field: 'logLevel', expected: `one of ${LOG_LEVELS.join(', ')}`, received: JSON.stringify(flags.logLevel), source: 'flag --log-level' },
    ]);
  }
  const overrides: ConfigOverrides = {
    configPath: flags.config,
    model: flags.model,
    baseUrl: flags.baseUrl,
    api: flags.api,
    workspace: flags.workspace,
    allowBroadWorkspace: flags.allowBroadWorkspace,
    maxIterations: flags.maxIterations,
    maxTurns: flags.maxTurns,
    concurrency: flags.concurrency,
    isolation: flags.isolation,
    defaultIsolation: defaults.defaultIsolation,
    defaultOnExhausted: defaults.defaultOnExhausted,
    timeoutMinutes: flags.timeout,
    grant: flags.grant,
    stream: flags.stream === false ? false : undefined,
    permissionMode: flags.ask ? 'ask' : undefined,
    role: flags.role,
    ledgerPath: flags.ledger,
    allowLedgerInWorkspace: flags.allowLedgerInWorkspace,
  };
  // The CLI asks for both the environment and ./forkpool.config.json (or --config); a library caller gets neither unless it asks.
  let config = loadConfig({
    flags: overrides,
    fromEnv: true,
    file: overrides.configPath ?? true,
    onWarning: (message) => process.stderr.write(`forkpool: warning: ${message}\n`),
    // Checked just below, in one line a person reads at a glance.
    checkWorkspace: false,
  });
  checkWorkspaceFolder(config.workspaceRoot);
  // Before anything makes a span: the OTLP exporter, when the environment asks for one (tracing.ts).
  await startCliTracing(process.env, (line) => process.stderr.write(`${line}\n`));
  // Every key the config holds (a peer agent may have its own, an MCP server its env and headers) is redacted from log lines.
  // Human lines on stderr, terminal or not (a pipe, a CI log); JSON log lines only with --json, for the script that asked.
  const logger = createLogger({ level, secrets: configuredSecrets(config), pretty: flags.json !== true });
  const json = flags.json ?? false;
  const out = (line: string) => process.stdout.write(`${line}\n`);
  const context: CliContext = {
    config,
    logger,
    json,
    event: (type, data) => {
      // JSON.stringify leaves C1 controls, U+2028/9 and bidi overrides raw: escaped too.
      if (json) out(jsonForTerminal({ type, ...data }));
    },
    note: (line) => {
      if (!json) process.stderr.write(`${line}\n`);
    },
    dispose: async () => {},
  };
  if (!flags.sim && !config.baseUrl && !config.apiKey && config.model !== DEFAULTS.model) {
    // Never the simulator in a real model's name: its tokens would be booked (and priced) as that model's.
    const [provider, server] =
      config.api === 'anthropic'
        ? ['Anthropic', 'a server of the Messages API']
        : config.api === 'responses'
          ? ['OpenAI', 'a server of the Responses API']
          : ['OpenAI', 'any OpenAI-compatible server'];
    throw new UsageError(
      `--model ${config.model} needs a model endpoint: set ${keyVariableFor(config.api)} (${provider}) or --base-url (${server}); --sim runs the built-in simulator instead`,
    );
  }
  // A public endpoint without a key would only answer 401: refused here, in one line.
  if (!flags.sim && config.baseUrl) assertKeyForEndpoint(config.baseUrl, config.apiKey, 'apiKey', config.api);
  if (flags.sim || (!config.baseUrl && !config.apiKey)) {
    const sim = await startSimServer({
      latencyMs: flags.simLatency ?? 40,
      jitterMs: 20,
      recordBodies: false,
      ...(flags.simSteps !== undefined ? { researchSteps: flags.simSteps } : {}),
    });
    // No key goes to the simulator (`--sim` with one configured).
    const { apiKey: _key, ...keyless } = config;
    config = { ...keyless, baseUrl: sim.url };
    context.config = config;
    context.sim = sim;
    context.dispose = () => sim.close();
    context.note(
      `forkpool: ${flags.sim ? '--sim' : 'no model configured'}; using the built-in simulated model at ${sim.url} (loopback, no key, no network). Set ${config.api === 'anthropic' ? '--base-url' : '--base-url/OPENAI_BASE_URL'} and ${keyVariableFor(config.api)} for a real one.`,
    );
    context.event('sim', { url: sim.url });
  }
  return context;
}

/**
 * Builds what a command needs once its context is up (a session, a server, a ledger). If that
 * throws (a config error found only now: a ledger file that is not a database, a sandbox that
 * does not work), the context is disposed first: its simulator's socket would otherwise keep
 * the process alive after the error was printed, and the command would never exit.
 */
export async function buildOrDispose<T>(ctx: CliContext, build: () => T | Promise<T>): Promise<T> {
  try {
    return await build();
  } catch (error) {
    await ctx.dispose();
    throw error;
  }
}

/** The workspace must be an existing folder: every tool resolves paths inside it. */
export function checkWorkspaceFolder(root: string): void {
  let isFolder: boolean;
  try {
    isFolder = statSync(root).isDirectory();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new UsageError(
      code === 'ENOENT' ? `workspace ${JSON.stringify(root)} does not exist` : `cannot use workspace ${JSON.stringify(root)} (${code ?? 'error'})`,
    );
  }
  if (!isFolder) throw new UsageError(`workspace ${JSON.stringify(root)} is not a folder`);
}

/**
 * Runs `stop` once on the first SIGINT/SIGTERM and exits with 130/143 when it is done.
 * A second signal exits at once.
 */
export function onTermination(stop: (signal: 'SIGINT' | 'SIGTERM') => Promise<void>): () => void {
  let stopping = false;
  const handler = (signal: 'SIGINT' | 'SIGTERM') => {
    const code = signal === 'SIGINT' ? EXIT.sigint : EXIT.sigterm;
    if (stopping) process.exit(code);
    stopping = true;
    process.stderr.write(`\nforkpool: ${signal}: stopping background jobs (again to force)…\n`);
    // Not awaited: a signal handler returns at once; the exit in `finally` ends the process either way.
    // The spans of what was stopped are exported first (bounded: see flushCliTracing).
    void stop(signal)
      .finally(() => flushCliTracing())
      .finally(() => process.exit(code));
  };
  const onInt = () => handler('SIGINT');
  const onTerm = () => handler('SIGTERM');
  process.on('SIGINT', onInt);
  process.on('SIGTERM', onTerm);
  return () => {
    process.off('SIGINT', onInt);
    process.off('SIGTERM', onTerm);
  };
}
