/**
 * Helpers for the agent tests (configured peers, the job-side tools, nested jobs): a config
 * with a catalog, and readers of the sim's request log.
 */
import { parseConfig, type ForkpoolConfig, type ForkpoolConfigInput } from '../../src/shared/config.js';
import type { RecordedRequest, SimServer } from '../../src/sim/index.js';

export const SCOUT_PROMPT = 'You are the scout: find where things are, quickly.';

/** A config pointed at the sim with a `scout` and a `reviewer` peer. */
export function agentConfig(sim: SimServer, workspaceRoot: string, extra: Partial<ForkpoolConfigInput> = {}, background: NonNullable<ForkpoolConfigInput['background']> = {}): ForkpoolConfig {
  return parseConfig({
    workspaceRoot,
    apiKey: 'test-key',
    baseUrl: sim.url,
    maxRetries: 0,
    agents: {
      scout: { description: 'Finds where things are; fast and cheap', model: 'scout-model', tools: ['find_files', 'grep', 'read_file'], maxIterations: 8, systemPrompt: SCOUT_PROMPT },
      reviewer: { description: 'Reviews a change for bugs', model: 'reviewer-model', systemPrompt: 'You are the reviewer. Only this prompt.', replaceSystemPrompt: true },
    },
    ...extra,
    background: { cancelGraceMs: 200, closeTimeoutMs: 5_000, ...background },
  });
}

type Message = { role: string; content: unknown; tool_calls?: Array<{ function: { name: string; arguments: string } }> };

export function messagesOf(request: RecordedRequest): Message[] {
  return request.body.messages as Message[];
}

export function systemOf(request: RecordedRequest): string {
  const first = messagesOf(request)[0];
  return first?.role === 'system' && typeof first.content === 'string' ? first.content : '';
}

export function toolNames(request: RecordedRequest): string[] {
  return ((request.body.tools ?? []) as Array<{ function: { name: string } }>).map((t) => t.function.name);
}

export function toolSchema(request: RecordedRequest, name: string): any {
  return ((request.body.tools ?? []) as Array<{ function: { name: string; parameters: unknown } }>).find((t) => t.function.name === name)?.function.parameters;
}

/** Requests whose first user message is exactly `task` (a job's own conversation). */
export function requestsForTask(sim: SimServer, task: string): RecordedRequest[] {
  return sim.requests.filter((r) => messagesOf(r).find((m) => m.role === 'user')?.content === task);
}

/** Tool results (role `tool`) in a request, in order. */
export function toolResults(request: RecordedRequest): string[] {
  return messagesOf(request)
    .filter((m) => m.role === 'tool')
    .map((m) => String(m.content));
}
