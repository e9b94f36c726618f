import { oneLine } from '../main/views/terminal-lines.js';
import type { AgentSession } from '../main/session/agent-session.js';

export const RESUME_USAGE = 'usage: /bg resume <id|name> <message>';

/**
 * `/bg resume <id|name> <message>`: an ended job goes on from its kept conversation with the
 * message, as a new job a person started (role user, not wave-gated; see src/main/jobs/resumes.ts).
 * A refusal (unknown, not ended, conversation not kept) throws: the chat shows it as an error line.
 */
export function resumeCommand(session: AgentSession, args: string, say: (text: string) => void): void {
  const match = /^(\S+)\s+([\s\S]+)$/.exec(args.trim());
  if (!match) return say(RESUME_USAGE);
  const [, target = '', message = ''] = match;
  const handle = session.manager.parentControls.resume(target, message, { role: 'user', wave: null });
  say(`resumed ${oneLine(target, 60)} as ${handle.id} "${oneLine(handle.label, 60)}"`);
}
