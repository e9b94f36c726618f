/**
 * The chat's slash commands. None of them starts a parent turn, so every one works while the
 * model is busy (the seed's busySafeCommands).
 */
import { errorMessage } from '../shared/errors.js';
import { escapeForTerminal, oneLine, usageLines } from '../main/views/terminal-lines.js';
import type { AgentSession } from '../main/session/agent-session.js';
import type { JobRecord } from '../main/ledger/job-record.js';
import { detailLines, listLines, usageText } from './jobs-view.js';
import type { EntryKind } from './transcript.js';
import { resumeCommand } from './resume-command.js';
import { SEND_HELP_LINES, sendCommand } from './send-command.js';
import { WAIT_HELP_LINE, waitCommand } from './wait-command.js';
import { APPROVE_HELP_LINES, approveCommand } from './approve-command.js';
import { RESTART_HELP_LINE, restartCommand } from './restart-command.js';
import { parseStart, type StartOptions } from './start-command.js';
export { parseStart } from './start-command.js';
import { WORKTREE_ACTIONS, type WorktreeAction } from '../main/jobs/worktrees.js';

/**
 * What the commands need of the chat: the part of its {@link ChatController} (controller.ts)
 * they use. The controller runs the commands, so they name this face, not the controller.
 */
export interface CommandHost {
  readonly session: AgentSession;
  now(): number;
  jobs(): Readonly<JobRecord>[];
  add(kind: EntryKind, text: string): void;
  togglePanel(): void;
  startUserJob(task: string, options?: StartOptions): void;
  /** What the person's jobs run as now: an agent, `null` a fork of the parent, `undefined` still to be asked. */
  userAgent(): string | null | undefined;
  /** A `/bg wait` begins: the signal Esc and quit abort, and `done` at its end. */
  beginWait(): { signal: AbortSignal; done(): void };
  cancelTurn(): boolean;
  quit(): Promise<unknown>;
}

export const HELP_LINES = [
  'Enter sends a prompt (a /command runs at once, even while the model is busy).',
  'Ctrl+Enter (or Ctrl+J) while the model is busy: start what is typed as a background job.',
  'Esc: cancel the current turn (background jobs keep running).  Ctrl+C: the same; when idle, quit.',
  'Up/Down: earlier inputs.  F3: the background panel (Up/Down or a click select, Enter or a second click detail, the wheel scrolls, Esc back).',
  '/bg list                 every job: id, status, elapsed, label',
  '/bg start [--agent NAME] [--tools a,b] [--model M] [--system "…"] [--worktree] <task>  start a background job yourself (role user, not wave-gated)',
  '/bg stop <id|name|all>   stop a job (or every live job)',
  "/bg show <id|name>       a job's detail and full result",
  RESTART_HELP_LINE,
  '/bg resume <id|name> <message>  continue an ended job from its conversation (a new job)',
  ...SEND_HELP_LINES,
  WAIT_HELP_LINE,
  ...APPROVE_HELP_LINES,
  "/bg worktree <id|name> merge|keep|drop   a worktree job's branch: merge it, keep it, or drop it",
  '/cancel                  cancel the current turn, as Esc does (background jobs keep running)',
  '/panel background        show or hide the background panel (F3)',
  '/agents                  the configured peer agents',
  '/cost                    tokens and cost by role and model',
  '/help  /quit',
];

export function runSlashCommand(chat: CommandHost, line: string): void {
  const [command = '', ...rest] = line.slice(1).trim().split(/\s+/);
  const args = rest.join(' ');
  chat.add('command', `› ${oneLine(line, 300)}`);
  const say = (text: string) => chat.add('command', text);
  try {
    switch (command.toLowerCase()) {
      case 'help':
      case '?':
        for (const text of HELP_LINES) say(text);
        return;
      case 'bg':
        return backgroundCommand(chat, rest[0]?.toLowerCase() ?? '', rest.slice(1).join(' '), say);
      case 'panel':
        if (args !== 'background' && args !== 'bg') return say('usage: /panel background (or F3)');
        return chat.togglePanel();
      case 'cancel':
        return void (chat.cancelTurn() || say('no turn is running'));
      case 'agents':
        return agentsCommand(chat, say);
      case 'cost':
        return costCommand(chat, say);
      case 'quit':
      case 'exit':
        void chat.quit();
        return;
      default:
        say(`unknown command /${escapeForTerminal(command)}; /help lists them`);
    }
  } catch (error) {
    chat.add('error', oneLine(errorMessage(error), 300));
  }
}

/**
 * `/bg wait`: runs until the jobs end, the timeout passes or Esc; a failure is an error line,
 * never a rejection. The chat knows its end through `beginWait` (line mode waits for it).
 */
function backgroundWait(chat: CommandHost, args: string, say: (text: string) => void): void {
  const wait = chat.beginWait();
  void waitCommand(chat.session.manager, args, say, wait.signal)
    .catch((error: unknown) => chat.add('error', oneLine(errorMessage(error), 300)))
    .finally(() => wait.done());
}

