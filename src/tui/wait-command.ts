import { WAIT_LIMITS } from '../shared/fixed-limits.js';
import { errorMessage } from '../shared/errors.js';
import { jobLine, oneLine } from '../main/views/terminal-lines.js';
import type { BackgroundManager } from '../main/jobs/manager.js';
import type { WaitMode } from '../main/jobs/waits.js';

export const WAIT_HELP_LINE = `/bg wait [id|name…] [--timeout S] [--any]  wait until they end (default every live job; all of them, or the first; at most S s, default ${WAIT_LIMITS.chatDefaultMs / 1000}; Esc stops)`;
const USAGE = 'usage: /bg wait [id|name…] [--timeout SECONDS] [--any]';

/** What `/bg wait`'s arguments ask for, or the line that says what is wrong. */
export function parseWait(args: string): { jobs: string[]; timeoutMs: number; mode: WaitMode } | { problem: string } {
  const words = args.trim().split(/\s+/).filter(Boolean);
  const jobs: string[] = [];
  let timeoutMs: number = WAIT_LIMITS.chatDefaultMs;
  let mode: WaitMode = 'all';
  for (let i = 0; i < words.length; i++) {
    const word = words[i] as string;
    if (word === '--any') mode = 'any';
    else if (word === '--timeout' || word.startsWith('--timeout=')) {
      const value = word === '--timeout' ? words[++i] : word.slice('--timeout='.length);
      const secondsGiven = Number(value);
      const maxS = WAIT_LIMITS.maxTimeoutMs / 1000;
      if (value === undefined || value === '' || !Number.isFinite(secondsGiven) || secondsGiven < 0 || secondsGiven > maxS)
        return { problem: `--timeout: expected seconds from 0 to ${maxS}, received ${oneLine(value ?? 'nothing', 40)}` };
      timeoutMs = Math.round(secondsGiven * 1000);
    } else if (word.startsWith('--')) return { problem: `unknown option ${oneLine(word, 40)}; ${USAGE}` };
    else jobs.push(word);
  }
  return { jobs, timeoutMs, mode };
}

/**
 * `/bg wait`: waits for jobs (ParentControls.wait) and says what ended and what still runs.
 * It is the person's view, not the model's: nothing is marked delivered, and the parent still
 * gets each result at its next turn. An unknown job is said at once and nothing waits; `signal`
 * (Esc, quit) ends the wait.
 */
export async function waitCommand(
  manager: Pick<BackgroundManager, 'parentControls' | 'jobs' | 'find'>,
  args: string,
  say: (text: string) => void,
  signal: AbortSignal,
): Promise<void> {
  const asked = parseWait(args);
  if ('problem' in asked) return say(asked.problem);
  const jobs = asked.jobs.length > 0 ? asked.jobs : manager.jobs().flatMap((job) => (job.state !== 'ended' && job.parentJobId === undefined ? [job.id] : []));
  if (jobs.length === 0) return say('no live background job to wait for');
  const unknown = jobs.filter((name) => manager.find(name) === undefined);
  if (unknown.length > 0) return say(`no background job with id or name ${unknown.map((name) => `"${oneLine(name, 60)}"`).join(', ')}; nothing to wait for`);
  const until = asked.mode === 'any' ? 'the first of them ends' : 'they end';
  say(`waiting for ${jobs.length} job${jobs.length === 1 ? '' : 's'} until ${until} (at most ${asked.timeoutMs / 1000}s; Esc stops waiting)…`);
  let outcome;
  try {
    outcome = await manager.parentControls.wait(jobs, { timeoutMs: asked.timeoutMs, mode: asked.mode, signal });
  } catch (error) {
    return say(signal.aborted ? 'stopped waiting (the jobs go on)' : oneLine(errorMessage(error), 300));
  }
  const why = outcome.timedOut ? ' (the timeout passed)' : '';
  say(`waited ${(outcome.waitedMs / 1000).toFixed(1)}s: ${outcome.ended.length} ended, ${outcome.running.length} still running${why}`);
  for (const job of outcome.ended) say(`  ${jobLine(job)}${job.deliveredInTurn === undefined ? '' : ` (delivered in turn ${job.deliveredInTurn})`}`);
  for (const job of outcome.running) say(`  … ${job.id} "${oneLine(job.label, 60)}" ${job.state}`);
}
