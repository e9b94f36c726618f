/**
 * A worker's own rules for the jobs it takes from the queue. Anyone who can write to Redis can
 * queue a job, so a job only asks; the worker decides:
 *
 * - the model endpoint must be one the worker's own config names (its `baseUrl`, its agents'
 *   `baseUrl`, `bullmq.allowedBaseUrls`), else the job fails with ENDPOINT_NOT_ALLOWED before
 *   any request; the key sent there is the worker's own for that endpoint (none for
 *   `allowedBaseUrls`), and so is the URL; a job on a forkpool simulator of the producer's
 *   process (`request.simulator`: a producer running without a model) runs on the worker's
 *   own simulator when it has one (`simulatorUrl`): no key goes anywhere, and the URL the job
 *   names is never contacted;
 * - workspace, sandbox, network, protected paths and every other policy field are the worker's;
 * - tools and grants are those both sides list, tool limits and the job timeout the tighter; a
 *   tool the job's spawn names (`tools`, `extras`) that the worker's own `tools` lack fails the
 *   job with TOOL_NOT_ALLOWED (run without it, the job would not be what was asked for);
 * - no nested jobs: a job's depth limit is its own depth, so it has no spawn tool.
 *
 * What the job decides (see job-request.ts): its task and conversation, model and the wire it
 * speaks (`api`), temperature, iterations, budgets, request and turn timeouts, its scheduler, its
 * output schema and how it is bound, its agent's prompt.
 */
import { configForAgent } from '../../shared/agents.js';
import { modelBaseUrl, type AgentConfig, type ForkpoolConfig, type ModelApi, type ToolLimits } from '../../shared/config.js';
import { JobError } from '../../shared/errors.js';
import type { JobSpec } from '../../shared/protocol.js';
import { withoutCredentials, type JobRequest, type WireSpec } from './job-request.js';

/** An endpoint the worker allows, with the URL and key it uses there. */
interface AllowedEndpoint {
  /** As jobs name it: {@link withoutCredentials}. */
  endpoint: string;
  url: string;
  apiKey?: string;
  /** The wire the worker's config says it speaks: a job that names none (an older producer's) uses it. */
  api: ModelApi;
  /** The worker's agent this endpoint and key belong to; unset: its top-level one (or `allowedBaseUrls`). */
  agent?: string;
}

export class WorkerPolicy {
  readonly #config: ForkpoolConfig;
  readonly #allowed: AllowedEndpoint[];
  readonly #simulatorUrl: string | undefined;
  readonly #simulatorOnDemand: boolean;

  /**
   * `config`: the worker's own configuration (its file and environment), never a job's.
   * `simulatorUrl`: the worker's own built-in simulator, for jobs that ask for the simulated model;
   * `simulatorOnDemand`: there is none yet, but one starts for such a job (its URL then given to localSpec).
   */
  constructor(config: ForkpoolConfig, options: { simulatorUrl?: string | undefined; simulatorOnDemand?: boolean } = {}) {
    this.#config = config;
    this.#allowed = allowedEndpoints(config);
    this.#simulatorUrl = options.simulatorUrl;
    this.#simulatorOnDemand = options.simulatorOnDemand === true;
  }

