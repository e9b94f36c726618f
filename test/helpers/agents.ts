/**
 * Helpers for the agent tests (configured peers, the job-side tools, nested jobs): a config
 * with a catalog. The readers of the sim's request log are in requests.ts.
 */
import type { ForkpoolConfig, ForkpoolConfigInput } from '../../src/shared/config.js';
import type { SimServer } from '../../src/sim/index.js';
import { makeConfig } from './pool.js';

export const SCOUT_PROMPT = 'You are the scout: find where things are, quickly.';

/** {@link makeConfig} with a `scout` and a `reviewer` peer. */
export function agentConfig(
  sim: SimServer,
  workspaceRoot: string,
  extra: Partial<ForkpoolConfigInput> = {},
  background: NonNullable<ForkpoolConfigInput['background']> = {},
): ForkpoolConfig {
  const agents: ForkpoolConfigInput['agents'] = {
    scout: {
      description: 'Finds where things are; fast and cheap',
      model: 'scout-model',
      tools: ['find_files', 'grep', 'read_file'],
      budget: { maxTurns: 8 },
      systemPrompt: SCOUT_PROMPT,
    },
    reviewer: {
      description: 'Reviews a change for bugs',
      model: 'reviewer-model',
      systemPrompt: 'You are the reviewer. Only this prompt.',
      replaceSystemPrompt: true,
    },
  };
  return makeConfig(sim, workspaceRoot, background, { agents, ...extra });
}
