/**
 * The person's own jobs in the chat (`/bg start`, Ctrl+Enter): which agent each runs as
 * (agent-choice.ts: `--agent`, `background.defaultAgent`, or one question asked once on a
 * terminal), the one job that waits for that question's answer, and the start itself, whose
 * refusal is a transcript line. The controller (controller.ts) owns the transcript; this owns the
 * question.
 */
import type { AgentSession } from '../main/session/agent-session.js';
import { errorMessage } from '../shared/errors.js';
import { escapeForTerminal, oneLine } from '../main/views/terminal-lines.js';
import { AgentChoice, type AgentChoiceOptions } from './agent-choice.js';
import type { StartOptions } from './start-command.js';
import type { EntryKind } from './transcript.js';

export interface UserJobsOptions {
  session: Pick<AgentSession, 'startUserJobReady'>;
  choice: AgentChoiceOptions;
  /** Adds a line to the transcript. */
  say: (kind: EntryKind, text: string) => void;
  /** Live state changed (the question shows): redraw. */
  changed: () => void;
}

export class UserJobs {
  readonly #session: UserJobsOptions['session'];
  readonly #choice: AgentChoice;
  readonly #say: UserJobsOptions['say'];
  readonly #changed: () => void;
  /** A job of the person's waiting for the agent question's answer. */
  #waiting: { task: string; options: StartOptions } | undefined;

  constructor(options: UserJobsOptions) {
    this.#session = options.session;
    this.#choice = new AgentChoice(options.choice);
    this.#say = options.say;
    this.#changed = options.changed;
  }

  /** The one question "which agent do your jobs run as", while it waits for an answer. */
  get question(): string | undefined {
    return this.#waiting ? this.#choice.question() : undefined;
  }

  /** What the person's jobs run as now: see AgentChoice.current. */
  get agent(): string | null | undefined {
    return this.#choice.current;
  }

  /** Role `user`, its own usage bucket, not wave-gated; without its own agent, the choice decides (or asks first). */
  start(task: string, options: StartOptions = {}): void {
    if (options.agent === undefined) {
      if (this.#waiting) return this.#say('notice', 'answer the question first: which agent your jobs run as (a digit, or Esc)');
      const decision = this.#choice.decide();
      if (!decision.run) {
        this.#waiting = { task, options };
        return this.#changed();
      }
      if (decision.note) this.#say('notice', decision.note);
      if (decision.agent !== undefined) options = { ...options, agent: decision.agent };
    }
    this.#say('user', `› [background${options.agent ? ` ${options.agent}` : ''}] ${oneLine(task, 200)}`);
    const refused = (error: unknown) => this.#say('error', `could not start the job: ${oneLine(errorMessage(error), 300)}`);
    try {
      // A worktree job's repository is checked off the main thread first: that refusal is said once it is known.
      this.#session.startUserJobReady(task, undefined, options).catch(refused);
    } catch (error) {
      refused(error);
    }
  }

  /**
   * The agent question's answer: a digit (1: a fork of the parent, then the agents), kept for
   * the session, and the waiting job starts; `undefined` (Esc): that job is not started. A digit
   * that is no choice changes nothing.
   */
  answer(digit: number | undefined): void {
    const pending = this.#waiting;
    if (!pending) return;
    if (digit === undefined) {
      this.#waiting = undefined;
      return this.#say('notice', `not started: "${oneLine(pending.task, 60)}" (↑ recalls it; asked again next time)`);
    }
    const agent = this.#choice.answer(digit);
    if (agent === undefined) return;
    this.#waiting = undefined;
    this.#say(
      'notice',
      `your background jobs run as ${agent === null ? 'a fork of the parent' : `agent ${escapeForTerminal(agent)}`} for this session (/bg start --agent NAME for another)`,
    );
    this.start(pending.task, agent === null ? pending.options : { ...pending.options, agent });
  }

  /** Quit: the job that waits for the question is not started, and the question goes. */
  dropQuestion(): void {
    this.#waiting = undefined;
  }
}
