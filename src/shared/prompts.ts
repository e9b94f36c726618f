/**
 * System prompts and fixed synthetic strings. The simulator (src/sim) keys its behaviour on
 * the markers exported here, so both sides import them rather than repeat the text.
 */

export const PRIMARY_PROMPT_MARKER = 'You are the primary forkpool agent';
export const BACKGROUND_PROMPT_MARKER = 'You are a background research agent';
export const BACKGROUND_RESULTS_OPEN = '<background_results>';
export const BACKGROUND_RESULTS_CLOSE = '</background_results>';

/**
 * The fixed prompt of an automatic follow-up turn, submitted when a wave of background jobs
 * ends. Exported so the repeated-prompt check and the dispatch site can never drift apart.
 */
export const BACKGROUND_FOLLOWUP_PROMPT =
  'Background agents you started have finished; their results are in the block above. ' +
  "Continue with the user's request using them. Do not start the same research again.";

export function primarySystemPrompt(opts: { workspaceRoot: string; canSpawn: boolean }): string {
  const lines = [
    `${PRIMARY_PROMPT_MARKER}, a coding and research assistant working in the workspace ${opts.workspaceRoot}.`,
    'Use the tools to look at real files before you answer; cite the paths you used.',
  ];
  if (opts.canSpawn) {
    lines.push(
      'For independent, self-contained research questions, call spawn_background_agent once per question, ' +
        'all in one message, so they run in parallel without using your context.',
      'A background agent does not see this conversation: put everything it needs in its task.',
      'You are told when each one finishes, in a <background_results> block at the start of a later turn. ' +
        'Never guess or fabricate a background result before that block arrives.',
    );
  }
  return lines.join('\n');
}

export function backgroundSystemPrompt(opts: { workspaceRoot: string; parentSummary?: string }): string {
  const lines = [
    `${BACKGROUND_PROMPT_MARKER}. You run one scoped, self-contained research job in the workspace ${opts.workspaceRoot}.`,
    'You know nothing of the conversation that started you: the task below is all you have.',
    'Read files, grep and find files as needed, then answer with a concise, distilled summary that cites paths.',
    'Nobody can answer questions from you, and tools that need a permission you were not granted will be denied.',
    'Optionally end your answer with one machine-readable line: ' + '<result status="ok|error|partial" files_touched="path1,path2"/>',
  ];
  if (opts.parentSummary) {
    lines.push('', 'Orientation from the agent that started you (a capped summary of its session):', opts.parentSummary);
  }
  return lines.join('\n');
}
