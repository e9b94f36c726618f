import { assertModelConfigured, type ForkpoolConfig } from '../../shared/config.js';
import type { Executor } from '../executors/executor.js';
import { remoteExecutorOf } from '../remote/spawner.js';
import { createExecutor } from './executor-factory.js';
import { checkSandbox, type SandboxStatus } from '../../shared/tools/bwrap.js';
import { hiddenPathsOf, sqliteFiles } from '../../shared/tools/hidden.js';
import { configuredSecrets } from '../../shared/tools/secrets.js';
import { hookRunnerFor, type HookRunner } from '../hooks/hook-runner.js';
import { firstTimeInProcess } from '../setup/once-per-process.js';
import { ToolCatalog } from '../tools/catalog.js';
import { mcpServersOf, mcpToolSources, withProtectedMcpFiles } from '../tools/mcp/index.js';
import { resolveToolModules } from '../tools/tool-modules.js';
import type { BackgroundManagerOptions } from './manager-api.js';

/** What a manager decides once, before any job: how bash runs, what no tool opens, the config its jobs carry, its tools and hooks. */
export interface ManagerSetup {
  sandbox: SandboxStatus;
  hiddenPaths: readonly string[];
  config: ForkpoolConfig;
  tools: ToolCatalog;
  hooks: HookRunner;
  /** Where its jobs run; `owned`: the manager closes it (BackgroundManagerOptions.closeExecutor, or one made here). */
  executor: { executor: Executor; owned: boolean };
  /** BackgroundManagerOptions.remote: where `executor: "remote"` spawns run; `owned`: made here from a spawner, closed with the manager. */
  remote: { executor: Executor; owned: boolean } | undefined;
}

/**
 * The BackgroundManager constructor's first steps (each may throw a ConfigError, and then no
 * job was accepted): the sandbox, checked once, not per thread (an explicit "bwrap" that does
 * not work is an error); the hidden paths and tool modules, resolved on the main thread and
 * carried to every job in its spec's config; the tool catalog with the config's MCP servers as
 * one more tool source each; the hooks; last, the executors (made last: a throw before leaves none to close).
 */
export function setUpManager(options: BackgroundManagerOptions): ManagerSetup {
  const { logger, store } = options;
  const sandbox = checkSandbox(options.config);
  const hiddenPaths = hiddenPathsOf(options.config, store?.path === undefined ? [] : sqliteFiles(store.path));
  // Tool modules by absolute path (a config built in code names them from the working
  // directory); loaded here once, so one that fails is a config error now, not in a job.
  const config = {
    ...withProtectedMcpFiles(resolveToolModules(options.config, process.cwd()), process.cwd()),
    sandbox: sandbox.mode,
    hiddenPaths: [...hiddenPaths],
  };
  const mcp = mcpToolSources(mcpServersOf(config), { logger, secrets: configuredSecrets(config), outputMaxChars: config.toolLimits.outputMaxChars });
  const tools = new ToolCatalog(config, options.tools, [...(options.toolSources ?? []), ...mcp]);
  tools.checkConfig(config);
  const hooks = hookRunnerFor(config, options.hooks, store?.scope, logger);
  // Once per process, not per manager (see once-per-process.ts); `sandbox.notice` still says it to whoever asks.
  if (sandbox.notice && firstTimeInProcess(sandbox.notice)) {
    if (logger) logger.warn(sandbox.notice);
    else process.emitWarning(sandbox.notice, { code: 'FORKPOOL_NO_SANDBOX' });
  }
  const remote = remoteExecutorOf(options.remote);
  // Its own executor runs model calls: no endpoint configured is an error now, not in every job.
  if (options.executor === undefined) assertModelConfigured(options.config);
  const executor = options.executor ?? createExecutor(options.config, logger, options.config.executor, undefined, store?.scope);
  const owned = options.closeExecutor ?? options.executor === undefined;
  return { sandbox, hiddenPaths, config, tools, hooks, executor: { executor, owned }, remote };
}
