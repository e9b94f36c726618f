/**
 * A job's SubagentStart and SubagentStop hooks (docs/tools.md "Hooks"), asked of the main thread
 * over the job's port; its tool hooks are in host-tools.ts. Asked only for the events its spec
 * says have hooks.
 */
import type { HookVerdict, JobHookEvent } from '../shared/hooks.js';
import type { JobSpec } from '../shared/protocol.js';
import type { LoopEvent } from '../shared/loop-events.js';
import type { HostToolLink } from './host-tools.js';

interface HookDeps {
  signal: AbortSignal;
  onEvent?: ((event: LoopEvent) => void) | undefined;
}

async function ask(event: JobHookEvent, spec: JobSpec, link: HostToolLink, deps: HookDeps, fields: Record<string, unknown>): Promise<HookVerdict | undefined> {
  if (!spec.hooks?.includes(event)) return undefined;
  const verdict = await link.hook(event, { agent_id: spec.id, agent_type: spec.agent ?? 'fork', ...fields }, deps.signal);
  for (const message of verdict.problems ?? []) deps.onEvent?.({ type: 'hook_error', event, message });
  return verdict;
}

/** The job's first message: its task, and any context a SubagentStart hook adds after it. */
export async function subagentStart(spec: JobSpec, link: HostToolLink, deps: HookDeps): Promise<string> {
  const verdict = await ask('SubagentStart', spec, link, deps, {});
  return verdict?.additionalContext !== undefined ? `${spec.task}\n\n[SubagentStart hook] ${verdict.additionalContext}` : spec.task;
}

/**
 * Asks SubagentStop about the job's final answer; the message for one more turn when a hook
 * rejects it. Once only: when a hook already sent it back (`stopHookActive`), the hooks still
 * see the answer but cannot reject it again.
 */
export async function subagentStop(spec: JobSpec, link: HostToolLink, deps: HookDeps, answer: string, stopHookActive: boolean): Promise<string | undefined> {
  const verdict = await ask('SubagentStop', spec, link, deps, { last_assistant_message: answer, stop_hook_active: stopHookActive });
  if (verdict?.block === undefined || stopHookActive) return undefined;
  return `[SubagentStop hook] Your answer was not accepted: ${verdict.block}\nAddress this, then give your final answer again.`;
}
