import { oneLine } from '../main/views/terminal-lines.js';
import type { BackgroundManager } from '../main/jobs/manager.js';
import type { JobRecord } from '../main/ledger/ledger.js';

export const RESTART_HELP_LINE = '/bg restart <id|name>    run a job again from its task, same id (a running one is stopped first)';

/**
 * `/bg restart <id|name>`: the job runs again with the same spec under the same id
 * (BackgroundManager.restart, src/main/jobs/restarts.ts). A running job is stopped and re-queued,
 * an ended one re-queued (its undelivered result superseded), one asleep, paused for approvals
 * or waiting for its children re-queued (what it waited on dropped), a queued one left as it is. A
 * refusal (unknown, already being stopped, its spec no longer kept, its name taken) throws:
 * the chat shows it as an error line.
 */
export function restartCommand(manager: Pick<BackgroundManager, 'restart' | 'find'>, args: string, say: (text: string) => void): void {
  const target = args.trim();
  if (!target || /\s/.test(target)) return say('usage: /bg restart <id|name>');
  const before = manager.find(target);
  const handle = manager.restart(target);
  const label = `${handle.id} "${oneLine(handle.label, 60)}"`;
  if (before?.state === 'ended') return say(`restarted ${label}: queued to run again`);
  if (handle.state === 'running') return say(`restarting ${label}: stopping this run, then it runs again`);
  // Its record was replaced: it waited (asleep, paused, for its children) and was re-queued; else it was queued and left as it is.
  if (before && manager.find(target) !== before) return say(`restarted ${label}: it was ${waitedAs(before)}; queued to run again from its task`);
  say(`${label} is queued (it has not started, or goes on where it waited): nothing to restart`);
}

/** What a restarted job waited on, from its record before the restart. */
function waitedAs(record: Readonly<JobRecord>): string {
  if (record.sleepWait) return 'asleep (its wake dropped)';
  if (record.awaitingApproval) return 'paused for approvals (its calls answered as void)';
  return 'waiting for its children (they go on)';
}