  /** Endpoints jobs may name, as they must name them. */
  get endpoints(): string[] {
    return [...new Set(this.#allowed.map((e) => e.endpoint))];
  }

  /** Every secret in the worker's config (keys, the Redis URL, URLs with credentials and those credentials), for log redaction. */
  get secrets(): string[] {
    const { apiKey, redisUrl, baseUrl, agents, bullmq } = this.#config;
    const keys = [apiKey, ...Object.values(agents).map((a) => a.apiKey)];
    const urls = [baseUrl, ...Object.values(agents).map((a) => a.baseUrl), ...bullmq.allowedBaseUrls].filter(
      (u) => u !== undefined && credentialsOf(u).length > 0,
    );
    const values = [...keys, redisUrl, ...urls, ...[redisUrl, ...urls].flatMap((u) => (u === undefined ? [] : credentialsOf(u)))];
    return [...new Set(values.filter((v): v is string => v !== undefined && v.length > 0))];
  }

  /**
   * The spec this worker runs for a queued job: the job's own fields and request over the
   * worker's policy. Throws a JobError ENDPOINT_NOT_ALLOWED for an endpoint it does not allow.
   */
  localSpec(wire: WireSpec, simulatorUrl: string | undefined = this.#simulatorUrl): JobSpec {
    // Host tools stay with the process that has them: a remote job never offers one (refused at spawn too).
    const { request, hostTools: _hostTools, ...job } = wire;
    const own = this.#config;
    const endpoint = this.#endpointFor(wire.id, request.baseUrl, job.agent, request.simulator === true ? simulatorUrl : undefined);
    this.#checkNamedTools(wire);
    const { apiKey: _key, baseUrl: _url, redisUrl: _redis, agents: _agents, ...policy } = own;
    const config: ForkpoolConfig = {
      ...policy,
      model: request.model,
      // The wire is the job's: the producer chose its endpoint and model for it (a Claude model
      // on the anthropic wire); the key still goes only to the URL it belongs to.
      api: request.api ?? endpoint.api,
      temperature: request.temperature,
      maxIterations: request.maxIterations,
      requestTimeoutMs: request.requestTimeoutMs,
      firstByteTimeoutMs: request.firstByteTimeoutMs,
      maxTokens: request.maxTokens,
      ...(request.thinking ? { thinking: request.thinking } : {}),
      turnTimeoutMs: request.turnTimeoutMs,
      streamIdleTimeoutMs: request.streamIdleTimeoutMs,
      maxRetries: request.maxRetries,
      stream: request.stream,
      structuredOutput: request.structuredOutput,
      maxResponseChars: request.maxResponseChars,
      errorDetail: request.errorDetail,
      loopWarnAfter: request.loopWarnAfter,
      loopStopAfter: request.loopStopAfter,
      models: request.models,
      baseUrl: endpoint.url,
      ...(endpoint.apiKey !== undefined ? { apiKey: endpoint.apiKey } : {}),
      tools: both(request.tools, own.tools),
      grantedTools: both(request.grantedTools, own.grantedTools),
      toolLimits: tighter(request.toolLimits, own.toolLimits),
      background: {
        ...own.background,
        ...request.background,
        timeoutMinutes: Math.min(request.background.timeoutMinutes, own.background.timeoutMinutes),
        // No nested jobs here (the job tree, its ledger and delivery are the main process's): a
        // job at its own depth limit gets no spawn tool, so its model is never offered one that fails.
        maxDepth: job.depth ?? 1,
      },
      agents: job.agent !== undefined && request.agent ? { [job.agent]: this.#agent(request.agent) } : {},
      agentTools: [],
    };
    // zod types an absent optional field as `undefined`; parsed data has none (JSON has no undefined).
    return { ...(job as Omit<JobSpec, 'config'>), config };
  }

  /** The job's agent as the worker runs it: on the request's endpoint (the config's), its tools narrowed. */
  #agent(agent: NonNullable<JobRequest['agent']>): AgentConfig {
    // Its maxDepth would lift the job's depth limit above its own depth (see localSpec).
    const { maxDepth: _maxDepth, ...rest } = agent;
    return { ...rest, ...(agent.tools ? { tools: both(agent.tools, this.#config.tools) } : {}) };
  }

  /** A tool the job's spawn names must be one of the worker's own `tools` (its toolModules load only what its config lists). */
  #checkNamedTools(wire: WireSpec): void {
    const own = this.#config.tools;
    const missing = [...new Set([...(wire.tools ?? []), ...(wire.extras ?? [])])].filter((name) => !own.includes(name));
    if (missing.length === 0) return;
    throw new JobError(
      'TOOL_NOT_ALLOWED',
      wire.id,
      `the job names tool${missing.length > 1 ? 's' : ''} ${missing.map((name) => `"${name}"`).join(', ')}, which this worker's configuration does not offer ` +
        `(its tools: ${own.join(', ') || 'none'}); add ${missing.length > 1 ? 'them' : 'it'} to the worker's tools (a module tool: and its toolModules), or leave ${missing.length > 1 ? 'them' : 'it'} out of the spawn`,
    );
  }

  /** `simulatorUrl`: the worker's own simulator, for a job marked as on the producer's (undefined otherwise). */
  #endpointFor(jobId: string, endpoint: string, agent: string | undefined, simulatorUrl: string | undefined): AllowedEndpoint {
    const matches = this.#allowed.filter((e) => e.endpoint === endpoint);
    // Two of the worker's agents may share an endpoint with different keys: the job's agent's first.
    const found = matches.find((e) => agent !== undefined && e.agent === agent) ?? matches.find((e) => e.agent === undefined) ?? matches[0];
    if (found) return found;
    // The producer's simulator listens on its own loopback, which this worker may not share: the
    // same deterministic model, run here (issue 36: the README's keyless BullMQ example). A forged
    // job gains nothing by claiming it: no key is sent and nothing outside this process is called.
    if (simulatorUrl !== undefined) return { endpoint, url: simulatorUrl, api: this.#config.api };
    const allowed = this.endpoints;
    throw new JobError(
      'ENDPOINT_NOT_ALLOWED',
      jobId,
      `the job asks for model endpoint ${endpoint}, which this worker's configuration does not allow ` +
        `(allowed: ${allowed.length > 0 ? allowed.join(', ') : 'none'}${this.#simulatorUrl !== undefined || this.#simulatorOnDemand ? ', and jobs on a forkpool simulator' : ''}); set it as the worker's baseUrl, an agent's baseUrl or in bullmq.allowedBaseUrls`,
    );
  }
}

function allowedEndpoints(config: ForkpoolConfig): AllowedEndpoint[] {
  const out: AllowedEndpoint[] = [];
  const add = (url: string, api: ModelApi, apiKey: string | undefined, agent?: string) =>
    out.push({ endpoint: withoutCredentials(url), url, api, ...(apiKey !== undefined ? { apiKey } : {}), ...(agent !== undefined ? { agent } : {}) });
  if (config.baseUrl !== undefined || config.apiKey !== undefined) add(modelBaseUrl(config), config.api, config.apiKey);
  for (const name of Object.keys(config.agents)) {
    // The same rule as a local job's: the parent's key only on the parent's endpoint.
    const resolved = configForAgent(config, name);
    if (resolved.baseUrl !== undefined || resolved.apiKey !== undefined) add(modelBaseUrl(resolved), resolved.api, resolved.apiKey, name);
  }
  for (const url of config.bullmq.allowedBaseUrls) add(url, config.api, undefined);
  return out;
}

/** The entries of `wanted` that `allowed` has too (a job may give a tool up, never gain one). */
function both<T>(wanted: readonly T[], allowed: readonly T[]): T[] {
  return wanted.filter((item) => allowed.includes(item));
}

/** Each limit the smaller of the two. */
function tighter(wanted: ToolLimits, own: ToolLimits): ToolLimits {
  const out = { ...own };
  for (const key of Object.keys(own) as Array<keyof ToolLimits>) out[key] = Math.min(wanted[key], own[key]);
  return out;
}

/** The user name and password in a URL (decoded), if any. */
function credentialsOf(url: string): string[] {
  try {
    const parsed = new URL(url);
    return [parsed.username, parsed.password].filter((part) => part !== '').map((part) => decodeURIComponent(part));
  } catch {
    return [];
  }
}
