/**
 * System prompts and fixed synthetic strings. The simulator (src/sim) keys its behaviour on
 * the markers exported here, so both sides import them rather than repeat the text.
 */

export const PRIMARY_PROMPT_MARKER = 'You are the primary forkpool agent';
export const BACKGROUND_PROMPT_MARKER = 'You are a background research agent';
export const BACKGROUND_RESULTS_OPEN = '<background_results>';
export const BACKGROUND_RESULTS_CLOSE = '</background_results>';

/**
 * The marker line that opens a hidden automated message with background results, in the
 * `remy` delivery format (`delivery.format`): the message is forkpool's, never the person's.
 */
export const AUTOMATED_RESULTS_MARKER = '@@automated::background_results@@';

/**
 * The fixed prompts of an automatic follow-up turn, by what it delivers: results of agents the
 * parent started (its whole wave, or a result re-run or deferred), part of a wave (its join let the
 * follow-up come early, or a result is being re-run: what is still running is listed), results of
 * jobs a person started (`/bg start`, the HTTP API), or both. Exported so the repeated-prompt check
 * and the dispatch site can never drift apart.
 */
export const FOLLOW_UP_PROMPTS = {
  agents:
    'Background agents you started have finished; their results are in the block above. ' +
    "Continue with the user's request using them. Do not start the same research again.",
  partial:
    'Some of the background agents you started have finished; their results are in the block above, ' +
    'and the ones still running are listed: their results come in a later turn. ' +
    "Continue with the user's request using what you have; do not guess the missing results or start the same research again.",
  user:
    'Background jobs the user started have ended; their results are in the block above. ' + 'Tell the user what they found. Do not start the same work again.',
  mixed:
    'Background results have arrived, from agents you started and from jobs the user started; they are in the block above. ' +
    "Continue with the user's request using them, and tell the user what their jobs found. Do not start the same work again.",
} as const;

export type FollowUpPromptKind = keyof typeof FOLLOW_UP_PROMPTS;

/** The prompt of a follow-up that delivers the results of agents the parent started (a whole wave). */
export const BACKGROUND_FOLLOWUP_PROMPT = FOLLOW_UP_PROMPTS.agents;

/** True for forkpool's own follow-up prompts (never a person's words). */
export function isFollowUpPrompt(input: string): boolean {
  const text = input.trim();
  return Object.values(FOLLOW_UP_PROMPTS).some((prompt) => prompt === text);
}

/*
 * Both prompts are the start of every request's fixed prefix (issue 40): short, and with nothing
 * that differs between turns or between jobs of one agent (no ids, times, counters, summaries), so
 * a provider's prompt cache serves them. What is per job goes after them (orientationMessage).
 */

export function primarySystemPrompt(opts: { workspaceRoot: string; canSpawn: boolean; deliveryFormat?: 'forkpool' | 'remy' }): string {
  const lines = [
    `${PRIMARY_PROMPT_MARKER}, a coding and research assistant in the workspace ${opts.workspaceRoot}.`,
    'Look at real files before you answer; cite their paths.',
  ];
  if (opts.canSpawn) {
    lines.push(
      'For independent research questions, call spawn_background_agent once per question, all in one message: they run in parallel.',
      'Each result comes in a <background_results> block in a later turn; never guess one before it.',
    );
    if (opts.deliveryFormat === 'remy')
      lines.push(
        `A user message that opens with the line ${AUTOMATED_RESULTS_MARKER} is not from the user: forkpool sends it, ` +
          'with one <tool_result id="TOOL CALL ID" job_id="JOB ID" name="AGENT OR LABEL"> per finished background job ' +
          '(id: the call that started it, or its job id when no call did).',
      );
  }
  return lines.join('\n');
}

export function backgroundSystemPrompt(opts: { workspaceRoot: string }): string {
  return [
    `${BACKGROUND_PROMPT_MARKER} in the workspace ${opts.workspaceRoot}; the task below is all you know.`,
    'Look at the files, then answer with a concise summary citing paths. Nobody can answer your questions.',
    'Optionally end with <result status="ok|error|partial" files_touched="a,b"/>',
  ].join('\n');
}

/** A full_context job's orientation: a system message after the fixed prompt, so the prefix stays the same for every job. */
export function orientationMessage(parentSummary: string): string {
  return `Orientation from the agent that started you (a capped summary of its session):\n${parentSummary}`;
}
