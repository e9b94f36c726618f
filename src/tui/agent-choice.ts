/**
 * Which agent a job of the person's own runs as (`/bg start` without `--agent`, Ctrl+Enter), the
 * seed's order: `forkpool chat --agent NAME`, else `background.defaultAgent`, else one question
 * asked once on a terminal (the answer holds for the session), else a fork of the parent. Without
 * a terminal nothing can be asked (stdin is the command stream): a fork of the parent, said once.
 */
import { escapeForTerminal } from '../main/views/terminal-lines.js';

/** Choices by digit (1 is the fork): nine keys, so at most eight agents are offered. */
const MAX_OFFERED = 8;

export interface AgentChoiceOptions {
  /** The configured agents (config `agents`), in config order. */
  agents: readonly string[];
  /** `--agent NAME`: already checked to be a configured one. */
  flag?: string | undefined;
  /** `background.defaultAgent`. */
  configured?: string | undefined;
  /** A terminal: the question can be asked. */
  canAsk: boolean;
}

/** What a job without its own agent does now: run (as `agent`, or a fork when undefined), or wait for the question. */
export type AgentDecision = { run: true; agent?: string; note?: string } | { run: false };

export class AgentChoice {
  readonly #options: AgentChoiceOptions;
  /** Set once decided: the agent, or `null` for a fork of the parent. */
  #decided: string | null | undefined;
  #noted = false;

  constructor(options: AgentChoiceOptions) {
    this.#options = options;
    const fixed = options.flag ?? options.configured;
    if (fixed !== undefined) this.#decided = fixed;
    else if (options.agents.length === 0) this.#decided = null;
  }

  /** What the person's jobs run as now: the agent, `null` a fork of the parent, `undefined` not decided yet (asked at the first job). */
  get current(): string | null | undefined {
    return this.#decided;
  }

  /** For a new job of the person's: run now, or ask first (`run: false`). */
  decide(): AgentDecision {
    if (this.#decided !== undefined) return this.#decided === null ? { run: true } : { run: true, agent: this.#decided };
    if (this.#options.canAsk) return { run: false };
    const note = this.#noted
      ? undefined
      : `no --agent and no background.defaultAgent: your jobs run as a fork of the parent (configured agents: ${this.#options.agents.map(escapeForTerminal).join(', ')}; /bg start --agent NAME picks one)`;
    this.#noted = true;
    return note === undefined ? { run: true } : { run: true, note };
  }

  /** The question's choices, by digit from 1: a fork of the parent first, then the agents. */
  choices(): string[] {
    return ['a fork of the parent', ...this.#options.agents.slice(0, MAX_OFFERED).map((name) => `agent ${escapeForTerminal(name)}`)];
  }

  /** The question's one line. */
  question(): string {
    const more = this.#options.agents.length > MAX_OFFERED ? ' (others: /bg start --agent NAME)' : '';
    const listed = this.choices()
      .map((choice, i) => `[${i + 1}] ${choice}`)
      .join(' · ');
    return `Run your background jobs as: ${listed}${more}  (asked once; Esc: not now)`;
  }

  /** The answer by digit (1-based); out of range is undefined and changes nothing. Returns the agent (or null: a fork). */
  answer(digit: number): string | null | undefined {
    if (!Number.isInteger(digit) || digit < 1 || digit > this.choices().length) return undefined;
    this.#decided = digit === 1 ? null : (this.#options.agents[digit - 2] ?? null);
    return this.#decided;
  }
}
