import type { AgentConfig, ForkpoolConfig } from './config.js';
import { ForkpoolError } from './errors.js';

/**
 * Configured peer agents (core-agent's catalog), resolved the same way on both sides of the
 * thread boundary: the main thread checks a name before it queues a job, the worker builds
 * the job's loop from its spec alone (the spec carries the whole config and the agent's name).
 */

/** The agent's entry, or AGENT_UNKNOWN naming the ones that exist. */
export function agentEntry(config: ForkpoolConfig, name: string): AgentConfig {
  const agent = Object.hasOwn(config.agents, name) ? config.agents[name] : undefined;
  if (!agent) {
    const known = Object.keys(config.agents);
    throw new ForkpoolError(
      'AGENT_UNKNOWN',
      `no agent named "${name}"; ${known.length > 0 ? `configured agents: ${known.join(', ')}` : 'no agents are configured'}`,
    );
  }
  return agent;
}

/**
 * The config a job of agent `name` runs with: the agent's model, endpoint, tools and
 * temperature over the parent's (its limits are its budget: see resolveJobBudget). The parent's key goes only to the parent's own endpoint: a peer on
 * another endpoint without a key of its own gets none, so a key never reaches a host it was
 * not meant for.
 */
export function configForAgent(config: ForkpoolConfig, name: string | undefined): ForkpoolConfig {
  if (name === undefined) return config;
  const agent = agentEntry(config, name);
  const api = agent.api ?? config.api;
  // Another wire is another provider even at an unset baseUrl (OpenAI's vs Anthropic's default).
  const sameEndpoint = (agent.baseUrl === undefined || agent.baseUrl === config.baseUrl) && api === config.api;
  const { apiKey: _parentKey, baseUrl: _parentUrl, ...rest } = config;
  const baseUrl = agent.baseUrl ?? config.baseUrl;
  const apiKey = agent.apiKey ?? (sameEndpoint ? config.apiKey : undefined);
  return {
    ...rest,
    api,
    ...(baseUrl !== undefined ? { baseUrl } : {}),
    ...(apiKey !== undefined ? { apiKey } : {}),
    model: agent.model ?? config.model,
    tools: agent.tools ?? config.tools,
    // Its own modules beside the config's: a job of it imports both.
    toolModules: agent.toolModules ? [...new Set([...config.toolModules, ...agent.toolModules])] : config.toolModules,
    temperature: agent.temperature ?? config.temperature,
    maxTokens: agent.maxTokens ?? config.maxTokens,
    ...((agent.thinking ?? config.thinking) ? { thinking: agent.thinking ?? config.thinking } : {}),
    turnTimeoutMs: agent.turnTimeoutMs ?? config.turnTimeoutMs,
  };
}

/** The baseline background prompt with the agent's own appended, or replaced when it says so. */
export function agentSystemPrompt(baseline: string, config: ForkpoolConfig, name: string | undefined): string {
  if (name === undefined) return baseline;
  const agent = agentEntry(config, name);
  if (!agent.systemPrompt) return baseline;
  return agent.replaceSystemPrompt ? agent.systemPrompt : `${baseline}\n\n${agent.systemPrompt}`;
}

/** How deep a job of agent `name` (or a fork) may nest: the agent's own bound, else the session's. */
export function maxDepthFor(config: ForkpoolConfig, name: string | undefined): number {
  const own = name !== undefined && Object.hasOwn(config.agents, name) ? config.agents[name]?.maxDepth : undefined;
  return own ?? config.background.maxDepth;
}
