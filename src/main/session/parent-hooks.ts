/**
 * The parent's own hook events (docs/tools.md "Hooks"): UserPromptSubmit before a person's
 * prompt reaches the model, Stop when the parent would end its turn. Its tool hooks run in the
 * tool loop (HookRunner.toolHooks).
 */
import type { LoopEvent } from '../../shared/loop-events.js';
import type { HookRunner } from '../hooks/hook-runner.js';

type Report = (event: LoopEvent) => void;

/** The prompt as the model gets it (with any hook's context), or the reason a hook blocked it. */
export async function promptSubmit(
  hooks: HookRunner | undefined,
  prompt: string,
  signal: AbortSignal,
  report: Report,
): Promise<{ input: string } | { blocked: string }> {
  if (!hooks?.has('UserPromptSubmit')) return { input: prompt };
  const verdict = await hooks.run('UserPromptSubmit', { prompt }, signal);
  for (const message of verdict.problems ?? []) report({ type: 'hook_error', event: 'UserPromptSubmit', message });
  if (verdict.block !== undefined) return { blocked: verdict.block };
  return { input: verdict.additionalContext !== undefined ? `${prompt}\n\n[UserPromptSubmit hook] ${verdict.additionalContext}` : prompt };
}

/**
 * Asks Stop about the parent's answer: the message for one more run of the loop when a hook
 * sends it back. Once per turn: with `stopHookActive` the hooks see the answer but cannot
 * send it back again.
 */
export async function stopCheck(
  hooks: HookRunner | undefined,
  answer: string,
  stopHookActive: boolean,
  signal: AbortSignal,
  report: Report,
): Promise<string | undefined> {
  if (!hooks?.has('Stop')) return undefined;
  const verdict = await hooks.run('Stop', { last_assistant_message: answer, stop_hook_active: stopHookActive }, signal);
  for (const message of verdict.problems ?? []) report({ type: 'hook_error', event: 'Stop', message });
  if (verdict.block === undefined || stopHookActive) return undefined;
  return `[Stop hook] Do not stop yet: ${verdict.block}`;
}
