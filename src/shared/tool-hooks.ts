/**
 * The tool loop's hook steps (docs/tools.md "Hooks"), kept apart from tool-loop.ts: PreToolUse
 * before the arguments are validated and before the permission check, PostToolUse after a tool
 * ran. Whatever a hook adds to the model's view is collected in {@link HookNotes}.
 */
import { ToolError } from './errors.js';
import type { HookVerdict, ToolHooks } from './hooks.js';

/** What the hooks of one call left for the loop: text for the model, problems to report, the input the tool ran with. */
export interface HookNotes {
  context: string[];
  problems: Array<{ event: string; text: string }>;
  input?: unknown;
}

/** Runs PreToolUse: a block is a tool error carrying the hook's reason; `updatedInput` replaces the arguments. */
export async function beforeToolHook(
  hooks: ToolHooks | undefined,
  call: { name: string; callId: string; input: unknown },
  signal: AbortSignal,
  notes: HookNotes,
): Promise<unknown> {
  if (!hooks?.preToolUse) return call.input;
  const verdict = await hooks.preToolUse(call, signal);
  note('PreToolUse', verdict, notes);
  if (verdict.block !== undefined) throw new ToolError('HOOK_BLOCKED', call.name, `blocked by a PreToolUse hook: ${verdict.block}`);
  return verdict.updatedInput !== undefined ? verdict.updatedInput : call.input;
}

/** Runs PostToolUse on a call that ran: a block's reason and any context are added to what the model reads. */
export async function afterToolHook(
  hooks: ToolHooks | undefined,
  call: { name: string; callId: string; input: unknown; response: string },
  signal: AbortSignal,
  notes: HookNotes,
): Promise<void> {
  if (!hooks?.postToolUse) return;
  const verdict = await hooks.postToolUse(call, signal);
  note('PostToolUse', verdict, notes);
  if (verdict.block !== undefined) notes.context.push(`[PostToolUse hook] ${verdict.block}`);
}

function note(event: string, verdict: HookVerdict, notes: HookNotes): void {
  if (verdict.additionalContext !== undefined) notes.context.push(`[${event} hook] ${verdict.additionalContext}`);
  for (const text of verdict.problems ?? []) notes.problems.push({ event, text });
}
