import { oneLine } from '../main/views/terminal-lines.js';
import type { WorkspaceMode } from '../main/jobs/worktrees.js';

/** What `/bg start` may set on the job besides its task: the spawn's own spec (docs/agents.md "A spawn's own spec"). */
export interface StartOptions {
  agent?: string;
  tools?: string[];
  model?: string;
  systemPrompt?: string;
  workspace?: WorkspaceMode;
}

const USAGE = 'usage: /bg start [--agent NAME] [--tools a,b] [--model M] [--system "…"] [--worktree] <task>';

/** The leading options, in any order; the rest of the line is the task. */
const OPTIONS: Array<[RegExp, (value: string, into: StartOptions) => void]> = [
  [/^--agent(?:=|\s+)(\S+)/, (v, o) => (o.agent = v)],
  [/^--tools(?:=|\s+)(\S+)/, (v, o) => (o.tools = v.split(',').filter(Boolean))],
  [/^--model(?:=|\s+)(\S+)/, (v, o) => (o.model = v)],
  [/^--system(?:=|\s+)"((?:[^"\\]|\\.)*)"/, (v, o) => (o.systemPrompt = v.replace(/\\(.)/g, '$1'))],
  [/^--worktree\b()/, (_v, o) => (o.workspace = 'worktree')],
];

/**
 * `/bg start` arguments: the options, then the task. An unknown agent is named with the
 * configured ones; the tools, model and prompt are checked by the manager when the job is
 * booked (a refusal says which and why, and nothing starts).
 */
export function parseStart(args: string, agents: readonly string[]): ({ task: string } & StartOptions) | { problem: string } {
  let rest = args.trim();
  const options: StartOptions = {};
  for (let matched = true; matched;) {
    matched = false;
    for (const [pattern, apply] of OPTIONS) {
      const match = pattern.exec(rest);
      if (!match) continue;
      apply(match[1] ?? '', options);
      rest = rest.slice(match[0].length).trimStart();
      matched = true;
    }
  }
  if (options.agent !== undefined && !agents.includes(options.agent))
    return {
      problem: `no agent "${oneLine(options.agent, 40)}": ${agents.length ? `the configured ones are ${agents.join(', ')}` : 'none is configured (see docs/agents.md)'}`,
    };
  if (!rest) return { problem: USAGE };
  return { task: rest, ...options };
}
