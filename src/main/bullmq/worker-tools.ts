/**
 * The MCP tools of a `forkpool worker`: its own config's servers (never a job's), started before
 * it takes jobs and closed with it. A job is offered stubs of those among its tools (the job's
 * and the worker's, see worker-policy.ts), and its `tool-call`s run here, on the worker's main
 * thread, as a local job's run on its manager's (runner.ts).
 */
import type { Logger } from 'pino';
import type { ForkpoolConfig } from '../../shared/config.js';
import type { HostToolAnswer, HostToolStub, JobSpec } from '../../shared/protocol.js';
import { offeredTools } from '../../shared/spawn-spec.js';
import { configuredSecrets } from '../../shared/tools/secrets.js';
import { ToolCatalog } from '../tools/catalog.js';
import { runHostCall } from '../tools/host-calls.js';
import { mcpServersOf, mcpToolSources } from '../tools/mcp/index.js';
import { hookRunnerFor, isHookCall, type HookRunner } from '../hooks/hook-runner.js';

export class WorkerTools {
  readonly #catalog: ToolCatalog;
  readonly #secrets: readonly string[];
  /** This worker's own config's hooks (never a job's: a producer cannot make it run a command). */
  readonly #hooks: HookRunner;

  constructor(config: ForkpoolConfig, logger: Logger | undefined) {
    this.#secrets = configuredSecrets(config);
    this.#hooks = hookRunnerFor(config, undefined, undefined, logger);
    const mcp = mcpToolSources(mcpServersOf(config), {
      ...(logger ? { logger } : {}),
      secrets: this.#secrets,
      outputMaxChars: config.toolLimits.outputMaxChars,
    });
    this.#catalog = new ToolCatalog(config, [], mcp);
  }

  /** Connects every server and lists its tools (a server that is down is retried by its hub). */
  start(): Promise<void> {
    return this.#catalog.start();
  }

  close(): Promise<void> {
    return this.#catalog.close();
  }

  /**
   * The spec with stubs of the main-thread (MCP) tools it is offered (its config's tools, its
   * spawn's narrowing and extras), and the job events this worker has hooks for.
   */
  withStubs(spec: JobSpec): JobSpec {
    const hostTools: HostToolStub[] = this.#catalog.hostStubs(offeredTools(spec.config, spec.agent, spec));
    const { hooks: _theirs, ...own } = spec;
    const hooks = this.#hooks.jobEvents();
    return { ...own, ...(hostTools.length > 0 ? { hostTools } : {}), ...(hooks.length > 0 ? { hooks } : {}) };
  }

  /** Runs a job's `tool-call`: only a tool its spec was offered (a job cannot make the worker run another). */
  run(spec: JobSpec, call: { name: string; callId: string; args: unknown }, signal: AbortSignal): Promise<HostToolAnswer> {
    if (isHookCall(call.name)) return this.#hooks.answerCall(spec.id, call.name, call.args, signal);
    const def = this.#catalog.hostTool(call.name);
    if (!def || !spec.hostTools?.some((stub) => stub.name === call.name)) {
      return Promise.resolve({ ok: false, code: 'TOOL_UNKNOWN', message: `${call.name} is not a host tool of this job` });
    }
    const { toolTimeoutMs, outputMaxChars } = spec.config.toolLimits;
    const limits = { timeoutMs: toolTimeoutMs, outputMaxChars, secrets: this.#secrets };
    return runHostCall(def, call.args, { jobId: spec.id, callId: call.callId, agent: spec.agent ?? 'fork' }, signal, limits);
  }
}