function backgroundCommand(chat: CommandHost, sub: string, args: string, say: (text: string) => void): void {
  const manager = chat.session.manager;
  switch (sub) {
    case '':
    case 'list':
      for (const text of listLines(chat.jobs(), chat.now())) say(text);
      return;
    case 'start': {
      const start = parseStart(args, Object.keys(chat.session.agent.config.agents));
      if ('problem' in start) return say(start.problem);
      const { task, ...options } = start;
      return chat.startUserJob(task, options);
    }
    case 'stop': {
      if (!args.trim()) return say('usage: /bg stop <id|name|all>');
      const targets =
        args.trim() === 'all'
          ? chat
              .jobs()
              .filter((j) => j.state !== 'ended' && j.parentJobId === undefined)
              .map((j) => j.id)
          : [args.trim()];
      if (targets.length === 0) return say('no live background job to stop');
      for (const target of targets) {
        const handle = manager.cancel(target);
        // A job of yours stopped by you starts no follow-up turn (turn-inputs.ts endingStartsFollowUp): say so.
        const yours = manager.get(handle.id)?.role === 'user' ? ' (no model turn for it: the model is given it at its next turn)' : '';
        say(handle.state === 'ended' ? `${handle.id} had already ended` : `stopping ${handle.id} "${oneLine(handle.label, 60)}"${yours}`);
      }
      return;
    }
    case 'show': {
      const job = args.trim() ? manager.find(args.trim()) : undefined;
      if (!job) return say(args.trim() ? `no background job with id or name "${oneLine(args, 60)}"` : 'usage: /bg show <id|name>');
      for (const text of detailLines(job, chat.session.activity.get(job.id), chat.now())) say(text);
      return;
    }
    case 'restart':
      return restartCommand(manager, args, say);
    case 'resume':
      return resumeCommand(chat.session, args, say);
    case 'send':
    case 'interrupt':
      return sendCommand(manager.parentControls, args, sub === 'interrupt', say);
    case 'wait':
      return backgroundWait(chat, args, say);
    case 'approve':
    case 'deny':
      return approveCommand(manager, args, sub === 'approve' ? 'allow' : 'deny', say);
    case 'worktree':
      // git runs in child processes, awaited: the answer is said when it is done.
      return void worktreeCommand(manager, args).then(say);
    default:
      say(
        `unknown /bg subcommand "${oneLine(sub, 40)}": list, start <task>, stop <id|name|all>, show <id|name>, restart <id|name>, resume <id|name> <message>, send|interrupt <id|name> <text>, wait [id|name…], approve <id|name> [always], deny <id|name> [reason], worktree <id|name> merge|keep|drop`,
      );
  }
}

/** `/bg worktree <id|name> merge|keep|drop` (src/main/jobs/worktrees.ts); a refusal is said, not thrown. */
async function worktreeCommand(manager: CommandHost['session']['manager'], args: string): Promise<string> {
  const [target, action] = args.trim().split(/\s+/);
  if (!target || !(WORKTREE_ACTIONS as readonly string[]).includes(action ?? '')) return 'usage: /bg worktree <id|name> merge|keep|drop';
  try {
    return oneLine(await manager.parentControls.worktreeAction(target, action as WorktreeAction), 400);
  } catch (error) {
    return oneLine(errorMessage(error), 400);
  }
}

function agentsCommand(chat: CommandHost, say: (text: string) => void): void {
  const { config } = chat.session.agent;
  const agents = Object.entries(config.agents);
  if (agents.length === 0) say('no peer agents configured: background jobs are forks of the parent (see docs/agents.md)');
  const live = chat.jobs().filter((j) => j.state !== 'ended');
  for (const [name, agent] of agents) {
    const running = live.filter((j) => j.agent === name).length;
    say(`${escapeForTerminal(name)}  model ${escapeForTerminal(agent.model ?? config.model)}  ${running} live  — ${oneLine(agent.description, 100)}`);
  }
  // The session's choice (--agent, the question's answer, else background.defaultAgent), not only the config's.
  const current = chat.userAgent();
  const runs =
    current === undefined ? 'the agent you pick when first asked' : current === null ? 'a fork of the parent' : `agent ${escapeForTerminal(current)}`;
  say(
    `/bg start and Ctrl+Enter run ${runs} (${current === undefined ? 'not chosen yet' : "this session's choice: --agent, your answer or background.defaultAgent"})`,
  );
}

function costCommand(chat: CommandHost, say: (text: string) => void): void {
  const usage = chat.session.agent.session.usage();
  say(usageText(usage, chat.session.agent.config));
  for (const text of usageLines(usage)) say(text);
}

/** `/bg start [--agent NAME] <task>`: the agent must be a configured one (else a line naming them), the task what follows. */
